#include "daemon/checked_backend.hpp"

#include <algorithm>
#include <cstring>

namespace sigverify::daemon {

// Private memory of one worker thread, allocated once: the chunk's records
// (tails are not needed to verify), the primary's verdicts, a libsecp256k1
// context and the sampling generator.
struct CheckedBackend::Worker {
    std::vector<std::uint8_t> records;
    std::vector<std::uint8_t> verdicts;
    reference::RowVerifier cpu;
    std::uint64_t rng;

    Worker(std::size_t rows, std::uint64_t seed)
        : records(rows * wire::kEcdsaRecordSize), verdicts(rows), rng(seed | 1) {}

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

ChunkResult CheckedBackend::verify(unsigned worker, const wire::RowSpan& rows, std::size_t begin,
                                   std::size_t end, wire::Mode mode, std::uint8_t* results) noexcept {
    ChunkResult total;
    if (worker >= workers_.size() || !rows.valid() || begin > end || end > rows.count ||
        (mode == wire::Mode::results && results == nullptr && end > begin)) {
        total.status = shm::Status::backend_error;
        return total;
    }
    try {
        for (std::size_t b = begin; b < end; b += max_chunk_rows_) {
            if (!primary_enabled()) {
                counters_.refused_chunks.fetch_add(1, std::memory_order_relaxed);
                return ChunkResult{shm::Status::backend_error, {}};
            }
            const ChunkResult r =
                verify_piece(*workers_[worker], worker, rows, b, std::min(end, b + max_chunk_rows_), mode, results);
            if (r.status != shm::Status::ok) return ChunkResult{r.status, {}};
            total.tally += r.tally;
        }
    } catch (...) {
        disable("exception in the checked backend");
        return ChunkResult{shm::Status::backend_error, {}};
    }
    return total;
}

ChunkResult CheckedBackend::verify_piece(Worker& w, unsigned worker, const wire::RowSpan& rows, std::size_t begin,
                                         std::size_t end, wire::Mode mode, std::uint8_t* results) {
    const std::size_t n = end - begin;
    const std::size_t record = wire::record_size(rows.kind);
    // 1. A private snapshot of the records.
    for (std::size_t i = 0; i < n; ++i) std::memcpy(w.records.data() + i * record, rows.row(begin + i), record);
    const wire::RowSpan snapshot{rows.kind, 0, rows.encoding, w.records.data(), n};

    if (n < policy_.cpu_below_rows) {
        // Too small for a GPU round trip: libsecp256k1 verifies the snapshot here.
        reference::Tally tally;
        for (std::size_t i = 0; i < n; ++i) {
            const bool ok = w.cpu.verify_row(snapshot, i);
            w.verdicts[i] = ok ? 1 : 0;
            if (ok) ++tally.valid;
            else ++tally.invalid;
        }
        counters_.rows_small.fetch_add(n, std::memory_order_relaxed);
        publish(w, rows, begin, n, mode, results);
        return ChunkResult{shm::Status::ok, tally};
    }

    // 2. The primary's verdicts on the snapshot.
    std::memset(w.verdicts.data(), 0, n);
    const ChunkResult r = primary_->verify(worker, snapshot, 0, n, wire::Mode::results, w.verdicts.data());
    if (r.status != shm::Status::ok) {
        counters_.primary_errors.fetch_add(1, std::memory_order_relaxed);
        disable(primary_->name() + " failed a chunk (" + std::string(shm::to_string(r.status)) + ")");
        return ChunkResult{shm::Status::backend_error, {}};
    }

    // 3. libsecp256k1 re-verifies every invalid verdict and a sample of valid ones.
    std::uint64_t rechecked = 0;
    reference::Tally tally;
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint8_t v = w.verdicts[i];
        const bool sample = v == 0 || (v == 1 && policy_.valid_sample_every != 0 &&
                                       (policy_.valid_sample_every == 1 || w.next() % policy_.valid_sample_every == 0));
        if (v > 1 || sample) {
            ++rechecked;
            const bool cpu = w.cpu.verify_row(snapshot, i);
            if (v > 1 || cpu != (v == 1)) {
                counters_.rows_rechecked.fetch_add(rechecked, std::memory_order_relaxed);
                counters_.mismatches.fetch_add(1, std::memory_order_relaxed);
                disable(primary_->name() + " verdict " + std::to_string(v) + " disagrees with libsecp256k1 (" +
                        (cpu ? "valid" : "invalid") + ") on a " + std::string(wire::to_string(rows.kind)) + " row");
                return ChunkResult{shm::Status::backend_error, {}};
            }
        }
        if (v == 1) ++tally.valid;
        else ++tally.invalid;
    }
    counters_.rows_rechecked.fetch_add(rechecked, std::memory_order_relaxed);

    // 4. Publish.
    publish(w, rows, begin, n, mode, results);
    return ChunkResult{shm::Status::ok, tally};
}

void CheckedBackend::publish(const Worker& w, const wire::RowSpan& rows, std::size_t begin, std::size_t n,
                             wire::Mode mode, std::uint8_t* results) {
    if (mode == wire::Mode::results) {
        std::memcpy(results + begin, w.verdicts.data(), n);
    } else if (rows.key_size != 0) {
        const std::size_t record = wire::record_size(rows.kind);
        for (std::size_t i = 0; i < n; ++i)
            if (w.verdicts[i] == 1) std::memset(rows.row(begin + i) + record, 0, rows.key_size);
    }
}

}  // namespace sigverify::daemon
