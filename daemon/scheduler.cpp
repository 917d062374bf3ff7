#include "daemon/scheduler.hpp"

#include <sched.h>

#include <algorithm>
#include <cstring>

#include "daemon/metrics.hpp"
#include "daemon/session.hpp"

namespace sigverify::daemon {

Scheduler::Scheduler(Backend& backend, Backend* cpu_fallback, std::size_t chunk_rows)
    : backend_(backend),
      cpu_fallback_(cpu_fallback != nullptr && cpu_fallback->concurrency() >= backend.concurrency()
                        ? cpu_fallback
                        : nullptr),
      chunk_rows_(chunk_rows != 0 ? chunk_rows : std::max<std::size_t>(1, backend.preferred_chunk_rows())) {}

Scheduler::~Scheduler() { stop(); }

void Scheduler::start() {
    std::lock_guard lock(mutex_);
    if (!workers_.empty()) return;
    stopping_ = false;
    staging_.assign(backend_.concurrency(), Staging{});
    for (unsigned w = 0; w < backend_.concurrency(); ++w) workers_.emplace_back([this, w] { worker_loop(w); });
}

void Scheduler::submit(const std::shared_ptr<Session>& s, std::uint32_t index) {
    {
        std::lock_guard lock(mutex_);
        s->sched_queue.push_back(index);
        ++queued_jobs_;
        if (!s->in_runnable) {
            s->in_runnable = true;
            runnable_.push_back(s);
            runnable_count_.store(static_cast<std::uint32_t>(runnable_.size()), std::memory_order_release);
        }
    }
    work_cv_.notify_one();
}

void Scheduler::cancel_session(Session& s, shm::Status status) {
    std::vector<std::uint32_t> to_finish;
    {
        std::lock_guard lock(mutex_);
        s.cancelled = true;
        for (std::uint32_t index : s.sched_queue) {
            Job& j = s.jobs[index];
            j.next_row = j.rows.count;
            j.status = status;
            if (j.running == 0) {
                to_finish.push_back(index);
                --queued_jobs_;
            }
        }
        s.sched_queue.clear();
        // Jobs already fully handed out but still running: their last chunk reports status.
        for (Job& j : s.jobs)
            if (j.running != 0) j.status = status;
        if (s.in_runnable) {
            runnable_.erase(std::remove_if(runnable_.begin(), runnable_.end(),
                                           [&](const std::shared_ptr<Session>& p) { return p.get() == &s; }),
                            runnable_.end());
            runnable_count_.store(static_cast<std::uint32_t>(runnable_.size()), std::memory_order_release);
            s.in_runnable = false;
        }
    }
    for (std::uint32_t index : to_finish) s.finish_job(index, status, {});
    idle_cv_.notify_all();
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
    for (auto& t : workers_)
        if (t.joinable()) t.join();
    workers_.clear();
    std::lock_guard lock(mutex_);
    runnable_.clear();
    runnable_count_.store(0, std::memory_order_release);
}

ChunkResult Scheduler::run_row_chunk(unsigned worker, const wire::RowSpan& rows, std::size_t begin,
                                     std::size_t end, wire::Mode mode, std::uint8_t* results) {
    ChunkResult r = backend_.verify(worker, rows, begin, end, mode, results);
    if (r.status != shm::Status::ok && cpu_fallback_ != nullptr) {
        if (metrics_ != nullptr) {
            metrics_->cpu_fallback_chunks.fetch_add(1, std::memory_order_relaxed);
            metrics_->cpu_fallback_rows.fetch_add(end - begin, std::memory_order_relaxed);
        }
        r = cpu_fallback_->verify(worker, rows, begin, end, mode, results);
    }
    return r;
}

ChunkResult Scheduler::run_column_chunk(unsigned worker, const reference::ColumnBatch& columns, std::size_t begin,
                                        std::size_t end, wire::Mode mode, std::uint8_t* results) {
    ChunkResult failed;
    failed.status = shm::Status::backend_error;
    if (worker >= staging_.size() || begin > end || end > columns.count ||
        (mode == wire::Mode::results && results == nullptr && end > begin))
        return failed;
    const std::size_t n = end - begin;
    const std::size_t record = wire::record_size(columns.kind);
    Staging& st = staging_[worker];
    try {
        if (st.rows.size() < n * record) st.rows.resize(n * record);
        if (st.verdicts.size() < n) st.verdicts.resize(n);
    } catch (...) {
        return failed;  // out of memory: the job fails with backend_error, the daemon lives on
    }
    // Copy out of shared memory first: from here on the client cannot change
    // what gets verified.
    for (std::size_t i = 0; i < n; ++i) reference::assemble_record(columns, begin + i, st.rows.data() + i * record);
    const wire::RowSpan staged{columns.kind, 0, columns.encoding, st.rows.data(), n};
    // Always results mode into private verdicts: collect mode needs the
    // per-row verdicts to know which correlate entries to zero.
    const ChunkResult r = run_row_chunk(worker, staged, 0, n, wire::Mode::results, st.verdicts.data());
    if (r.status != shm::Status::ok) return r;
    if (mode == wire::Mode::results) {
        for (std::size_t i = 0; i < n; ++i) results[begin + i] = st.verdicts[i] != 0 ? 1 : 0;
    } else if (columns.tail_size != 0) {
        for (std::size_t i = 0; i < n; ++i)
            if (st.verdicts[i] != 0) std::memset(columns.correlate_at(begin + i), 0, columns.tail_size);
    }
    return r;
}

void Scheduler::worker_loop(unsigned worker) {
    std::unique_lock lock(mutex_);
    for (;;) {
        if (runnable_.empty() && !stopping_) {
            // Busy-poll briefly before sleeping: a condition-variable wakeup
            // costs ~100 us on a loaded VM, longer than a 1-row verification.
            lock.unlock();
            const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(50);
            for (unsigned i = 1; runnable_count_.load(std::memory_order_acquire) == 0; ++i) {
#if defined(__x86_64__) || defined(__i386__)
                __builtin_ia32_pause();
#endif
                if (i % 64 == 0) {
                    if (std::chrono::steady_clock::now() >= spin_until) break;
                    sched_yield();
                }
            }
            lock.lock();
        }
        work_cv_.wait(lock, [&] { return stopping_ || !runnable_.empty(); });
        if (stopping_) return;
        std::shared_ptr<Session> s = std::move(runnable_.front());
        runnable_.pop_front();
        const std::uint32_t index = s->sched_queue.front();
        Job& j = s->jobs[index];
        const std::uint64_t begin = j.next_row;
        const std::uint64_t end = std::min<std::uint64_t>(j.rows.count, begin + chunk_rows_);
        j.next_row = end;
        ++j.running;
        if (j.next_row >= j.rows.count) s->sched_queue.pop_front();
        if (!s->sched_queue.empty()) {
            runnable_.push_back(s);  // round robin: back of the line
            work_cv_.notify_one();
        } else {
            s->in_runnable = false;
        }
        runnable_count_.store(static_cast<std::uint32_t>(runnable_.size()), std::memory_order_release);
        const wire::RowSpan rows = j.rows;
        const bool is_columns = j.is_columns;
        const reference::ColumnBatch columns = j.columns;
        const wire::Mode mode = j.mode;
        std::uint8_t* const results = j.results;
        lock.unlock();

        const ChunkResult r = is_columns ? run_column_chunk(worker, columns, begin, end, mode, results)
                                         : run_row_chunk(worker, rows, begin, end, mode, results);
        if (metrics_ != nullptr) metrics_->chunks.fetch_add(1, std::memory_order_relaxed);

        lock.lock();
        ++chunks_run_;
        j.tally += r.tally;
        if (r.status != shm::Status::ok && j.status == shm::Status::ok) j.status = r.status;
        --j.running;
        if (j.running == 0 && j.next_row >= j.rows.count) {
            const shm::Status status = j.status;
            const reference::Tally tally = j.tally;
            --queued_jobs_;
            const bool now_idle = queued_jobs_ == 0;
            lock.unlock();
            s->finish_job(index, status, tally);
            if (now_idle) idle_cv_.notify_all();
            s.reset();  // may drop the last reference: unmaps outside the lock
            lock.lock();
        } else {
            lock.unlock();
            s.reset();
            lock.lock();
        }
    }
}

}  // namespace sigverify::daemon
