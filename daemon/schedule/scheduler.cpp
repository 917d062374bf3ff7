// SPDX-License-Identifier: MIT
#include "daemon/schedule/scheduler.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <tuple>
#include <utility>

#include "daemon/ops/metrics.hpp"
#include "daemon/ops/thread_name.hpp"
#include "shm_protocol/spin_wait.hpp"
#include "shm_protocol/verdict_publish.hpp"

namespace sigverify::daemon {

Scheduler::Scheduler(Backend& backend, Backend* cpu_fallback, std::size_t chunk_rows)
    : backend_(backend),
      cpu_fallback_(cpu_fallback != nullptr && cpu_fallback->concurrency() >= backend.concurrency()
                        ? cpu_fallback
                        : nullptr),
      chunk_rows_(chunk_rows != 0 ? chunk_rows : std::max<std::size_t>(1, backend.preferred_chunk_rows())) {}

Scheduler::~Scheduler() { stop(); }

void Scheduler::set_metrics(Metrics* metrics) {
    metrics_ = metrics;
    std::atomic<std::uint64_t>* progress = metrics != nullptr ? &metrics->progress : nullptr;
    backend_.set_progress(progress);
    if (cpu_fallback_ != nullptr) cpu_fallback_->set_progress(progress);
}

namespace {

// Restricts the calling thread to the (n mod count)-th of the count cores it
// may run on now. Without this the kernel placed a worker woken by another
// on that worker's busy core while the other core ran a spinning reader, and
// kept the two there (a recently run thread is "cache hot" and not moved):
// in about half the runs a 64-row batch took as long as on one core. A
// refusal (a sandbox) leaves the thread where it was.
void keep_to_core(unsigned n) {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    int skip = int(n % unsigned(std::max(1, CPU_COUNT(&allowed))));
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed) || skip-- > 0) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        (void)sched_setaffinity(0, sizeof one, &one);
        return;
    }
}

// Moves the calling thread to SCHED_IDLE (see Lane workers in
// scheduler.hpp): the kernel preempts it as soon as a thread of normal
// policy wakes on its core, rather than at the end of its slice. Lowering a
// thread's policy needs no privilege (systemd's RestrictRealtime= allows it);
// false when it was refused.
bool enter_idle_policy() {
    sched_param none{};
    return sched_setscheduler(0, SCHED_IDLE, &none) == 0;
}

// A job of a queue's pending line that is cancelled or whose session ends:
// no row or repair piece of it is handed out any more, and `status` is what
// it completes with. True when no chunk of it runs, so it completes now.
bool drop_unassigned(Job& j, shm::Status status) {
    j.next_row = j.rows.count;
    j.returned.clear();
    j.returned_rows = 0;
    j.repair_rows_left = 0;
    j.status = status;
    if (j.running != 0) return false;
    j.ledger.reset();
    j.repairs.reset();
    return true;
}


}  // namespace

void Scheduler::start() {
    std::lock_guard lock(mutex_);
    if (!workers_.empty()) return;
    stopping_ = false;
    staging_.assign(backend_.concurrency(), Staging{});
    // At least one worker takes bulk work.
    lane_workers_ = std::min(lane_workers_, std::max(1u, backend_.concurrency()) - 1);
    bulk_workers_ = backend_.concurrency() - lane_workers_;
    // Before any worker runs: the backend keeps a slot for the lane workers
    // (a GPU's lane slot), so their chunks never queue behind a bulk launch.
    if (lane_workers_ != 0) backend_.set_lane_workers(bulk_workers_);
    for (unsigned w = 0; w < backend_.concurrency(); ++w) workers_.emplace_back([this, w] { worker_loop(w); });
}

std::unique_ptr<JobQueue> Scheduler::make_queue(JobSink& sink, std::uint32_t slots, std::uint32_t account) {
    std::unique_ptr<JobQueue> q(new JobQueue(sink, slots));
    q->account_ = account;
    return q;
}

void Scheduler::submit(const std::shared_ptr<JobQueue>& q, std::uint32_t index) {
    {
        std::lock_guard lock(mutex_);
        q->pending_.push_back(index);
        ++queued_jobs_;
        if (!q->in_runnable_) {
            q->in_runnable_ = true;
            runnable_.push_back(q);
        }
        runnable_changed();
    }
    notify_work();
}

