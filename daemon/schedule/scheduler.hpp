// SPDX-License-Identifier: MIT
// The one place that decides what runs next, and the one chunk path.
//
// Every accepted submission becomes a Job in its session's JobQueue. Workers
// take work in chunks of at most chunk_rows rows, round-robin over the queues
// that have unassigned rows: after a queue hands out one chunk it goes to the
// back of the line, so a client's 10-million-row batch is interleaved chunk by
// chunk with everyone else's work. A queue whose next job fits in one chunk
// is served before the round-robin line (the latency lane, at most kLaneBurst
// picks in a row), so a 1-row batch waits for the first worker to finish its
// chunk, however many bulk clients there are, and a flood of small batches
// still leaves the bulk queues every fifth chunk. Within a queue jobs start in submission order; the chunks of one
// big job spread over all workers, and on the CPU backend so do those of a
// small one (chunks down to kMinSpreadRows rows).
//
// Yielding to the lane (set_yield_rows, the CPU backend): a worker verifies
// its chunk in pieces of yield_rows rows, and between pieces looks whether
// a small batch (one chunk or less) waits while no worker is idle. If so it publishes the pieces it
// verified and hands the rest of the chunk back to its job (Job::returned,
// handed out again before the job's next rows; its queue goes to the front
// of the round-robin line), then picks again, so a 1-row batch waits for
// one piece, not for a whole chunk. The bulk chunk the lane burst limit
// forces runs whole (a flood of small batches still leaves the bulk queues
// one full chunk in five). Rows handed back were neither verified
// nor published: every row is verified and published exactly once.
//
// Lane workers (set_lane_workers, the GPU path). On a GPU daemon a chunk is
// 65,536 rows whose worker waits for the GPU, then confirms its INVALID
// verdicts on the CPU (seconds of libsecp256k1 for a chunk of invalid rows),
// and chunks are not cut: a small batch that waits for a worker to finish
// its chunk would wait seconds beside bulk clients. So the last
// lane_workers of the workers serve the latency lane only: they take the
// rows of small batches (jobs of at most kLaneWorkerRows rows, a block's
// signatures) and never a bulk job's, so one of them is free whenever no
// small batch holds it, whatever the bulk clients send. Lane workers take
// the chunks of one job of a queue at a time (JobQueue::lane_running_,
// lane_job_: they may share that job's chunks), so a client's stream of
// small batches holds the lane workers with one batch, never with several
// at once. The other (bulk) workers work as
// before and serve the lane first, except that while a lane worker is idle
// they leave small batches to it (bulk_may_take); when the daemon is alone
// in its CPU scheduling group (daemon/ops/cpu_group.hpp: the unit's cgroup, or
// its own session's autogroup) they run SCHED_IDLE (set_bulk_idle), else
// kBulkNice lower than the lane workers. So a small batch's CPU rows take a
// core from bulk confirmations at once, and so does every hop of a small
// batch (the session thread that reads it, the lane worker that takes it): a
// waking thread of normal policy preempts a SCHED_IDLE one on the spot, where
// beside a nice-10 bulk worker it waited for that worker's slice (measured
// in docs/benchmarks-history.md §13). The bulk workers still get every cycle the daemon's other threads
// leave, and the kernel weighs the group against other processes as before,
// so only the daemon's own latency work goes first; in a group shared with
// other processes SCHED_IDLE would starve them behind any busy neighbour. A small batch planned while every
// bulk worker is busy splits its rows for the GPU and the lane workers'
// cores only (plan_job): one lane worker waits on its launch, so its CPU
// share is sized for the others (sized for both, a block's CPU share ran
// past its launch and held both lane workers, a 1-row batch waiting), and a
// share that would lengthen the launch by at most 1/16 goes to the GPU with
// the rest (SplitPlanner::lane_gpu_rows): the other lane worker stays free for the
// next small batch (docs/benchmarks-history.md §13). A lane worker's GPU share launches on
// the GPU's lane slot (the lane slot lives in GpuBackend, one per GPU: its own stream
// and buffers, which no bulk worker uses), so it never queues behind a bulk
// launch: start() tells the backend which workers are lane workers
// (Backend::set_lane_workers, passed on by StripedBackend and CheckedBackend
// to each GPU). The kernel still shares the GPU's SMs with the bulk launches
// running there (it waits for SMs, at most about one wave). Confirmations
// of small batches are charged to the client: the CPU confirmation time of
// every chunk of a small batch (its time beyond the primary's own,
// ChunkResult::primary_seconds), wherever it ran, and its job-end repair add
// to the lane debt of the queue's account (the client's uid, given to
// make_queue), which is repaid at kLaneDebtRepay seconds a second. A bulk
// batch's confirmations (a node's own multisig attempts) are not the lane's
// and charge nothing. An
// account owing more than kLaneDebtLimit holds at most one lane worker at a
// time, whatever its sessions, and lane workers serve accounts that owe
// nothing first; its other small batches wait for that lane worker or go to
// the bulk workers like bulk work (no lane priority, no yield). So the
// invalid rows of any client's small batches cost the lane at most one
// worker, and an honest client's small batch always finds the other.
// Every chunk still takes the one chunk path below (stage, verify under the
// same confirmation rule, publish): only who runs it changes.
//
// Every chunk, rows or columns, takes the same three steps in its worker:
//   1. stage:   copy the chunk's records out of shared memory into the
//               worker's private rows (daemon/memory/staging.hpp);
//   2. verify:  the backend turns the private records into private verdicts
//               (results mode only; a failed chunk is re-run on the CPU
//               fallback when there is one). Multisig jobs on a checked
//               (GPU) backend use the groups confirmation rule
//               (daemon/confirm/confirmation.hpp): their grouping fields are staged
//               too, and registered in the job's GroupLedger;
//   3. publish: the verdicts go to the client in the job's mode, by the one
//               publish rule (shm_protocol/verdict_publish.hpp): result bytes,
//               or the tails / correlate entries of valid rows zeroed.
// A chunk that fails publishes nothing: results stay zero (fail closed),
// tails stay as they were. Under the groups rule, once a job's chunks are
// all done, libsecp256k1 re-verifies the INVALID rows of groups that more
// than one chunk held (GroupLedger repairs) before the completion is posted:
// one pass over each chunk concerned, cut into pieces that are handed out
// like chunks (any worker, the lane first, round robin); a repair piece that
// cannot run fails the job.
//
// Progress: every chunk, yield piece and repair piece a worker finishes
// moves Metrics::progress, which the systemd watchdog reads (notify.hpp):
// a worker busy on a long repair is alive, one stuck in a call is not.
//
// Batch split: with a CPU fallback and a SplitPlanner, the rows of a batch
// that the CPU workers can verify before a GPU launch returns go to the CPU
// fallback directly, spread over the workers (a block-sized batch takes
// min(GPU, CPU) or less); the rest go to the backend.
//
// Memory is bounded: a queue has a fixed job table (cq_entries slots,
// allocated at handshake), and the set of runnable queues is bounded by
// --max-clients.
//
// Lifetime: the scheduler holds a queue only through the shared_ptr given to
// submit() (in practice one that shares ownership of the session), from
// submit until the queue has no runnable work and no running chunk; so the
// client memory a chunk writes into stays mapped until that chunk finished.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "daemon/backends/backend.hpp"
#include "daemon/schedule/job.hpp"
#include "daemon/schedule/pick_policy.hpp"
#include "daemon/backends/split_planner.hpp"
#include "daemon/memory/staging.hpp"

