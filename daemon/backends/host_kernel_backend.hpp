// SPDX-License-Identifier: MIT
// The GPU kernels' host twin as a backend, for testing the GPU path without a GPU.
//
// `sigverifyd --backend host-kernel` puts this where each GPU would be: the
// very verification code the CUDA kernels run (kernels/kernel_math.hpp:
// the 32-bit-limb ladder with rechecks resolved by the exact path), compiled for the CPU,
// behind the same CheckedBackend, StripedBackend and batch split as real
// GPUs. So the daemon's whole GPU path — confirmation rules, striping, the
// split, the CPU fallback, the stats — runs end to end on any machine, and a
// bug in the kernel math shows up as a cross-check mismatch (a GPU switched
// off) in daemon-level tests. It is slow (the kernel math is not tuned for
// CPUs) and never chosen automatically.
#pragma once

#include <string>

#include "daemon/backends/backend.hpp"

namespace sigverify::daemon {

class HostKernelBackend final : public Backend {
public:
    HostKernelBackend(int index, unsigned workers) : index_(index), workers_(workers) {}
    std::string name() const override { return "host-kernel" + std::to_string(index_); }
    unsigned concurrency() const override { return workers_; }
    std::size_t preferred_chunk_rows() const override { return 4096; }
    ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override;
    // Like a GPU: it reads packed rows in place from the client's segment.
    bool verifies_in_place() const override { return true; }

private:
    int index_;
    unsigned workers_;
};

}  // namespace sigverify::daemon
