// SPDX-License-Identifier: MIT
// Parts of the GPU host API that need no CUDA: shared by the CUDA build and
// the build without CUDA (gpu_verifier_without_cuda.cpp).
#include <charconv>

#include "kernels/gpu_verifier.hpp"

namespace sigverify::gpu {

std::string_view to_string(Code code) {
    switch (code) {
    case Code::ok: return "ok";
    case Code::not_built: return "not_built";
    case Code::no_device: return "no_device";
    case Code::cuda_error: return "cuda_error";
    case Code::bad_input: return "bad_input";
    case Code::self_test_failed: return "self_test_failed";
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