void Scheduler::notify_work() {
    work_cv_.notify_one();
    if (lane_ready_.load(std::memory_order_acquire)) lane_cv_.notify_one();
}

void Scheduler::cancel(JobQueue& q, shm::Status status) {
    std::vector<std::uint32_t> to_finish;
    {
        std::lock_guard lock(mutex_);
        for (std::uint32_t index : q.pending_) {
            Job& j = q.jobs_[index];
            if (drop_unassigned(j, status)) {
                to_finish.push_back(index);
                --queued_jobs_;
            }
        }
        q.pending_.clear();
        // Jobs already fully handed out but still running: their last chunk reports status.
        for (Job& j : q.jobs_)
            if (j.running != 0) j.status = status;
        if (q.in_runnable_) {
            runnable_.erase(std::remove_if(runnable_.begin(), runnable_.end(),
                                           [&](const std::shared_ptr<JobQueue>& p) { return p.get() == &q; }),
                            runnable_.end());
            runnable_changed();
            q.in_runnable_ = false;
        }
    }
    for (std::uint32_t index : to_finish) q.sink_.finish_job(index, status, {});
    idle_cv_.notify_all();
}

std::size_t Scheduler::cancel_job(JobQueue& q, std::uint64_t tag) {
    // The counts of the chunks that did run go with the completion.
    std::vector<std::pair<std::uint32_t, reference::Tally>> to_finish;
    std::size_t cancelled = 0;
    {
        std::lock_guard lock(mutex_);
        // A job is in flight while it has unassigned rows (in pending_) or
        // running chunks; user_tag was written by this caller before submit.
        const auto matches = [&](std::uint32_t index) { return q.jobs_[index].user_tag == tag; };
        for (std::uint32_t index : q.pending_) {
            if (!matches(index)) continue;
            Job& j = q.jobs_[index];
            ++cancelled;
            if (drop_unassigned(j, shm::Status::cancelled)) {
                to_finish.emplace_back(index, j.tally);
                --queued_jobs_;
            }
        }
        if (cancelled != 0)
            q.pending_.erase(std::remove_if(q.pending_.begin(), q.pending_.end(), matches), q.pending_.end());
        // Fully handed out but still running: the last chunk reports cancelled.
        for (std::uint32_t index = 0; index < q.jobs_.size(); ++index) {
            Job& j = q.jobs_[index];
            if (j.running == 0 || j.user_tag != tag || j.status == shm::Status::cancelled) continue;
            j.status = shm::Status::cancelled;
            ++cancelled;
        }
        if (q.pending_.empty() && q.in_runnable_) {
            runnable_.erase(std::remove_if(runnable_.begin(), runnable_.end(),
                                           [&](const std::shared_ptr<JobQueue>& p) { return p.get() == &q; }),
                            runnable_.end());
            runnable_changed();
            q.in_runnable_ = false;
        }
    }
    for (const auto& [index, tally] : to_finish) q.sink_.finish_job(index, shm::Status::cancelled, tally);
    if (!to_finish.empty()) idle_cv_.notify_all();
    return cancelled;
}

bool Scheduler::idle() {
    std::lock_guard lock(mutex_);
    return queued_jobs_ == 0;
}

bool Scheduler::wait_idle(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    idle_cv_.wait_until(lock, deadline, [&] { return queued_jobs_ == 0; });
    return queued_jobs_ == 0;
}

void Scheduler::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    work_cv_.notify_all();
    lane_cv_.notify_all();
    for (auto& t : workers_)
        if (t.joinable()) t.join();
    workers_.clear();
    std::lock_guard lock(mutex_);
    runnable_.clear();
    runnable_changed();
}

bool Scheduler::indebted(const JobQueue& q) const {
    const auto it = lane_debts_.find(q.account_);
    return it != lane_debts_.end() && it->second.over_limit;
}

