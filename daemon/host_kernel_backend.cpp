// SPDX-License-Identifier: MIT
#include "daemon/host_kernel_backend.hpp"

#include "kernels/kernel_math.hpp"

namespace sigverify::daemon {

ChunkResult HostKernelBackend::verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept {
    ChunkResult r;
    if (!chunk_args_ok(worker, workers_, records, verdicts)) {
        r.status = shm::Status::backend_error;
        return r;
    }
    try {
        const kernels::HostCounts c = kernels::verify_range(records, 0, records.count, wire::Mode::results, verdicts);
        r.tally.valid = c.valid;
        r.tally.invalid = c.invalid;
    } catch (...) {
        r.status = shm::Status::backend_error;
    }
    return r;
}

}  // namespace sigverify::daemon
