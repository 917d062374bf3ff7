// SPDX-License-Identifier: MIT
// The scheduler's work on one piece: a chunk staged, verified and published
// (run_chunk), and a job's group repair after its last chunk (start_repair,
// take_repair_piece, repair_piece). Who takes which piece is scheduler.cpp.
#include "daemon/schedule/scheduler.hpp"

#include <time.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "daemon/ops/metrics.hpp"
#include "shm_protocol/verdict_publish.hpp"

namespace sigverify::daemon {
namespace {

// This thread's CPU time: what a CPU chunk cost one core, however long it
// waited for one (the split planner's cpu_row).
double thread_cpu_seconds() {
    timespec ts{};
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

}  // namespace

ChunkResult Scheduler::verify_staged(unsigned worker, const wire::RowSpan& records, const ChunkGroups* groups,
                                     bool on_cpu, std::uint8_t* verdicts) {
    if (on_cpu) return cpu_fallback_->verify(worker, records, verdicts);  // exact: no confirmation needed
    const auto t0 = std::chrono::steady_clock::now();
    ChunkResult r = groups != nullptr ? backend_.verify_grouped(worker, records, *groups, verdicts)
                                      : backend_.verify(worker, records, verdicts);
    if (r.status == shm::Status::ok && r.launched && planner_ != nullptr && records.count >= planner_->min_gpu_rows())
        planner_->observe_gpu(records.count, r.primary_seconds.value_or(std::chrono::duration<double>(
                                                 std::chrono::steady_clock::now() - t0).count()));
    if (r.status != shm::Status::ok && cpu_fallback_ != nullptr) {
        if (metrics_ != nullptr) {
            metrics_->cpu_fallback_chunks.fetch_add(1, std::memory_order_relaxed);
            metrics_->cpu_fallback_rows.fetch_add(records.count, std::memory_order_relaxed);
        }
        r = cpu_fallback_->verify(worker, records, verdicts);
    }
    return r;
}

bool Scheduler::stage_chunk(const Job& j, std::size_t begin, std::size_t end, bool in_place, Staging& st,
                            wire::RowSpan& staged) {
    const wire::RecordKind kind = j.is_columns ? j.columns.kind : j.rows.kind;
    if (j.registered.active()) {
        // Read from the client's files, never through a mapping of them. A
        // file that no longer holds its column (it shrank) fails the chunk
        // before anything is verified: nothing of it is published.
        if (!stage_registered_columns(j.registered, kind, j.columns.encoding, begin, end, st.columns,
                                      st.records.data()))
            return false;
        staged = wire::RowSpan{kind, 0, j.columns.encoding, st.records.data(), end - begin};
        return true;
    }
    staged = in_place       ? subspan(j.rows, begin, end)
             : j.is_columns ? stage_columns(j.columns, begin, end, st.records.data())
                            : stage_rows(j.rows, begin, end, st.records.data());
    return true;
}

ChunkResult Scheduler::verify_yielding(unsigned worker, const wire::RowSpan& staged, std::uint8_t* verdicts,
                                       std::size_t& verified) {
    const std::size_t n = staged.count;
    ChunkResult r;
    verified = n;
    for (std::size_t a = 0; a < n;) {
        const std::size_t b = std::min(n, a + yield_rows_);
        const ChunkResult piece = verify_staged(worker, subspan(staged, a, b), nullptr, false, verdicts + a);
        if (piece.status != shm::Status::ok) return piece;  // nothing published
        r.tally += piece.tally;
        r.rows_rewritten = r.rows_rewritten || piece.rows_rewritten;
        if (metrics_ != nullptr) metrics_->progress.fetch_add(1, std::memory_order_relaxed);
        a = b;
        if (a < n && lane_waits()) {
            verified = a;
            break;
        }
        // Let a thread that woke meanwhile (a session's reader with a new
        // batch, a client whose verdicts were posted) have this core now:
        // the kernel otherwise lets a busy worker run out its slice and
        // notices the waker only at a timer tick, once per wake-up on a
        // round trip. A no-op when nothing else is runnable.
        if (a < n) sched_yield();
    }
    return r;
}

ChunkResult Scheduler::run_chunk(unsigned worker, const Job& j, std::size_t begin, std::size_t end,
                                 std::size_t* verified_end) {
    if (verified_end != nullptr) *verified_end = end;
    ChunkResult failed;
    failed.status = shm::Status::backend_error;
    const wire::RecordKind kind = j.is_columns ? j.columns.kind : j.rows.kind;
    const std::size_t limit = j.is_columns ? j.columns.count : j.rows.count;
    if (worker >= staging_.size() || begin > end || end > limit ||
        (j.mode == wire::Mode::results && j.results == nullptr && end > begin))
        return failed;
    const std::size_t n = end - begin;
    Staging& st = staging_[worker];
    // Out of memory: the job fails with backend_error, the daemon lives on.
    if (!st.reserve(n, wire::record_size(kind))) return failed;

    const bool on_cpu = begin >= j.gpu_rows && cpu_fallback_ != nullptr;
    // 1. Stage: from here on the client cannot change what gets verified. A
    //    backend that verifies in place (a GPU copying from the client's pinned
    //    segment) gets packed rows where they are instead; it sits behind a
    //    CheckedBackend that judges any disagreement on a private copy.
    const bool in_place = !on_cpu && !j.is_columns && !j.stage_rows && backend_.verifies_in_place();
    wire::RowSpan staged;
    if (!stage_chunk(j, begin, end, in_place, st, staged)) {
        // A registered file that no longer holds its column (it shrank).
        failed.status = shm::Status::buffer_lost;
        return failed;
    }
    if (metrics_ != nullptr)
        (in_place ? metrics_->rows_in_place : metrics_->rows_staged).fetch_add(n, std::memory_order_relaxed);
    const ChunkGroups* groups = nullptr;
    if (j.ledger != nullptr) {
        // Groups rule: the grouping fields too, then which groups other chunks hold.
        const bool staged_groups = j.is_columns ? st.groups.stage_columns(j.columns, begin, end)
                                                : st.groups.stage_rows(j.rows, begin, end);
        if (!staged_groups) return failed;
        j.ledger->register_chunk(begin, end, st.groups);
        groups = &st.groups;
    }
    // 2. Verify into private verdicts: whole, or in pieces between which the
    //    worker may stop to yield to the latency lane.
    const double cpu0 = on_cpu ? thread_cpu_seconds() : 0;
    std::size_t verified = n;
    ChunkResult r;
    if (verified_end != nullptr && yield_rows_ != 0 && n > yield_rows_ && groups == nullptr && !on_cpu &&
        !in_place && cpu_fallback_ == nullptr) {
        r = verify_yielding(worker, staged, st.verdicts.data(), verified);
    } else {
        r = verify_staged(worker, staged, groups, on_cpu, st.verdicts.data());
    }
    // Only all-valid chunks teach the CPU estimate: undecodable rows cost no verification,
    // so a flood of them would make a core look far faster than it is (split_planner.hpp).
    if (on_cpu && planner_ != nullptr && r.status == shm::Status::ok && r.tally.invalid == 0 && r.tally.valid == n)
        planner_->observe_cpu(n, thread_cpu_seconds() - cpu0);
    if (r.status != shm::Status::ok) return r;  // nothing published
    // 3. Publish to the client, in the job's mode: only rows verified.
    const wire::TailSpan tails =
        j.is_columns ? wire::correlate_tails(j.columns.correlate, j.columns.tail_size) : wire::row_tails(j.rows);
    wire::publish_verdicts(j.mode, tails, j.results, begin, st.verdicts.data(), verified);
    if (verified_end != nullptr) *verified_end = begin + verified;
    return r;
}

namespace {

// Rows [begin, end) of repair range r, clamped to the job's rows (a range
// comes from a chunk, but the ledger is never trusted to stay in bounds).
std::pair<std::uint64_t, std::uint64_t> clamped(const GroupLedger::Range& r, std::uint64_t limit) {
    const std::uint64_t end = std::min<std::uint64_t>(r.end, limit);
    return {std::min<std::uint64_t>(r.begin, end), end};
}

}  // namespace

bool Scheduler::start_repair(const std::shared_ptr<JobQueue>& q, std::uint32_t index) {
    Job& j = q->jobs_[index];
    auto repairs = std::make_shared<const GroupLedger::Repairs>(j.ledger->take_repairs());
    j.ledger.reset();
    if (j.status != shm::Status::ok) return false;
    // The rows take_repair_piece will hand out: each row once, in order (the
    // ranges are sorted by their first row; a row two ranges held would be
    // taken in the first).
    const std::uint64_t limit = j.is_columns ? j.columns.count : j.rows.count;
    std::uint64_t rows = 0, cursor = 0;
    for (const GroupLedger::Range& r : repairs->ranges()) {
        const auto [b, e] = clamped(r, limit);
        if (e > std::max(b, cursor)) rows += e - std::max(b, cursor);
        cursor = std::max(cursor, e);
    }
    if (rows == 0) return false;
    j.repairs = std::move(repairs);
    j.repair_range = 0;
    j.repair_next = 0;
    j.repair_rows_left = rows;
    // Like rows a worker handed back: older than what the queue has pending.
    q->pending_.push_front(index);
    if (!q->in_runnable_) {
        q->in_runnable_ = true;
        runnable_.push_front(q);
    }
    runnable_changed();
    notify_work();
    return true;
}

std::size_t Scheduler::take_repair_piece(Job& j, std::uint64_t& begin, std::uint64_t& end) {
    const auto& ranges = j.repairs->ranges();
    const std::uint64_t limit = j.is_columns ? j.columns.count : j.rows.count;
    // Past the ranges with no rows left (repair_rows_left != 0: one has some).
    for (;; ++j.repair_range) {
        if (j.repair_range >= ranges.size()) {  // never, by start_repair's count
            j.repair_rows_left = 0;
            begin = end = 0;
            return 0;
        }
        const auto [b, e] = clamped(ranges[j.repair_range], limit);
        j.repair_next = std::max(j.repair_next, b);
        if (j.repair_next < e) break;
    }
    const std::size_t range = j.repair_range;
    const std::uint64_t range_end = clamped(ranges[range], limit).second;
    begin = j.repair_next;
    end = std::min<std::uint64_t>(range_end, begin + std::clamp<std::size_t>(chunk_rows_, 1, kRepairPieceRows));
    j.repair_next = end;
    j.repair_rows_left -= end - begin;
    return range;
}

shm::Status Scheduler::repair_piece(unsigned worker, const Job& j, std::size_t range, std::uint64_t begin,
                                    std::uint64_t end) {
    const GroupLedger::Repairs& repairs = *j.repairs;
    const GroupLedger::Range& r = repairs.ranges()[range];
    const wire::RecordKind kind = j.is_columns ? j.columns.kind : j.rows.kind;
    const std::size_t record = wire::record_size(kind);
    Staging& st = staging_[worker];
    // Unconfirmed INVALID verdicts may stand only if repaired: a repair that
    // cannot run fails the job (a non-verdict), it never completes it.
    if (!st.reserve(std::size_t(end - begin), record)) return shm::Status::backend_error;
    // The rows of the range's repaired groups, as the client's memory holds
    // them now. A VALID verdict stands (it is trusted as any other, under the
    // VALID sample); in collect mode a valid row's tail is zeroed, so its
    // group no longer matches anyway.
    st.rows.clear();
    for (std::uint64_t i = begin; i < end; ++i) {
        if (j.mode == wire::Mode::results && j.results[i] == 1) continue;
        if (repairs.wanted(read_group_key(j.is_columns, j.rows, j.columns, i), r)) st.rows.push_back(i);
    }
    if (st.rows.empty()) return shm::Status::ok;
    for (std::size_t k = 0; k < st.rows.size(); ++k)
        stage_record(j.is_columns, j.rows, j.columns, st.rows[k], st.records.data() + k * record);
    const wire::RowSpan staged{kind, 0, j.rows.encoding, st.records.data(), st.rows.size()};
    if (cpu_fallback_->verify(worker, staged, st.verdicts.data()).status != shm::Status::ok)
        return shm::Status::backend_error;
    const wire::TailSpan tails =
        j.is_columns ? wire::correlate_tails(j.columns.correlate, j.columns.tail_size) : wire::row_tails(j.rows);
    for (std::size_t k = 0; k < st.rows.size(); ++k)
        wire::publish_verdict(j.mode, tails, j.results, st.rows[k], st.verdicts[k] == 1);
    if (metrics_ != nullptr) metrics_->confirm_repaired_rows.fetch_add(st.rows.size(), std::memory_order_relaxed);
    return shm::Status::ok;
}

}  // namespace sigverify::daemon
