// SPDX-License-Identifier: MIT
// The one thread pool of reference/ (and of the kernels' host entry point):
// a small fixed pool of threads that runs one job on every worker at a time,
// a chunked parallel_for over an index range built on it, and sum_over, how a
// verifier spreads its rows over the pool and adds up the workers' counts.
//
// The calling thread works as worker 0, so a pool of 1 starts no thread.
// Exceptions thrown by a worker are rethrown to the caller of run() (the first
// one wins; the others are dropped). Calls to run() from several threads are
// serialized: one job uses the whole pool.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sigverify::reference {

class WorkerPool {
public:
    // threads = 0 means one per hardware thread.
    explicit WorkerPool(unsigned threads = 0) {
        if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
        size_ = threads;
        try {
            for (unsigned w = 1; w < threads; ++w) workers_.emplace_back([this, w] { worker_loop(w); });
        } catch (...) {
            stop_and_join();  // a thread failed to start: do not leave the others joinable
            throw;
        }
    }

    ~WorkerPool() { stop_and_join(); }

    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    unsigned size() const { return size_; }

    // Runs fn(worker_index) once on every worker (the caller is worker 0) and
    // waits for all of them.
    void run(const std::function<void(unsigned)>& fn) {
        std::lock_guard job_lock(job_mutex_);
        {
            std::lock_guard lock(mutex_);
            job_ = &fn;
            pending_ = unsigned(workers_.size());
            ++generation_;
        }
        wake_.notify_all();
        std::exception_ptr error;
        try {
            fn(0);
        } catch (...) {
            error = std::current_exception();
        }
        std::unique_lock lock(mutex_);
        done_.wait(lock, [&] { return pending_ == 0; });
        job_ = nullptr;
        if (!error) error = worker_error_;
        worker_error_ = nullptr;
        lock.unlock();
        if (error) std::rethrow_exception(error);
    }

    // Calls body(worker, begin, end) over [0, count) in chunks handed out from
    // a shared counter, so uneven rows (invalid ones are cheap) balance out.
    // Ranges never overlap and together cover [0, count) exactly once.
    void parallel_for(std::size_t count, std::size_t chunk,
                      const std::function<void(unsigned, std::size_t, std::size_t)>& body) {
        if (count == 0) return;
        chunk = std::max<std::size_t>(1, chunk);
        if (size_ == 1 || count <= chunk) {
            body(0, 0, count);
            return;
        }
        std::atomic<std::size_t> next{0};
        run([&](unsigned w) {
            for (;;) {
                const std::size_t begin = next.fetch_add(chunk, std::memory_order_relaxed);
                if (begin >= count) break;
                body(w, begin, std::min(count, begin + chunk));
            }
        });
    }

private:
    void stop_and_join() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        for (auto& t : workers_) t.join();
    }

    void worker_loop(unsigned w) {
        std::uint64_t seen = 0;
        for (;;) {
            const std::function<void(unsigned)>* fn;
            {
                std::unique_lock lock(mutex_);
                wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
                if (stopping_) return;
                seen = generation_;
                fn = job_;
            }
            std::exception_ptr error;
            try {
                (*fn)(w);
            } catch (...) {
                error = std::current_exception();
            }
            std::lock_guard lock(mutex_);
            if (error && !worker_error_) worker_error_ = error;
            if (--pending_ == 0) done_.notify_one();
        }
    }

    unsigned size_ = 1;
    std::vector<std::thread> workers_;
    std::mutex job_mutex_;
    std::mutex mutex_;
    std::condition_variable wake_, done_;
    const std::function<void(unsigned)>* job_ = nullptr;
    unsigned pending_ = 0;
    std::uint64_t generation_ = 0;
    bool stopping_ = false;
    std::exception_ptr worker_error_;
};

// Below this many rows, or with a pool of one, the caller verifies alone:
// waking the workers costs more than the rows.
inline constexpr std::size_t kSerialBelow = 64;

// Chunks small enough to balance uneven rows (invalid rows are cheap), large
// enough that the shared counter is not contended.
constexpr std::size_t balanced_chunk(std::size_t count, unsigned workers) {
    return std::clamp<std::size_t>(count / (std::size_t(workers) * 16), 32, 4096);
}

// range(worker, begin, end) -> Counts over [0, count), spread over the pool as
// above; the sum of what the calls returned. Counts: value-initialised zero,
// with +=. Each worker adds into its own slot, so no count is shared.
template <class Counts, class Range>
Counts sum_over(WorkerPool& pool, std::size_t count, const Range& range) {
    if (count == 0) return Counts{};
    if (pool.size() == 1 || count < kSerialBelow) return range(0u, std::size_t{0}, count);
    std::vector<Counts> parts(pool.size());
    pool.parallel_for(count, balanced_chunk(count, pool.size()),
                      [&](unsigned w, std::size_t begin, std::size_t end) { parts[w] += range(w, begin, end); });
    Counts total{};
    for (const Counts& p : parts) total += p;
    return total;
}

}  // namespace sigverify::reference
