// SPDX-License-Identifier: MIT
#include "daemon/backends/checked_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace sigverify::daemon {

// Private memory of one worker thread: the primary's verdicts (copied to the
// caller only once the whole chunk is checked), the rows the confirmation
// rule marks, a libsecp256k1 context and the sampling generator. The buffers
// grow to the largest chunk seen.
struct CheckedBackend::Worker {
    std::vector<std::uint8_t> verdicts;
    std::vector<std::uint8_t> need;
    std::vector<std::pair<GroupKey, std::uint32_t>> order;
    std::vector<std::uint8_t> private_row;  // recheck_private's copy
    reference::RowVerifier cpu;
    std::uint64_t rng;

    explicit Worker(std::uint64_t seed) : rng(seed | 1) {}

    // xorshift64*: cheap, and unpredictable enough that a faulty primary
    // cannot line its errors up with the sample.
    std::uint64_t next() {
        rng ^= rng >> 12;
        rng ^= rng << 25;
        rng ^= rng >> 27;
        return rng * 0x2545F4914F6CDD1Dull;
    }
    bool sample(std::uint32_t every) { return every != 0 && (every == 1 || next() % every == 0); }
};

CheckedBackend::CheckedBackend(std::unique_ptr<Backend> primary, std::size_t max_chunk_rows,
                               CrossCheckPolicy policy, DisableHook on_disable)
    : primary_(std::move(primary)),
      max_chunk_rows_(std::max<std::size_t>(1, max_chunk_rows)),
      policy_(policy),
      valid_sample_every_(policy.valid_sample_every),
      invalid_sample_every_(policy.invalid_sample_every),
      on_disable_(std::move(on_disable)) {
    const unsigned n = primary_->concurrency();
    const auto seed = std::uint64_t(reinterpret_cast<std::uintptr_t>(this)) ^ 0x9E3779B97F4A7C15ull;
    for (unsigned i = 0; i < n; ++i) workers_.push_back(std::make_unique<Worker>(seed + i));
}

CheckedBackend::~CheckedBackend() = default;

void CheckedBackend::set_sampling(std::uint32_t valid_every, std::uint32_t invalid_every) {
    valid_sample_every_.store(valid_every, std::memory_order_relaxed);
    invalid_sample_every_.store(invalid_every, std::memory_order_relaxed);
}

std::string CheckedBackend::name() const { return primary_->name() + "+crosscheck"; }
unsigned CheckedBackend::concurrency() const { return primary_->concurrency(); }

void CheckedBackend::set_progress(std::atomic<std::uint64_t>* progress) {
    Backend::set_progress(progress);
    primary_->set_progress(progress);
}
std::size_t CheckedBackend::preferred_chunk_rows() const {
    return std::min(max_chunk_rows_, primary_->preferred_chunk_rows());
}

bool CheckedBackend::map_client_memory(const void* base, std::size_t bytes) noexcept {
    try {
        client_memory_.add(base, bytes);
    } catch (...) {
        return false;  // out of memory: not announced, so its rows must be staged
    }
    return primary_->map_client_memory(base, bytes);
}

void CheckedBackend::unmap_client_memory(const void* base) noexcept {
    primary_->unmap_client_memory(base);
    client_memory_.remove(base);
}

void CheckedBackend::disable(const std::string& reason) {
    if (disabling_.exchange(true)) return;  // the first reason wins
    disable_reason_ = reason;
    enabled_.store(false, std::memory_order_release);
    if (on_disable_) on_disable_(reason);
}

ChunkResult CheckedBackend::verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept {
    return check(worker, records, nullptr, verdicts);
}

ChunkResult CheckedBackend::verify_grouped(unsigned worker, const wire::RowSpan& records, const ChunkGroups& groups,
                                           std::uint8_t* verdicts) noexcept {
    if (groups.count != records.count) return ChunkResult{shm::Status::backend_error, {}};
    return check(worker, records, &groups, verdicts);
}

ChunkResult CheckedBackend::run_primary(Worker& w, unsigned worker, const wire::RowSpan& records) {
    for (std::size_t b = 0; b < records.count; b += max_chunk_rows_) {
        if (!primary_enabled()) {
            counters_.refused_chunks.fetch_add(1, std::memory_order_relaxed);
            return ChunkResult{shm::Status::backend_error, {}};
        }
        const wire::RowSpan piece = subspan(records, b, std::min(records.count, b + max_chunk_rows_));
        std::fill_n(w.verdicts.data() + b, piece.count, std::uint8_t(0));
        const ChunkResult r = primary_->verify(worker, piece, w.verdicts.data() + b);
        if (r.status != shm::Status::ok) {
            counters_.primary_errors.fetch_add(1, std::memory_order_relaxed);
            disable(primary_->name() + " failed a chunk (" + std::string(shm::to_string(r.status)) + ")");
            return ChunkResult{shm::Status::backend_error, {}};
        }
    }
    return {};
}

std::optional<bool> CheckedBackend::recheck_private(Worker& w, unsigned worker, const wire::RowSpan& records,
                                                    std::size_t i) {
    const std::size_t record = wire::record_size(records.kind);
    w.private_row.resize(record);
    std::memcpy(w.private_row.data(), records.row(i), record);
    const wire::RowSpan copy{records.kind, 0, records.encoding, w.private_row.data(), 1};
    std::uint8_t primary_verdict = 0;
    if (primary_->verify(worker, copy, &primary_verdict).status != shm::Status::ok) return std::nullopt;
    const bool cpu = w.cpu.verify_row(copy, 0);
    if (primary_verdict > 1 || cpu != (primary_verdict == 1)) return std::nullopt;
    return cpu;
}

