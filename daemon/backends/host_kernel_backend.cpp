// SPDX-License-Identifier: MIT
#include "daemon/backends/host_kernel_backend.hpp"

#include <algorithm>

#include "kernels/kernel_math.hpp"

namespace sigverify::daemon {

ChunkResult HostKernelBackend::verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept {
    return verify_chunk(worker, workers_, records, verdicts, [&](ChunkResult& r) {
        // In pieces, each a sign of life for the watchdog (a GPU's kernel
        // takes milliseconds; its host twin, ~7 times libsecp256k1's cost a
        // row, seconds): a quarter of kProgressRows keeps about its time.
        constexpr std::size_t piece = kProgressRows / 4;
        for (std::size_t b = 0; b < records.count; b += piece) {
            const kernels::HostCounts c = kernels::verify_range(records, b, std::min(records.count, b + piece),
                                                                wire::Mode::results, verdicts);
            r.tally.valid += c.valid;
            r.tally.invalid += c.invalid;
            note_progress();
        }
    });
}

}  // namespace sigverify::daemon