namespace sigverify::daemon {

struct Metrics;
class Scheduler;

// One session's jobs: a fixed table of job slots and the scheduler's queue
// over them. Created by Scheduler::make_queue, owned by the session. The
// session fills a FREE slot (one not submitted, or finished) through job()
// and then submits it; everything else in here is the scheduler's, guarded
// by its mutex.
class JobQueue {
public:
    Job& job(std::uint32_t index) { return jobs_[index]; }
    std::uint32_t slots() const { return static_cast<std::uint32_t>(jobs_.size()); }

private:
    friend class Scheduler;
    JobQueue(JobSink& sink, std::uint32_t slots) : sink_(sink), jobs_(slots) {}

    JobSink& sink_;
    std::vector<Job> jobs_;
    std::deque<std::uint32_t> pending_;  // jobs with unassigned rows, in submission order
    bool in_runnable_ = false;           // in the scheduler's runnable line
    unsigned lane_running_ = 0;          // chunks of this queue lane workers run
    std::uint32_t lane_job_ = 0;         // the job they belong to (while lane_running_ != 0)
    std::uint32_t account_ = 0;          // whose lane debt its confirmations add to (the client's uid)
};

class Scheduler {
public:
    // Smallest chunk a batch is cut into to spread it over the workers.
    static constexpr std::uint64_t kMinSpreadRows = 16;
    // Lane picks in a row before the round-robin line's front is served.
    static constexpr unsigned kLaneBurst = 4;
    // Piece size for yielding to the lane on the CPU backend (~0.5 ms of one
    // core verifying ECDSA rows).
    static constexpr std::size_t kYieldRows = 16;
    // Rows of a job-end group repair a worker takes at a time (it re-verifies
    // at most these); each piece counts as progress for the watchdog (~50 ms
    // of one core when every row is re-verified).
    static constexpr std::size_t kRepairPieceRows = 1024;
    // Workers the GPU path keeps for the latency lane (see Lane workers above).
    static constexpr unsigned kLaneWorkers = 2;
    // The largest batch a lane worker takes (a block's signature checks).
    static constexpr std::uint64_t kLaneWorkerRows = 16384;
    // Nice offset of the bulk workers over the lane workers (weights 1024 :
    // 110) where SCHED_IDLE is refused, or without set_bulk_idle.
    static constexpr int kBulkNice = 10;
    // Lane debt (see Lane workers above): confirmation seconds an account may
    // owe before it holds at most one lane worker, and how fast it is repaid
    // (seconds a second: a tenth of a core). A block of 4,096 invalid rows
    // (~160 ms of libsecp256k1) puts its client in debt for about 1.6 s; an
    // honest block's failed multisig attempts (a few hundred rows, strict
    // rule) stay below the limit.
    static constexpr double kLaneDebtLimit = 0.050;
    static constexpr double kLaneDebtRepay = 0.1;

