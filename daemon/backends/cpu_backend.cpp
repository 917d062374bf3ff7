// SPDX-License-Identifier: MIT
// The CPU backend (daemon/backends/backend.hpp): libsecp256k1 through reference::RowVerifier.
#include <algorithm>
#include <thread>

#include "daemon/backends/backend.hpp"

namespace sigverify::daemon {

CpuBackend::CpuBackend(unsigned threads)
    : threads_(threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency())) {
    verifiers_ = std::make_unique<std::unique_ptr<reference::RowVerifier>[]>(threads_);
    for (unsigned i = 0; i < threads_; ++i) verifiers_[i] = std::make_unique<reference::RowVerifier>();
}

CpuBackend::~CpuBackend() = default;

unsigned CpuBackend::concurrency() const { return threads_; }

ChunkResult CpuBackend::verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept {
    return verify_chunk(worker, threads_, records, verdicts, [&](ChunkResult& r) {
        // In pieces, each a sign of life for the watchdog.
        for (std::size_t b = 0; b < records.count; b += kProgressRows) {
            r.tally += verifiers_[worker]->run(records, b, std::min(records.count, b + kProgressRows),
                                               wire::Mode::results, verdicts);
            note_progress();
        }
    });
}

}  // namespace sigverify::daemon
