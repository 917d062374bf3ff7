// SPDX-License-Identifier: MIT
#include "daemon/backends/deadline_backend.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <thread>

#include "kernels/gpu_verifier.hpp"  // gpu::wait_deadline_s: the one formula of every GPU wait

namespace sigverify::daemon {

namespace {

// A thread's scheduling: its policy (SCHED_OTHER, SCHED_IDLE, ...) and nice.
struct Scheduling {
    int policy = SCHED_OTHER;
    int nice = 0;
    bool operator==(const Scheduling&) const = default;
};

// The calling thread's (Linux: policy and nice are per thread).
Scheduling this_thread_scheduling() {
    Scheduling s;
    s.policy = sched_getscheduler(0);
    errno = 0;
    const int nice = getpriority(PRIO_PROCESS, 0);
    if (errno == 0) s.nice = nice;
    return s;
}

// Gives the calling thread s, as far as it may (a move up is refused to an
// unprivileged thread: it keeps what it has).
void adopt_scheduling(const Scheduling& s) {
    if (s.policy >= 0 && s.policy != sched_getscheduler(0)) {
        sched_param p{};
        (void)sched_setscheduler(0, s.policy, &p);
    }
    (void)setpriority(PRIO_PROCESS, 0, s.nice);
}

}  // namespace

// One worker's call thread and the call it runs. Shared with the thread, so
// that a runner stuck in a hung device outlives the backend.
struct DeadlineBackend::Runner {
    std::mutex mutex;
    std::condition_variable cv;
    // the call (set by the worker, cleared when it is taken back)
    bool pending = false, done = false;
    bool stop = false;       // the backend goes away: the thread ends
    bool abandoned = false;  // the worker gave up on the call: the thread ends after it
    unsigned worker = 0;
    bool adopt = false;         // run the call at the caller's scheduling (CallScheduling::callers)
    Scheduling caller;          // the worker's, when adopt
    Scheduling current;         // this thread's
    wire::RowSpan records{};
    std::vector<std::uint8_t> verdicts;  // the device's, copied out only in time
    ChunkResult result;
    std::thread thread;