    Scheduler(Backend& backend, Backend* cpu_fallback, std::size_t chunk_rows);
    ~Scheduler();
    Scheduler(const Scheduler&) = delete;
    Scheduler& operator=(const Scheduler&) = delete;

    void start();
    // A queue of `slots` jobs whose completions go to sink; the confirmation
    // time of its chunks is charged to `account` (the client's uid: its
    // sessions share one lane debt).
    std::unique_ptr<JobQueue> make_queue(JobSink& sink, std::uint32_t slots, std::uint32_t account = 0);
    // Queues job `index` of q (its fields must be filled). q's owner must stay
    // alive while the scheduler holds q (see Lifetime above).
    void submit(const std::shared_ptr<JobQueue>& q, std::uint32_t index);
    // Drops the unassigned rows of every job of q. Jobs without running chunks
    // are completed with `status` by this call; jobs with running chunks are
    // completed with `status` by the worker that finishes their last chunk.
    void cancel(JobQueue& q, shm::Status status);
    // Cancels the jobs of q whose user_tag is `tag` and that have not
    // completed: their unassigned rows are dropped, chunks already running
    // finish and publish, and each job completes with Status::cancelled (by
    // this call when no chunk of it runs, else by the worker that finishes
    // its last chunk). Returns how many jobs it cancelled (0: none in flight
    // with that tag). Called by q's owner, the only thread that submits to q.
    std::size_t cancel_job(JobQueue& q, std::uint64_t tag);
    // True when no job is queued or running anywhere.
    bool idle();
    // Waits until idle() or the deadline; returns idle().
    bool wait_idle(std::chrono::steady_clock::time_point deadline);
    // Stops the workers (after their current chunk) and joins them.
    void stop();

    // A session's segment, which the backend may read rows from in place
    // (Backend::map_client_memory); false: stage that session's rows.
    bool map_client_memory(const void* base, std::size_t bytes) noexcept {
        return backend_.map_client_memory(base, bytes);
    }
    // Called when no chunk of it can be in flight (the session is being destroyed).
    void unmap_client_memory(const void* base) noexcept { backend_.unmap_client_memory(base); }