void Scheduler::charge_lane_debt(std::uint32_t account, double seconds) {
    if (!(seconds > 0) || lane_workers_ == 0) return;
    const auto now = std::chrono::steady_clock::now();
    LaneDebt& d = lane_debts_[account];
    d.seconds = std::min(std::max(0.0, d.owed(now)) + seconds, 3600.0);  // bounded: repaid within 10 h whatever was charged
    d.at = now;
}

bool Scheduler::lane_work(const JobQueue& q) const {
    const Job& front = q.jobs_[q.pending_.front()];
    // A job in its group repair is lane work only as a small batch.
    const std::uint64_t left = front.repairs != nullptr ? front.rows.count : front.rows.count - front.next_row;
    return front.returned.empty() && left <= chunk_rows_ && !indebted(q);
}

bool Scheduler::lane_worker_work(const JobQueue& q) const {
    if (q.pending_.empty() || q.jobs_[q.pending_.front()].rows.count > kLaneWorkerRows) return false;
    // An account in debt holds one lane worker at most.
    if (indebted(q) && indebted_lane_running_ != 0) return false;
    // Lane workers may share the chunks of one small job, never hold two of one queue's jobs.
    return q.lane_running_ == 0 || q.lane_job_ == q.pending_.front();
}

bool Scheduler::bulk_may_take(const JobQueue& q) const {
    return lane_workers_ == 0 || idle_lane_workers_ == 0 || q.pending_.empty() ||
           q.jobs_[q.pending_.front()].rows.count > kLaneWorkerRows || indebted(q);
}

void Scheduler::runnable_changed() {
    // The accounts' debts as of now, repaid since they were charged; the
    // predicates read over_limit until the next call.
    if (!lane_debts_.empty()) {
        const auto now = std::chrono::steady_clock::now();
        for (auto it = lane_debts_.begin(); it != lane_debts_.end();) {
            const double owed = it->second.owed(now);
            if (owed <= 0) {
                it = lane_debts_.erase(it);
                continue;
            }
            it->second.over_limit = owed > kLaneDebtLimit;
            ++it;
        }
    }
    runnable_count_.store(static_cast<std::uint32_t>(runnable_.size()), std::memory_order_release);
    const auto any = [&](auto&& pred) { return std::any_of(runnable_.begin(), runnable_.end(), pred); };
    const bool lane =
        lane_workers_ != 0 && any([&](const std::shared_ptr<JobQueue>& q) { return lane_worker_work(*q); });
    const bool bulk = any([&](const std::shared_ptr<JobQueue>& q) { return bulk_may_take(*q); });
    // A wait that may end now is woken here, whoever made it end.
    if (lane && !lane_ready_.exchange(true, std::memory_order_acq_rel)) lane_cv_.notify_one();
    if (!lane) lane_ready_.store(false, std::memory_order_release);
    if (bulk && !bulk_ready_.exchange(true, std::memory_order_acq_rel)) work_cv_.notify_one();
    if (!bulk) bulk_ready_.store(false, std::memory_order_release);
    // Workers yield for small batches only, not for the last chunk of a bulk
    // batch (which lane_work also serves first): that would cut the chunks of
    // every bulk batch's end, for no one waiting on a round trip.
    const auto small_batch = [&](const std::shared_ptr<JobQueue>& q) {
        return lane_work(*q) && q->jobs_[q->pending_.front()].rows.count <= chunk_rows_;
    };
    lane_waiting_.store(yield_rows_ != 0 && std::any_of(runnable_.begin(), runnable_.end(), small_batch),
                        std::memory_order_release);
}

void Scheduler::hand_back(const std::shared_ptr<JobQueue>& q, std::uint32_t index, std::uint64_t begin,
                          std::uint64_t end) {
    Job& j = q->jobs_[index];
    ++chunks_yielded_;
    // A cancelled or failed job completes without these rows (they stay as
    // submitted: zero verdicts, tails kept; the status says why).
    if (j.status != shm::Status::ok) return;
    if (j.unassigned() == 0) q->pending_.push_front(index);  // submission order: older than what is pending
    j.returned.emplace_back(begin, end);
    j.returned_rows += end - begin;
    if (!q->in_runnable_) {
        // It had its turn: it goes on right after the lane.
        q->in_runnable_ = true;
        runnable_.push_front(q);
    }
    runnable_changed();
}

