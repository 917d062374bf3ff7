// SPDX-License-Identifier: MIT
// Parts of the GPU host API that need no CUDA: shared by the CUDA build and
// the build without CUDA (gpu_verifier_without_cuda.cpp).
#include <charconv>

#include "kernels/gpu_verifier.hpp"
#include "shm_protocol/info_message.hpp"

namespace sigverify::gpu {

namespace {

// One entry of a CMAKE_CUDA_ARCHITECTURES list: NUM, an optional a/f
// suffix, then -real (machine code), -virtual (PTX) or neither (both).
struct Arch {
    int number = 0;      // 86 for "86-real"
    char suffix = 0;     // 'a' (this exact GPU only), 'f' (its family), 0
    bool real = false;   // machine code
    bool ptx = false;    // PTX
};

bool parse_arch(std::string_view item, Arch& out) {
    int n = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (ec != std::errc() || n < 10) return false;
    std::string_view rest = item.substr(std::size_t(end - item.data()));
    out = Arch{};
    out.number = n;
    if (!rest.empty() && (rest.front() == 'a' || rest.front() == 'f')) {
        out.suffix = rest.front();
        rest.remove_prefix(1);
    }
    if (rest.empty()) out.real = out.ptx = true;
    else if (rest == "-real") out.real = true;
    else if (rest == "-virtual") out.ptx = true;
    else return false;
    return true;
}

// Calls f(item) for each comma-separated item.
template <class F>
void for_each_item(std::string_view list, F&& f) {
    std::size_t pos = 0;
    while (pos < list.size()) {
        const std::size_t comma = list.find(',', pos);
        const std::size_t stop = comma == std::string_view::npos ? list.size() : comma;
        if (stop > pos) f(list.substr(pos, stop - pos));
        pos = stop + 1;
    }
}

}  // namespace

std::string_view built_architectures() {
#if defined(SIGVERIFY_CUDA_ARCHITECTURES)
    return SIGVERIFY_CUDA_ARCHITECTURES;
#else
    return {};
#endif
}

std::string architectures_text(std::string_view architectures) {
    std::string out;
    const auto add = [&out](const std::string& word) { out += (out.empty() ? "" : " ") + word; };
    for_each_item(architectures, [&](std::string_view item) {
        Arch a;
        if (!parse_arch(item, a)) {
            add(std::string(item));
            return;
        }
        const std::string number = std::to_string(a.number) + (a.suffix ? std::string(1, a.suffix) : "");
        if (a.real) add("sm_" + number);
        if (a.ptx) add("compute_" + number + " (PTX)");
    });
    return out.empty() ? std::string("nothing (built without CUDA)") : out;
}

ImageFit kernel_image_for(int cc_major, int cc_minor, std::string_view architectures) {
    const int device = cc_major * 10 + cc_minor;
    bool unknown = false, jit = false, code = false;
    for_each_item(architectures, [&](std::string_view item) {
        Arch a;
        if (!parse_arch(item, a)) {
            unknown = true;
            return;
        }
        // 'a' images run on that exact GPU only; the others on the GPUs of
        // the same major version from their minor on (sm_80 on an sm_86).
        const bool exact = a.number == device;
        if (a.real && (a.suffix == 'a' ? exact : a.number / 10 == cc_major && a.number % 10 <= cc_minor)) code = true;
        // PTX is compiled by the driver for any later GPU.
        if (a.ptx && (a.suffix == 'a' ? exact : a.number <= device)) jit = true;
    });
    if (code) return ImageFit::machine_code;
    if (jit) return ImageFit::ptx_jit;
    return unknown ? ImageFit::unknown : ImageFit::none;
}

std::string no_kernel_image_message(const DeviceInfo& device, std::string_view architectures) {
    const std::string sm = "sm_" + std::to_string(device.cc_major) + std::to_string(device.cc_minor);
    std::string m = shm::kNoKernelImage + sm + " in this build (GPU " + std::to_string(device.index) + ", " +
                    device.name + "; the build carries " + architectures_text(architectures) + ")";
    if (device.cc_major * 10 + device.cc_minor < 75)
        return m + "; CUDA 13 builds for sm_75 (Turing) and later only: this GPU cannot run the kernel, the CPU verifies";
    return m + "; rebuild for every supported GPU: " + shm::kRebuildForEveryGpu +
           " (this GPU alone: -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(device.cc_major) +
           std::to_string(device.cc_minor) + "-real); the CPU verifies until then";
}

Code classify_cuda_error(int cuda_error) {
    return cuda_error == kCudaErrorInvalidDeviceFunction || cuda_error == kCudaErrorNoKernelImageForDevice
               ? Code::no_kernel_image
               : Code::cuda_error;
}

std::string_view to_string(Code code) {
    switch (code) {
    case Code::ok: return "ok";
    case Code::not_built: return "not_built";
    case Code::no_device: return "no_device";
    case Code::cuda_error: return "cuda_error";
    case Code::bad_input: return "bad_input";
    case Code::self_test_failed: return "self_test_failed";
    case Code::no_kernel_image: return "no_kernel_image";
    case Code::timeout: return "timeout";
    }
    return "?";
}

bool select_devices(std::string_view spec, const std::vector<DeviceInfo>& available,
                    std::vector<int>& chosen, std::string& error) {
    chosen.clear();
    error.clear();
    if (spec.empty() || spec == "all") {
        for (const auto& d : available) chosen.push_back(d.index);
        if (chosen.empty()) error = "no GPU available";
        return !chosen.empty();
    }
    std::size_t pos = 0;
    while (pos <= spec.size()) {
        const std::size_t comma = spec.find(',', pos);
        const std::string_view item =
            spec.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
        int idx = -1;
        const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), idx);
        if (item.empty() || ec != std::errc() || end != item.data() + item.size() || idx < 0) {
            error = "bad GPU index '" + std::string(item) + "' in '" + std::string(spec) + "'";
            chosen.clear();
            return false;
        }
        bool present = false;
        for (const auto& d : available) present |= d.index == idx;
        if (!present) {
            error = "GPU " + std::to_string(idx) + " not present (" + std::to_string(available.size()) +
                    " found)";
            chosen.clear();
            return false;
        }
        bool dup = false;
        for (int c : chosen) dup |= c == idx;
        if (!dup) chosen.push_back(idx);
        if (comma == std::string_view::npos) break;
        pos = comma + 1;
    }
    return true;
}

}  // namespace sigverify::gpu