    void run(Backend* device) {
        pthread_setname_np(pthread_self(), "sv-gpu-call");
        current = this_thread_scheduling();
        std::unique_lock lock(mutex);
        for (;;) {
            cv.wait(lock, [&] { return pending || stop; });
            if (stop) return;
            const unsigned w = worker;
            const wire::RowSpan rows = records;
            std::uint8_t* const out = verdicts.data();
            const bool change = adopt && !(caller == current);
            const Scheduling wanted = caller;
            lock.unlock();
            if (change) {
                adopt_scheduling(wanted);
                current = this_thread_scheduling();
            }
            const ChunkResult r = device->verify(w, rows, out);
            lock.lock();
            result = r;
            pending = false;
            done = true;
            if (abandoned) return;  // the device is hung: never called again
            // (notified unlocked: the worker wakes to a free mutex)
            lock.unlock();
            cv.notify_all();
            lock.lock();
        }
    }
};

DeadlineBackend::DeadlineBackend(std::unique_ptr<Backend> device, double floor_s, TimeoutHook on_timeout,
                                 CallScheduling scheduling)
    : device_(std::move(device)), floor_s_(floor_s > 0 ? floor_s : 10.0), on_timeout_(std::move(on_timeout)),
      scheduling_(scheduling), runners_(device_->concurrency()) {
    // Every call thread now, from the thread that sets the daemon up: with its
    // ordinary scheduling, not a bulk worker's SCHED_IDLE or nice +10, which a
    // thread started by a bulk worker would inherit -- then each call would
    // wait for an idle time slice twice (the call thread's, then the worker's)
    // and the split planner would learn a slower GPU (-15 to -22 % bulk
    // rows/s on the sleeping GPU, 2 cores). Threads that cannot start are
    // started at their worker's first call.
    for (unsigned w = 0; w < runners_.size(); ++w) {
        try {
            (void)runner(w);
        } catch (...) {
        }
    }
}

DeadlineBackend::~DeadlineBackend() {
    for (auto& r : runners_) {
        if (!r) continue;
        bool left = false;
        {
            std::lock_guard lock(r->mutex);
            r->stop = true;
            left = r->abandoned;
            r->cv.notify_all();
        }
        if (left) r->thread.detach();  // it may never come back: it keeps its runner
        else if (r->thread.joinable()) r->thread.join();
    }
    // A hung device may still be running a call: it is never destroyed.
    if (hung()) (void)device_.release();
}

void DeadlineBackend::set_progress(std::atomic<std::uint64_t>* progress) {
    Backend::set_progress(progress);
    device_->set_progress(progress);
}

bool DeadlineBackend::map_client_memory(const void* base, std::size_t bytes) noexcept {
    return device_->map_client_memory(base, bytes);
}

void DeadlineBackend::unmap_client_memory(const void* base) noexcept {
    // A hung device may still copy from it (a GPU keeps its pin, and the
    // driver's unpin could wait for the hung work): left as it is.
    if (!hung()) device_->unmap_client_memory(base);
}

double DeadlineBackend::deadline_s(std::size_t rows) const {
    return gpu::wait_deadline_s(rows, slowest_rows_per_s_.load(std::memory_order_relaxed), floor_s_);
}

DeadlineBackend::Runner& DeadlineBackend::runner(unsigned worker) {
    std::lock_guard lock(runners_mutex_);
    std::shared_ptr<Runner>& r = runners_[worker];
    if (!r) {
        auto made = std::make_shared<Runner>();
        Backend* const device = device_.get();
        made->thread = std::thread([made, device] { made->run(device); });
        r = std::move(made);
    }
    return *r;
}

void DeadlineBackend::learn(std::size_t rows, double seconds) {
    if (rows < 1024 || !(seconds > 0)) return;  // too small to mean a rate
    const double rate = double(rows) / seconds;
    double seen = slowest_rows_per_s_.load(std::memory_order_relaxed);
    while ((seen == 0 || rate < seen) && !slowest_rows_per_s_.compare_exchange_weak(seen, rate)) {
    }
}

void DeadlineBackend::give_up(std::size_t rows, double waited_s) {
    timeouts_.fetch_add(1, std::memory_order_relaxed);
    if (giving_up_.exchange(true)) return;  // the first reason wins
    char text[256];
    const double rate = slowest_rows_per_s_.load(std::memory_order_relaxed);
    std::snprintf(text, sizeof text,
                  "%s did not finish a call of %zu rows in %.3f s (deadline: --gpu-wait-floor %.3f s + %.0f x its rows "
                  "at %s): taken for hung, left out; the CPU verifies its rows",
                  device_->name().c_str(), rows, waited_s, floor_s_, gpu::kWaitSlack,
                  rate > 0 ? (std::to_string(std::uint64_t(rate)) + " rows/s, the slowest measured").c_str()
                           : "100000 rows/s, none measured yet");
    reason_ = text;
    hung_.store(true, std::memory_order_release);
    // the workers waiting on it stop waiting now
    std::lock_guard lock(runners_mutex_);
    for (auto& r : runners_) {
        if (!r) continue;
        std::lock_guard rl(r->mutex);
        r->cv.notify_all();
    }
    if (on_timeout_) on_timeout_(reason_);
}

ChunkResult DeadlineBackend::verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept {
    if (!chunk_args_ok(worker, concurrency(), records, verdicts) || hung())
        return ChunkResult{shm::Status::backend_error, {}};
    try {
        Runner& r = runner(worker);
        using clock = std::chrono::steady_clock;
        const auto start = clock::now();
        const double budget = deadline_s(records.count);
        const auto deadline = start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(budget));
        std::unique_lock lock(r.mutex);
        if (r.abandoned || r.pending) return ChunkResult{shm::Status::backend_error, {}};
        r.verdicts.assign(records.count, 0);
        r.worker = worker;
        if (scheduling_ == CallScheduling::callers) {
            r.adopt = true;
            r.caller = this_thread_scheduling();
        }
        r.records = records;
        r.done = false;
        r.pending = true;
        lock.unlock();
        r.cv.notify_all();  // unlocked: the call thread wakes to a free mutex
        lock.lock();
        const bool in_time = r.cv.wait_until(lock, deadline, [&] { return r.done || hung(); }) && r.done;
        if (!in_time) {
            r.abandoned = true;  // its thread ends once the call returns, if ever; the device is not called again
            lock.unlock();
            give_up(records.count, std::chrono::duration<double>(clock::now() - start).count());
            return ChunkResult{shm::Status::backend_error, {}};
        }
        r.done = false;
        ChunkResult result = r.result;
        if (result.status == shm::Status::ok && records.count != 0)
            std::memcpy(verdicts, r.verdicts.data(), records.count);
        lock.unlock();
        if (result.status == shm::Status::ok) learn(records.count, std::chrono::duration<double>(clock::now() - start).count());
        return result;
    } catch (...) {
        return ChunkResult{shm::Status::backend_error, {}};  // no thread, no memory: the CPU fallback's turn
    }
}

}  // namespace sigverify::daemon