bool Scheduler::use_groups_rule(const Job& j) const {
    return j.confirm == ConfirmRule::groups && backend_.confirms_by_group() && cpu_fallback_ != nullptr &&
           groups_rule_applies(j.table, j.is_columns, j.rows, j.columns);
}

void Scheduler::plan_job(Job& j) const {
    const std::uint64_t n = j.rows.count;
    j.ledger = use_groups_rule(j) ? std::make_shared<GroupLedger>() : nullptr;
    // The lane workers are not the split's: they serve small batches only.
    const unsigned workers = std::max(1u, bulk_workers_);
    j.gpu_rows = n;
    j.cpu_chunk_rows = chunk_rows_;
    if (cpu_fallback_ == nullptr) {
        // The CPU backend: a batch too small to fill every worker with full
        // chunks is spread over all of them (a 64-row batch on every core,
        // not on one), down to kMinSpreadRows rows a chunk.
        j.backend_chunk_rows = backend_.cheap_small_chunks()
                                   ? std::clamp<std::uint64_t>((n + workers - 1) / workers,
                                                               std::min<std::uint64_t>(kMinSpreadRows, chunk_rows_),
                                                               chunk_rows_)
                                   : chunk_rows_;
        return;
    }
    j.backend_chunk_rows = chunk_rows_;
    // One worker waits on the GPU share; the others verify the CPU share. A
    // small batch planned while every bulk worker is busy (their cores busy
    // with bulk confirmations and CPU shares) can count on the lane workers only.
    const bool lane_only = lane_workers_ != 0 && n <= kLaneWorkerRows &&
                           idle_workers_.load(std::memory_order_acquire) == 0;
    // On the lane workers too, one of them waits on the GPU share.
    const unsigned cpu_workers = lane_only ? std::max(1u, lane_workers_ - 1) : std::max(1u, workers - 1);
    if (!backend_.available()) j.gpu_rows = 0;
    // On the lane a CPU share that barely shortens the launch goes to the
    // GPU too, leaving the other lane worker to the next small batch.
    else if (planner_ != nullptr)
        j.gpu_rows = lane_only ? planner_->lane_gpu_rows(n, cpu_workers) : planner_->gpu_rows(n, cpu_workers);
    const std::uint64_t cpu_rows = n - j.gpu_rows;
    const unsigned spread = j.gpu_rows == 0 ? workers : cpu_workers;
    j.cpu_chunk_rows = std::clamp<std::uint64_t>((cpu_rows + spread - 1) / spread, 1, chunk_rows_);
    if (metrics_ != nullptr && cpu_rows != 0) metrics_->split_cpu_rows.fetch_add(cpu_rows, std::memory_order_relaxed);
}

