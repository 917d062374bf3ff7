#include "daemon/checked_backend.hpp"

#include <algorithm>
#include <cstring>

namespace sigverify::daemon {

// Private memory of one worker thread, allocated once: the primary's verdicts
// (copied to the caller only once checked), a libsecp256k1 context and the
// sampling generator.
struct CheckedBackend::Worker {
    std::vector<std::uint8_t> verdicts;
    reference::RowVerifier cpu;
    std::uint64_t rng;

    Worker(std::size_t rows, std::uint64_t seed) : verdicts(rows), rng(seed | 1) {}

    // xorshift64*: cheap, and unpredictable enough that a faulty primary
    // cannot line its errors up with the sample.
    std::uint64_t next() {
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        return rng * 0x2545F4914F6CDD1Dull;
    }
};

CheckedBackend::CheckedBackend(std::unique_ptr<Backend> primary, std::size_t max_chunk_rows,
                               CrossCheckPolicy policy, DisableHook on_disable)
    : primary_(std::move(primary)),
      max_chunk_rows_(std::max<std::size_t>(1, max_chunk_rows)),
      policy_(policy),
      on_disable_(std::move(on_disable)) {
    const unsigned n = primary_->concurrency();
    const auto seed = std::uint64_t(reinterpret_cast<std::uintptr_t>(this)) ^ 0x9E3779B97F4A7C15ull;
    for (unsigned i = 0; i < n; ++i) workers_.push_back(std::make_unique<Worker>(max_chunk_rows_, seed + i));
}

CheckedBackend::~CheckedBackend() = default;

std::string CheckedBackend::name() const { return primary_->name() + "+crosscheck"; }
unsigned CheckedBackend::concurrency() const { return primary_->concurrency(); }
std::size_t CheckedBackend::preferred_chunk_rows() const {
    return std::min(max_chunk_rows_, primary_->preferred_chunk_rows());
}

void CheckedBackend::disable(const std::string& reason) {
    if (disabling_.exchange(true)) return;  // the first reason wins
    disable_reason_ = reason;
    enabled_.store(false, std::memory_order_release);
    if (on_disable_) on_disable_(reason);
}

ChunkResult CheckedBackend::verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept {
    ChunkResult total;
    if (!chunk_args_ok(worker, unsigned(workers_.size()), records, verdicts)) {
        total.status = shm::Status::backend_error;
        return total;
    }
    try {
        for (std::size_t b = 0; b < records.count; b += max_chunk_rows_) {
            if (!primary_enabled()) {
                counters_.refused_chunks.fetch_add(1, std::memory_order_relaxed);
                return ChunkResult{shm::Status::backend_error, {}};
            }
            Worker& w = *workers_[worker];
            const wire::RowSpan piece = subspan(records, b, std::min(records.count, b + max_chunk_rows_));
            const ChunkResult r = verify_piece(w, worker, piece);
            if (r.status != shm::Status::ok) return ChunkResult{r.status, {}};
            std::memcpy(verdicts + b, w.verdicts.data(), piece.count);  // checked: hand them back
            total.tally += r.tally;
        }
    } catch (...) {
        disable("exception in the checked backend");
        return ChunkResult{shm::Status::backend_error, {}};
    }
    return total;
}

ChunkResult CheckedBackend::verify_piece(Worker& w, unsigned worker, const wire::RowSpan& piece) {
    const std::size_t n = piece.count;
    if (n < policy_.cpu_below_rows) {
        // Too small for a GPU round trip: libsecp256k1 verifies the piece here.
        reference::Tally tally;
        for (std::size_t i = 0; i < n; ++i) {
            const bool ok = w.cpu.verify_row(piece, i);
            w.verdicts[i] = ok ? 1 : 0;
            if (ok) ++tally.valid;
            else ++tally.invalid;
        }
        counters_.rows_small.fetch_add(n, std::memory_order_relaxed);
        return ChunkResult{shm::Status::ok, tally};
    }

    // 1. The primary's verdicts on the (private) records.
    std::fill_n(w.verdicts.data(), n, std::uint8_t(0));
    const ChunkResult r = primary_->verify(worker, piece, w.verdicts.data());
    if (r.status != shm::Status::ok) {
        counters_.primary_errors.fetch_add(1, std::memory_order_relaxed);
        disable(primary_->name() + " failed a chunk (" + std::string(shm::to_string(r.status)) + ")");
        return ChunkResult{shm::Status::backend_error, {}};
    }

    // 2. libsecp256k1 re-verifies every invalid verdict and a sample of valid ones.
    std::uint64_t rechecked = 0;
    reference::Tally tally;
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint8_t v = w.verdicts[i];
        const bool sample = v == 0 || (v == 1 && policy_.valid_sample_every != 0 &&
                                       (policy_.valid_sample_every == 1 || w.next() % policy_.valid_sample_every == 0));
        if (v > 1 || sample) {
            ++rechecked;
            const bool cpu = w.cpu.verify_row(piece, i);
            if (v > 1 || cpu != (v == 1)) {
                counters_.rows_rechecked.fetch_add(rechecked, std::memory_order_relaxed);
                counters_.mismatches.fetch_add(1, std::memory_order_relaxed);
                disable(primary_->name() + " verdict " + std::to_string(v) + " disagrees with libsecp256k1 (" +
                        (cpu ? "valid" : "invalid") + ") on a " + std::string(wire::to_string(piece.kind)) + " row");
                return ChunkResult{shm::Status::backend_error, {}};
            }
        }
        if (v == 1) ++tally.valid;
        else ++tally.invalid;
    }
    counters_.rows_rechecked.fetch_add(rechecked, std::memory_order_relaxed);
    return ChunkResult{shm::Status::ok, tally};
}

}  // namespace sigverify::daemon