    std::size_t chunk_rows() const { return chunk_rows_; }
    std::uint64_t chunks_run() const { return chunks_run_; }
    // Counters the workers bump (chunks, CPU fallbacks); set before start().
    // Its progress counter goes to the backends too (Backend::set_progress).
    void set_metrics(Metrics* metrics);
    // Splits each batch between the backend and the CPU fallback (when there
    // is one) by measured rates, and learns from every chunk; set before
    // start(). Without a planner every row goes to the backend.
    void set_planner(SplitPlanner* planner) { planner_ = planner; }
    // Workers yield to the latency lane every `rows` rows of a chunk (see
    // above; 0: never, the default). Only chunks verified whole by the
    // scheduler's backend without a CPU fallback (the CPU backend) yield.
    // Set before start().
    void set_yield_rows(std::size_t rows) { yield_rows_ = rows; }
    // The last `workers` of the backend's concurrency() workers serve only
    // the latency lane (see Lane workers above; at most concurrency() - 1;
    // 0: none, the default). Set before start().
    void set_lane_workers(unsigned workers) { lane_workers_ = workers; }
    // With lane workers, the other workers run SCHED_IDLE (on: see Lane
    // workers above), or, where the kernel refuses it, kBulkNice above
    // --worker-nice. Set before start().
    void set_bulk_idle(bool on) { bulk_idle_ = on; }
    // Each worker thread raises its own nice value by `offset` when it starts
    // (--worker-nice; unprivileged). Set before start().
    void set_worker_nice(int offset) { worker_nice_ = offset; }
    // Worker w keeps to the (w mod n)-th of the n cores the process may run
    // on (--pin-workers; the CPU backend). Set before start().
    void set_pin_workers(bool pin) { pin_workers_ = pin; }
    // Chunks whose rest a worker handed back to yield to the lane.
    std::uint64_t chunks_yielded() {
        std::lock_guard lock(mutex_);
        return chunks_yielded_;
    }

private:
    // One piece of work: taken under the lock, run without it, finished under it.
    struct Piece {
        static constexpr std::size_t kNotRepair = ~std::size_t(0);
        std::shared_ptr<JobQueue> q;
        std::uint32_t index = 0;                 // q's job
        std::uint64_t begin = 0, end = 0;        // its rows
        std::size_t repair_range = kNotRepair;   // a job-end repair piece: its range
        bool may_yield = true;                   // may be cut for a waiting small batch
        bool lane_worker = false;                // taken by a lane worker
        bool indebted_lane = false;              // ... of an account in lane debt
        bool small_job = false;                  // its confirmations are charged to the lane debt
    };
    struct PieceDone {
        ChunkResult r;
        std::size_t verified_end = 0;  // where a yielding chunk stopped (end: not cut)
        double confirm_s = 0;          // its CPU confirmation time
    };
    // The loop: wait -> take a piece -> run it -> finish it.
    void worker_loop(unsigned worker);
    // A worker's name, nice value or SCHED_IDLE, and core (its own thread).
    void prepare_worker_thread(unsigned worker, bool lane_worker);
    // Waits (lock held) until work this kind of worker may take could be there; false: stopping.
    bool wait_for_work(std::unique_lock<std::mutex>& lock, bool lane_worker);
    // Picks a queue (pick_policy.hpp) and takes its next piece (lock held); false: nothing for this worker.
    bool take_piece(bool lane_worker, Piece& p);
    // Verifies and publishes the piece (lock not held).
    PieceDone run_piece(unsigned worker, const Piece& p);
    // Its accounting, hand-back and, for a job's last piece, the repair or
    // the completion (lock held on entry and on return; dropped around the
    // completion and the queue's release).
    void finish_piece(std::unique_lock<std::mutex>& lock, Piece& p, const PieceDone& done);
    // Stage (or hand in place), verify, publish rows [begin, end) of job j (see
    // above). With may_yield, *verified_end is where it stopped to yield to
    // the lane: rows [begin, *verified_end) are published, the rest untouched.
    ChunkResult run_chunk(unsigned worker, const Job& j, std::size_t begin, std::size_t end,
                          std::size_t* verified_end = nullptr);
    // run_chunk's step 1: rows [begin, end) of j as the backend verifies them
    // (in place, or copied into st). False: a registered file shrank.
    bool stage_chunk(const Job& j, std::size_t begin, std::size_t end, bool in_place, Staging& st,
                     wire::RowSpan& staged);
    // run_chunk's step 2 on the CPU backend: staged rows in pieces of
    // yield_rows_, stopping after a piece when lane_waits(); verified = the
    // rows done (their verdicts in verdicts[0, verified)).
    ChunkResult verify_yielding(unsigned worker, const wire::RowSpan& staged, std::uint8_t* verdicts,
                                std::size_t& verified);
    // Whether a worker in a chunk should yield: lane work waits, no worker is idle.
    bool lane_waits() const noexcept {
        return lane_waiting_.load(std::memory_order_acquire) && idle_workers_.load(std::memory_order_acquire) == 0;
    }
    // Whether q's next job is latency-lane work: few enough unassigned rows
    // for one chunk, and none of them handed back by a yielding worker.
    bool lane_work(const JobQueue& q) const;
    // Whether a lane worker may take q's next chunk: its next job is a small
    // batch (at most kLaneWorkerRows rows) and no lane worker runs a chunk of q.
    bool lane_worker_work(const JobQueue& q) const;
    // Whether a bulk worker may take q's next chunk: always, except a small
    // batch's while a lane worker is idle (it takes it).
    bool bulk_may_take(const JobQueue& q) const;
    // Whether q's account owes the lane more than kLaneDebtLimit (as of the
    // last runnable_changed, so every predicate above holds between two calls).
    bool indebted(const JobQueue& q) const;
    // Adds seconds of confirmations to an account's lane debt (lock held).
    void charge_lane_debt(std::uint32_t account, double seconds);
    // Wakes a bulk worker, and a lane worker when lane work waits (after runnable_changed).
    void notify_work();
    // Rows [begin, end) of q's job `index` go back to be handed out again (lock held).
    void hand_back(const std::shared_ptr<JobQueue>& q, std::uint32_t index, std::uint64_t begin, std::uint64_t end);
    // After runnable_ changed: the counts workers read without the lock.
    void runnable_changed();
    // Verifies staged records on the backend, re-running a failed chunk on the
    // CPU fallback when there is one.
    // on_cpu: straight to the CPU fallback (the planner's CPU share).
    ChunkResult verify_staged(unsigned worker, const wire::RowSpan& records, const ChunkGroups* groups, bool on_cpu,
                              std::uint8_t* verdicts);
    // Job j's first chunk is about to be handed out: its rule and split.
    void plan_job(Job& j) const;
    // Whether job j (its first chunk about to be handed out) uses the groups rule.
    bool use_groups_rule(const Job& j) const;
    // Groups rule, job end (lock held; j's chunks are all done): takes the
    // ledger's repairs (the INVALID rows of groups more than one chunk held,
    // in the first chunk that met each) and puts q's job `index` back in line
    // with their rows as its unassigned work. False when there is nothing to
    // repair (or the job failed): the job is complete.
    bool start_repair(const std::shared_ptr<JobQueue>& q, std::uint32_t index);
    // The next repair piece of j (lock held; j.repair_rows_left != 0): rows
    // [begin, end) of range j.repair_range, which it returns.
    std::size_t take_repair_piece(Job& j, std::uint64_t& begin, std::uint64_t& end);
    // libsecp256k1 re-verifies the rows of [begin, end) (of repair range
    // `range`) that the repair wants and publishes their verdicts. Not ok: the
    // piece could not run, and the job must fail.
    shm::Status repair_piece(unsigned worker, const Job& j, std::size_t range, std::uint64_t begin,
                             std::uint64_t end);