void Scheduler::worker_loop(unsigned worker) {
    // Lane workers take only small batches (see Lane workers in scheduler.hpp).
    const bool lane_worker = worker >= bulk_workers_;
    const bool bulk_beside_lane = !lane_worker && lane_workers_ != 0;
    name_this_thread(lane_worker ? "sv-lane-" + std::to_string(worker - bulk_workers_)
                                 : "sv-worker-" + std::to_string(worker));
    // Linux scheduling is per thread, and lowering it needs no privilege. A
    // refusal (a sandbox) leaves the worker at the daemon's priority.
    int nice_offset = worker_nice_;
    if (bulk_beside_lane && !(bulk_idle_ && enter_idle_policy())) nice_offset += kBulkNice;
    if (nice_offset > 0) {
        const int nice_now = ::getpriority(PRIO_PROCESS, 0);
        (void)::setpriority(PRIO_PROCESS, 0, std::min(19, nice_now + nice_offset));
    }
    if (pin_workers_) keep_to_core(worker);
    std::unique_lock lock(mutex_);
    for (;;) {
        if (lane_worker) {
            // Its own wait: bulk work alone must neither wake it nor keep it spinning.
            // While one is idle, small batches wait for it, not for a bulk worker.
            if (!stopping_ && !lane_ready_.load(std::memory_order_acquire)) {
                ++idle_lane_workers_;
                runnable_changed();
                lock.unlock();
                shm::spin_before_sleep([&] { return lane_ready_.load(std::memory_order_acquire); });
                lock.lock();
                lane_cv_.wait(lock, [&] { return stopping_ || lane_ready_.load(std::memory_order_acquire); });
                --idle_lane_workers_;
                runnable_changed();
            }
        } else if (!bulk_ready_.load(std::memory_order_acquire) && !stopping_) {
            // Busy-poll briefly before sleeping: a condition-variable wakeup
            // costs ~100 us on a loaded VM, longer than a 1-row verification.
            // Without lane workers bulk_ready_ is "runnable_ is not empty".
            idle_workers_.fetch_add(1, std::memory_order_acq_rel);
            lock.unlock();
            shm::spin_before_sleep([&] { return bulk_ready_.load(std::memory_order_acquire); });
            lock.lock();
            work_cv_.wait(lock, [&] { return stopping_ || bulk_ready_.load(std::memory_order_acquire); });
            idle_workers_.fetch_sub(1, std::memory_order_acq_rel);
        }
        if (stopping_) return;
        // Latency lane: a queue whose next job fits in one chunk goes first,
        // so a node's block-sized or 1-row batch never waits behind the
        // chunks of every bulk verifier on the host; bulk queues round-robin.
        // At most kLaneBurst lane picks in a row: a client flooding small
        // batches cannot starve the bulk queues (they get every fifth chunk).
        // With lane workers, a bulk worker leaves small batches to an idle
        // lane worker (bulk_may_take): it serves them only when all are busy.
        const auto small = [&](const std::shared_ptr<JobQueue>& sq) { return lane_work(*sq) && bulk_may_take(*sq); };
        const auto first_small = std::find_if(runnable_.begin(), runnable_.end(), small);
        const auto bulk = [&](const std::shared_ptr<JobQueue>& bq) { return !lane_work(*bq) && bulk_may_take(*bq); };
        const auto first_bulk = std::find_if(runnable_.begin(), runnable_.end(), bulk);
        auto pick = runnable_.begin();
        // A bulk chunk taken because the lane had its kLaneBurst picks runs
        // whole: yielding it to the waiting small batches would shrink the
        // bulk queues' guaranteed share to one piece.
        bool may_yield = true;
        if (lane_worker) {
            // The first queue in line with a small batch no lane worker serves
            // (lane_ready_ said there is one; it is read under the lock).
            // Accounts that owe the lane nothing first.
            pick = std::find_if(runnable_.begin(), runnable_.end(), [&](const std::shared_ptr<JobQueue>& lq) {
                return lane_worker_work(*lq) && !indebted(*lq);
            });
            if (pick == runnable_.end())
                pick = std::find_if(runnable_.begin(), runnable_.end(),
                                    [&](const std::shared_ptr<JobQueue>& lq) { return lane_worker_work(*lq); });
            if (pick == runnable_.end()) continue;
            may_yield = false;
        } else if (first_small != runnable_.end() && (lane_streak_ < kLaneBurst || first_bulk == runnable_.end())) {
            pick = first_small;
            lane_streak_ = std::min(lane_streak_ + 1, kLaneBurst);
        } else if (first_bulk != runnable_.end()) {
            pick = first_bulk;
            may_yield = first_small == runnable_.end();
            lane_streak_ = 0;
        } else {
            continue;  // only small batches an idle lane worker takes (bulk_ready_ is false)
        }
        std::shared_ptr<JobQueue> q = std::move(*pick);
        runnable_.erase(pick);
        const bool indebted_lane = lane_worker && indebted(*q);
        if (lane_worker) {
            ++q->lane_running_;
            q->lane_job_ = q->pending_.front();
            if (indebted_lane) ++indebted_lane_running_;
        }
        const std::uint32_t index = q->pending_.front();
        Job& j = q->jobs_[index];
        // Only small batches' confirmations are the lane's: a bulk batch's run on the bulk workers.
        const bool small_job = j.rows.count <= kLaneWorkerRows;
        if (metrics_ != nullptr && small_job && indebted(*q))
            metrics_->lane_indebted_chunks.fetch_add(1, std::memory_order_relaxed);
        std::uint64_t begin = 0, end = 0;
        constexpr std::size_t kNotRepair = ~std::size_t(0);
        std::size_t repair_range = kNotRepair;
        if (j.repairs != nullptr) {
            repair_range = take_repair_piece(j, begin, end);
        } else if (!j.returned.empty()) {
            // Rows a yielding worker handed back go first (at most one chunk each).
            std::tie(begin, end) = j.returned.back();
            j.returned.pop_back();
            j.returned_rows -= end - begin;
        } else {
            begin = j.next_row;
            if (begin == 0) plan_job(j);
            end = begin < j.gpu_rows ? std::min<std::uint64_t>(j.gpu_rows, begin + j.backend_chunk_rows)
                                     : std::min<std::uint64_t>(j.rows.count, begin + j.cpu_chunk_rows);
            j.next_row = end;
        }
        ++j.running;
        if (j.unassigned() == 0) q->pending_.pop_front();
        const bool more = !q->pending_.empty();
        if (more) runnable_.push_back(q);  // round robin: back of the line
        else q->in_runnable_ = false;
        runnable_changed();
        if (more) notify_work();
        lock.unlock();

        // Reads only the job's submitter-set fields, which nobody writes while it runs.
        std::size_t verified_end = end;
        const auto chunk_start = std::chrono::steady_clock::now();
        ChunkResult r;
        if (repair_range != kNotRepair) r.status = repair_piece(worker, j, repair_range, begin, end);
        else r = run_chunk(worker, j, begin, end, may_yield ? &verified_end : nullptr);
        const double chunk_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - chunk_start).count();
        // The CPU confirmations of a checked primary's verdicts: its time
        // beyond the primary's own; a repair piece is all confirmation.
        const double confirm_s = repair_range != kNotRepair ? chunk_s
                                 : r.primary_seconds.has_value() ? chunk_s - *r.primary_seconds
                                                                 : 0.0;
        if (metrics_ != nullptr) {
            if (repair_range == kNotRepair) metrics_->chunks.fetch_add(1, std::memory_order_relaxed);
            metrics_->progress.fetch_add(1, std::memory_order_relaxed);
        }

        lock.lock();
        ++chunks_run_;
        if (small_job) charge_lane_debt(q->account_, confirm_s);
        if (lane_worker) {
            // q's next small batch may go to a lane worker again.
            --q->lane_running_;
            if (indebted_lane) --indebted_lane_running_;
            runnable_changed();
            if (lane_ready_.load(std::memory_order_acquire)) lane_cv_.notify_one();
        }
        if (r.status == shm::Status::ok && verified_end < end) hand_back(q, index, verified_end, end);
        j.tally += r.tally;
        j.rows_rewritten = j.rows_rewritten || r.rows_rewritten;
        if (r.status != shm::Status::ok && j.status == shm::Status::ok) j.status = r.status;
        --j.running;
        if (j.running == 0 && j.unassigned() == 0) {
            // j's chunks (or its repair pieces) are all done: none runs any
            // more, cancel() leaves it alone, and its slot is not reused before
            // finish_job. Under the groups rule its repair comes first: its
            // pieces go back in line, and the job counts as done (idle()
            // stays false) once the last of them is done.
            if (j.repairs == nullptr && metrics_ != nullptr && backend_.confirms_by_group())
                (j.ledger != nullptr ? metrics_->confirm_batches_groups : metrics_->confirm_batches_strict)
                    .fetch_add(1, std::memory_order_relaxed);
            if (j.ledger != nullptr && start_repair(q, index)) {
                lock.unlock();
                q.reset();
                lock.lock();
                continue;
            }
            j.repairs.reset();
            const shm::Status status = j.status;
            const reference::Tally tally = j.tally;
            --queued_jobs_;
            const bool now_idle = queued_jobs_ == 0;
            lock.unlock();
            q->sink_.finish_job(index, status, tally);
            if (now_idle) idle_cv_.notify_all();
            q.reset();  // may drop the last reference to the session: unmaps outside the lock
            lock.lock();
        } else {
            lock.unlock();
            q.reset();
            lock.lock();
        }
    }
}

}  // namespace sigverify::daemon
