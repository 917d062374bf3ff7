// SPDX-License-Identifier: MIT
#include "daemon/backends/lanes_backend.hpp"

#include <algorithm>

#include "daemon/backends/lanes_rows.hpp"
#include "kernels/kernel_math.hpp"

namespace sigverify::daemon {

namespace lanes = kernels::lanes;

LanesBackend::LanesBackend(unsigned workers, lanes::Width width)
    : workers_(std::max(1u, workers)),
      // An IFMA width only where this CPU has it: anything else would fault.
      width_(lanes::cpu_runs(width) ? width : lanes::Width::scalar) {
    // Built once before any worker runs (each is thread-safe on first use
    // too, but then the first chunks would pay for it).
    lanes::g_table8();
    kernels::host_exact_g_table();
}

std::string LanesBackend::name() const { return "lanes-" + std::string(lanes::width_name(width_)); }

ChunkResult LanesBackend::verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept {
    return verify_chunk(worker, workers_, records, verdicts, [&](ChunkResult& r) {
        for (std::size_t b = 0; b < records.count; b += kProgressRows) {
            const LanesCounts c =
                verify_lanes_range(width_, records, b, std::min(records.count, b + kProgressRows), verdicts);
            r.tally.valid += c.valid;
            r.tally.invalid += c.invalid;
            if (c.rechecks != 0) rechecks_.fetch_add(c.rechecks, std::memory_order_relaxed);
            note_progress();
        }
    });
}

std::string lanes_device_text(lanes::Width width) {
    const std::string what = width == lanes::Width::ifma8   ? "8 lanes of AVX-512 IFMA (ECDSA and BIP-340)"
                             : width == lanes::Width::ifma4 ? "4 lanes of AVX-512 IFMA on 256-bit registers (ECDSA and BIP-340)"
                                                            : "the exact path, one row at a time";
    return std::string(lanes::width_name(width)) + ": " + what;
}

}  // namespace sigverify::daemon
