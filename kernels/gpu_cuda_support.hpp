// SPDX-License-Identifier: MIT
// What the CUDA files of sigverify_gpu share (gpu_verifier.cu, the kernel and
// its pipeline; gpu_devices.cu, discovery and pinned memory): the error
// wrapping, the record of hung devices and the set of pinned host ranges.
// CUDA builds only; not part of the GPU host API (gpu_verifier.hpp).
#pragma once

#include <cuda_runtime.h>

#include "kernels/gpu_verifier.hpp"
#include "kernels/host_ranges.hpp"

namespace sigverify::gpu::cuda_support {

// A CUDA error as the API's Status: classify_cuda_error's code and a text
// naming the call.
Status cuda_status(cudaError_t e, const char* what);

// Devices a wait timed out on (Options::wait_floor_s) are hung for the rest
// of the process: every verifier of such a device fails at once and frees
// nothing (a free or a synchronization would wait for the hung work), and no
// pinned range is unregistered while any device is hung (it may still copy
// from it).
bool device_hung(int index);
void mark_hung(int index);
bool any_device_hung();

// The host ranges pinned for every device (pin_host_memory).
HostRanges& pinned_ranges();

}  // namespace sigverify::gpu::cuda_support

// Returns the failure of a CUDA call as a Status from the enclosing function.
#define SV_CUDA(call)                                                                  \
    do {                                                                               \
        const cudaError_t sv_err_ = (call);                                            \
        if (sv_err_ != cudaSuccess) return ::sigverify::gpu::cuda_support::cuda_status(sv_err_, #call); \
    } while (0)
