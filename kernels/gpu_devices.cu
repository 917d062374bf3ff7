// SPDX-License-Identifier: MIT
// The CUDA side of the GPU host API that is not the kernel: discovery of the
// devices, the client memory pinned for them (pin_host_memory), the record of
// hung devices and the CUDA error wrapping (gpu_cuda_support.hpp). Host code
// only; gpu_verifier.cu holds the kernel and the pipeline that feeds it.
#include <atomic>
#include <string>

#include "kernels/gpu_cuda_support.hpp"

namespace sigverify::gpu {

namespace cuda_support {

static_assert(int(cudaErrorInvalidDeviceFunction) == kCudaErrorInvalidDeviceFunction &&
                  int(cudaErrorNoKernelImageForDevice) == kCudaErrorNoKernelImageForDevice,
              "classify_cuda_error's numbers are the runtime's");

Status cuda_status(cudaError_t e, const char* what) {
    return Status{classify_cuda_error(int(e)), std::string(what) + ": " + cudaGetErrorName(e) + " (" +
                                                   cudaGetErrorString(e) + ")"};
}

namespace {
constexpr int kMaxDevices = 64;
std::atomic<bool> g_hung[kMaxDevices];
std::atomic<bool> g_any_hung{false};
}  // namespace

bool device_hung(int index) { return index >= 0 && index < kMaxDevices && g_hung[index].load(); }
void mark_hung(int index) {
    if (index >= 0 && index < kMaxDevices) g_hung[index].store(true);
    g_any_hung.store(true);
}
bool any_device_hung() { return g_any_hung.load(); }

HostRanges& pinned_ranges() {
    static HostRanges ranges;
    return ranges;
}

}  // namespace cuda_support

namespace {

DeviceInfo info_of(int index, const cudaDeviceProp& p) {
    DeviceInfo d;
    d.index = index;
    d.name = p.name;
    d.cc_major = p.major;
    d.cc_minor = p.minor;
    d.sm_count = p.multiProcessorCount;
    d.total_memory = p.totalGlobalMem;
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, sizeof bus, index) == cudaSuccess) d.pci_bus_id = bus;
    return d;
}

}  // namespace

bool built_with_cuda() { return true; }

Discovery discover() {
    Discovery out;
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        out.error = std::string("no GPU (") + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")";
        return out;
    }
    for (int i = 0; i < n; ++i) {
        cudaDeviceProp p{};
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
        out.devices.push_back(info_of(i, p));
    }
    if (out.devices.empty()) out.error = "no GPU (no CUDA device found)";
    return out;
}

Status pin_host_memory(const void* base, std::size_t bytes) {
    using cuda_support::pinned_ranges;
    if (base == nullptr || bytes == 0) return Status{Code::bad_input, "nothing to pin"};
    if (!pinned_ranges().add(base, bytes)) return Status::success();  // already pinned: nested
    // The verifiers only read from it: read-only where the driver supports
    // that for this memory, else a plain portable registration.
    void* p = const_cast<void*>(base);
    cudaError_t e = cudaHostRegister(p, bytes, cudaHostRegisterPortable | cudaHostRegisterReadOnly);
    if (e != cudaSuccess) {
        cudaGetLastError();  // clear it; try without the read-only hint
        e = cudaHostRegister(p, bytes, cudaHostRegisterPortable);
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        pinned_ranges().remove(base);
        return Status{Code::cuda_error, std::string("cudaHostRegister: ") + cudaGetErrorString(e)};
    }
    return Status::success();
}

void unpin_host_memory(const void* base) {
    if (cuda_support::pinned_ranges().remove(base)) {
        // a hung device may still hold a copy from it: the registration stays
        if (cuda_support::any_device_hung()) return;
        cudaHostUnregister(const_cast<void*>(base));
        cudaGetLastError();  // a range the SIGBUS guard replaced may not unregister cleanly
    }
}

}  // namespace sigverify::gpu
