// The one place that decides what runs next.
//
// Every accepted submission becomes a Job of its session. Workers take work in
// chunks of at most chunk_rows rows, round-robin over the sessions that have
// unassigned rows: after a session hands out one chunk it goes to the back of
// the line, so a client's 10-million-row batch is interleaved chunk by chunk
// with everyone else's work and a 1-row batch waits for at most one chunk per
// worker. Within a session jobs start in submission order; the chunks of one
// big job spread over all workers.
//
// Memory is bounded: a session has at most cq_entries jobs (its job table is
// allocated once, at handshake), and the set of runnable sessions is bounded by
// --max-clients.
//
// Column jobs (Opcode::verify_columns) are chunked the same way. A worker
// gathers the chunk's message, key and signature columns into its private
// staging rows (a copy out of shared memory, so a client scribbling on its
// arena cannot change a row between its check and its verification), runs the
// backend on them in results mode, and then publishes: the verdict bytes
// (results mode) or zeroed correlate entries of the valid rows (collect mode).
// The backend interface, the CheckedBackend and the CPU fallback are the row
// path's, unchanged.
#pragma once

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "daemon/backend.hpp"
#include "reference/columns.hpp"

namespace sigverify::daemon {

class Session;
struct Metrics;

class Scheduler {
public:
    Scheduler(Backend& backend, Backend* cpu_fallback, std::size_t chunk_rows);
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    void start();
    // Queues job `index` of session s (its fields must be filled).
    void submit(const std::shared_ptr<Session>& s, std::uint32_t index);
    // Drops the unassigned rows of every job of s. Jobs without running chunks
    // are completed with `status` by this call; jobs with running chunks are
    // completed with `status` by the worker that finishes their last chunk.
    void cancel_session(Session& s, shm::Status status);
    // True when no job is queued or running anywhere.
    bool idle();
    // Waits until idle() or the deadline; returns idle().
    bool wait_idle(std::chrono::steady_clock::time_point deadline);
    // Stops the workers (after their current chunk) and joins them.
    void stop();

    std::size_t chunk_rows() const { return chunk_rows_; }
    std::uint64_t chunks_run() const { return chunks_run_; }
    // Counters the workers bump (chunks, CPU fallbacks); set before start().
    void set_metrics(Metrics* metrics) { metrics_ = metrics; }

private:
    void worker_loop(unsigned worker);
    // Runs rows [begin, end) on the backend, re-running a failed chunk on the
    // CPU fallback when there is one.
    ChunkResult run_row_chunk(unsigned worker, const wire::RowSpan& rows, std::size_t begin, std::size_t end,
                              wire::Mode mode, std::uint8_t* results);
    // Runs rows [begin, end) of a column job through the staging rows of this
    // worker. On failure nothing is published (results stay zero: fail closed;
    // correlates stay as they were).
    ChunkResult run_column_chunk(unsigned worker, const reference::ColumnBatch& columns, std::size_t begin,
                                 std::size_t end, wire::Mode mode, std::uint8_t* results);

    // Private to one worker: packed records (no tail) and their verdicts.
    // Grown on a worker's first column chunk, to at most chunk_rows_ rows.
    struct Staging {
        std::vector<std::uint8_t> rows;
        std::vector<std::uint8_t> verdicts;
    };
    std::vector<Staging> staging_;  // one per worker, sized by start()

    Backend& backend_;
    Backend* cpu_fallback_;  // re-runs chunks the primary backend failed (null: none)
    std::size_t chunk_rows_;
    std::mutex mutex_;
    std::condition_variable work_cv_;
    std::condition_variable idle_cv_;
    std::deque<std::shared_ptr<Session>> runnable_;
    std::vector<std::thread> workers_;
    std::uint64_t queued_jobs_ = 0;    // jobs with unassigned rows or running chunks
    std::atomic<std::uint32_t> runnable_count_{0};  // runnable_.size(), readable without the lock
    std::uint64_t chunks_run_ = 0;
    bool stopping_ = false;
    Metrics* metrics_ = nullptr;
};

}  // namespace sigverify::daemon
