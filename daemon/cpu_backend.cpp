#include <thread>

#include "daemon/backend.hpp"

namespace sigverify::daemon {

CpuBackend::CpuBackend(unsigned threads)
    : threads_(threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency())) {
    verifiers_ = std::make_unique<std::unique_ptr<reference::RowVerifier>[]>(threads_);
    for (unsigned i = 0; i < threads_; ++i) verifiers_[i] = std::make_unique<reference::RowVerifier>();
}

CpuBackend::~CpuBackend() = default;

unsigned CpuBackend::concurrency() const { return threads_; }

ChunkResult CpuBackend::verify(unsigned worker, const wire::RowSpan& rows, std::size_t begin,
                               std::size_t end, wire::Mode mode, std::uint8_t* results) noexcept {
    ChunkResult r;
    if (worker >= threads_ || !rows.valid() || begin > end || end > rows.count ||
        (mode == wire::Mode::results && results == nullptr && end > begin)) {
        r.status = shm::Status::backend_error;
        return r;
    }
    try {
        r.tally = verifiers_[worker]->run(rows, begin, end, mode, results);
    } catch (...) {
        r.status = shm::Status::backend_error;
        r.tally = {};
    }
    return r;
}

}  // namespace sigverify::daemon