// Step 3 of check: libsecp256k1 re-verifies the rows w.need marks, the
// sampled valid and invalid rows and every recheck (a verdict above 1); rows
// in client memory that disagree are judged again on a private copy (the
// client may have rewritten them). Fills result's tally and rows_rewritten.
// False: a verdict disagrees with libsecp256k1 and the primary is disabled.
bool CheckedBackend::confirm(Worker& w, unsigned worker, const wire::RowSpan& records, std::uint32_t valid_sample,
                             std::uint32_t invalid_sample, ChunkResult& result) {
    const std::size_t n = records.count;
    // Rows in client memory may change underneath; staged rows cannot.
    const bool in_place = n != 0 && client_memory_.contains(records.data, n * records.row_stride());
    reference::Tally tally;
    std::uint64_t rechecked = 0, unconfirmed = 0;
    for (std::size_t i = 0; i < n; ++i) {
        std::uint8_t v = w.verdicts[i];
        const bool recheck = v > 1 || (v == 1 ? w.sample(valid_sample)
                                              : w.need[i] != 0 || w.sample(invalid_sample));
        if (recheck) {
            if (++rechecked % kProgressRows == 0) note_progress();  // a long confirmation is not a hang
            const bool cpu = w.cpu.verify_row(records, i);
            bool agree = v <= 1 && cpu == (v == 1);
            if (!agree && v <= 1 && in_place) {
                // Perhaps the client rewrote the row: judge on a private copy.
                if (const std::optional<bool> settled = recheck_private(w, worker, records, i)) {
                    counters_.rows_rewritten.fetch_add(1, std::memory_order_relaxed);
                    result.rows_rewritten = true;
                    v = w.verdicts[i] = *settled ? 1 : 0;
                    agree = true;
                }
            }
            if (!agree) {
                counters_.rows_rechecked.fetch_add(rechecked, std::memory_order_relaxed);
                counters_.mismatches.fetch_add(1, std::memory_order_relaxed);
                disable(primary_->name() + " verdict " + std::to_string(v) + " disagrees with libsecp256k1 (" +
                        (cpu ? "valid" : "invalid") + ") on a " + std::string(wire::to_string(records.kind)) +
                        " row");
                return false;
            }
        } else if (v == 0) {
            ++unconfirmed;
        }
        if (v == 1) ++tally.valid;
        else ++tally.invalid;
    }
    counters_.rows_rechecked.fetch_add(rechecked, std::memory_order_relaxed);
    counters_.invalid_unconfirmed.fetch_add(unconfirmed, std::memory_order_relaxed);
    result.tally = tally;
    return true;
}

// A chunk too small for a GPU round trip: libsecp256k1 verifies it here.
ChunkResult CheckedBackend::verify_here(Worker& w, const wire::RowSpan& records, std::uint8_t* verdicts) {
    reference::Tally tally;
    for (std::size_t i = 0; i < records.count; ++i) {
        const bool ok = w.cpu.verify_row(records, i);
        verdicts[i] = ok ? 1 : 0;
        if (ok) ++tally.valid;
        else ++tally.invalid;
    }
    counters_.rows_small.fetch_add(records.count, std::memory_order_relaxed);
    ChunkResult small{shm::Status::ok, tally};
    small.launched = false;  // nothing for the split planner to learn about the GPU
    return small;
}

ChunkResult CheckedBackend::check(unsigned worker, const wire::RowSpan& records, const ChunkGroups* groups,
                                  std::uint8_t* verdicts) noexcept {
    if (!chunk_args_ok(worker, unsigned(workers_.size()), records, verdicts))
        return ChunkResult{shm::Status::backend_error, {}};
    const std::size_t n = records.count;
    Worker& w = *workers_[worker];
    try {
        if (w.verdicts.size() < n) w.verdicts.resize(n);
        if (w.need.size() < n) w.need.resize(n);
    } catch (...) {
        return ChunkResult{shm::Status::backend_error, {}};  // out of memory: the CPU fallback's turn
    }
    try {
        if (n < policy_.cpu_below_rows) return verify_here(w, records, verdicts);

        // 1. The primary's verdicts on the (private) records, timed on their own:
        //    the planner must not learn the confirmations' time (a client's
        //    invalid rows would steer it).
        const auto primary_start = std::chrono::steady_clock::now();
        if (const ChunkResult r = run_primary(w, worker, records); r.status != shm::Status::ok) return r;
        const double primary_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - primary_start).count();

        // 2. Which INVALID verdicts must be confirmed: all (strict), or those
        //    the groups rule marks.
        const std::uint32_t invalid_sample =
            groups != nullptr ? invalid_sample_every_.load(std::memory_order_relaxed) : 1;
        const std::uint32_t valid_sample = valid_sample_every_.load(std::memory_order_relaxed);
        if (groups != nullptr) mark_rows_to_confirm(*groups, w.verdicts.data(), w.need.data(), w.order);
        else std::fill_n(w.need.data(), n, std::uint8_t(1));
        (groups != nullptr ? counters_.chunks_groups : counters_.chunks_strict).fetch_add(1, std::memory_order_relaxed);

        // 3. libsecp256k1 re-verifies them, and the samples.
        ChunkResult result;
        result.primary_seconds = primary_seconds;
        if (!confirm(w, worker, records, valid_sample, invalid_sample, result))
            return ChunkResult{shm::Status::backend_error, {}};  // disabled: a verdict disagreed
        std::memcpy(verdicts, w.verdicts.data(), n);  // checked: hand them back
        return result;
    } catch (...) {
        disable("exception in the checked backend");
        return ChunkResult{shm::Status::backend_error, {}};
    }
}

}  // namespace sigverify::daemon