    std::vector<Staging> staging_;  // one per worker, sized by start()

    Backend& backend_;
    Backend* cpu_fallback_;  // re-runs chunks the primary backend failed (null: none)
    std::size_t chunk_rows_;
    std::mutex mutex_;
    std::condition_variable work_cv_;
    std::condition_variable lane_cv_;  // lane workers wait here (work_cv_ wakes bulk workers)
    std::condition_variable idle_cv_;
    std::deque<std::shared_ptr<JobQueue>> runnable_;
    std::vector<std::thread> workers_;
    std::uint64_t queued_jobs_ = 0;    // jobs with unassigned rows or running chunks
    std::atomic<std::uint32_t> runnable_count_{0};  // runnable_.size(), readable without the lock
    std::uint64_t chunks_run_ = 0;
    unsigned lane_streak_ = 0;  // small-batch picks since a bulk queue was last served
    std::vector<QueueFacts> pick_facts_;  // take_piece's scratch (lock held)
    std::size_t yield_rows_ = 0;
    int worker_nice_ = 0;
    unsigned lane_workers_ = 0;
    unsigned bulk_workers_ = 0;  // workers [0, bulk_workers_) take any work; the rest the lane's
    bool bulk_idle_ = false;
    std::atomic<bool> lane_ready_{false};  // some runnable queue has work a lane worker may take
    std::atomic<bool> bulk_ready_{false};  // some runnable queue has work a bulk worker may take
    unsigned idle_lane_workers_ = 0;       // lane workers waiting for lane work
    struct LaneDebt {
        double seconds = 0;                          // owed as of `at`
        std::chrono::steady_clock::time_point at{};
        bool over_limit = false;                     // as of the last runnable_changed
        // What is owed at `now`, kLaneDebtRepay a second repaid since `at` (<= 0: nothing).
        double owed(std::chrono::steady_clock::time_point now) const {
            return seconds - kLaneDebtRepay * std::chrono::duration<double>(now - at).count();
        }
    };
    std::unordered_map<std::uint32_t, LaneDebt> lane_debts_;  // accounts that owe anything
    unsigned indebted_lane_running_ = 0;   // lane workers running a chunk of an indebted account
    bool pin_workers_ = false;
    std::uint64_t chunks_yielded_ = 0;
    std::atomic<bool> lane_waiting_{false};     // some runnable queue has lane work
    std::atomic<unsigned> idle_workers_{0};     // workers looking for work (spinning or asleep)
    bool stopping_ = false;
    Metrics* metrics_ = nullptr;
    SplitPlanner* planner_ = nullptr;
};

}  // namespace sigverify::daemon
