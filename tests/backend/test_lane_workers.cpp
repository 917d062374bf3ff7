// SPDX-License-Identifier: MIT
// Lane workers (daemon/schedule/scheduler.hpp, the GPU path; issue 29.6), driven
// without a session: a backend whose bulk chunks do not return until the test
// lets them (a GPU launch, or the CPU confirmations of a chunk of invalid
// rows), and small jobs beside them.
//   * while every bulk worker holds a chunk, a small batch is verified at
//     once by a lane worker, with libsecp256k1's verdicts; without lane
//     workers it waits for a bulk chunk to end (the defect);
//   * one queue's small batches hold one lane worker at a time, so another
//     queue's small batch still gets the other one;
//   * a small batch split while every bulk worker is busy gives the CPU the
//     share of the lane workers that do not wait on its GPU launch.
#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "daemon/ops/metrics.hpp"
#include "daemon/schedule/scheduler.hpp"
#include "daemon/backends/split_planner.hpp"
#include "reference/row_generator.hpp"

using namespace sigverify;
using daemon::ChunkResult;

namespace {

constexpr std::size_t kChunkRows = 64;
constexpr unsigned kWorkers = 4;  // 2 bulk + 2 lane
// Chunks of this many rows spend kConfirmTime in (modelled) CPU confirmations.
constexpr std::size_t kConfirmedRows = 24;
constexpr auto kConfirmTime = std::chrono::milliseconds(400);

// libsecp256k1's verdicts; chunks of at least hold_rows rows wait in verify()
// until release() (what a bulk chunk's worker does on a GPU daemon).
class HoldingBackend final : public daemon::Backend {
public:
    std::string name() const override { return "holding"; }
    unsigned concurrency() const override { return kWorkers; }
    std::size_t preferred_chunk_rows() const override { return kChunkRows; }
    ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override {
        ChunkResult r;
        if (records.count == kConfirmedRows) {
            // A chunk of invalid rows on a checked GPU: a short launch, then
            // long CPU confirmations (the time beyond primary_seconds).
            std::this_thread::sleep_for(kConfirmTime);
            r.primary_seconds = 0.001;
        }
        if (records.count >= kChunkRows) {
            std::unique_lock lock(mutex_);
            ++held_;
            cv_.notify_all();
            cv_.wait(lock, [&] { return released_; });
            --held_;
            if (bulk_confirm_time.count() != 0) {  // a bulk chunk of invalid rows' confirmations
                lock.unlock();
                std::this_thread::sleep_for(bulk_confirm_time);
                r.primary_seconds = 0.001;
            }
        }
        r.tally = cpu_[worker].run(records, 0, records.count, wire::Mode::results, verdicts);
        return r;
    }
    // Each chunk of at least kChunkRows rows, once released, spends this long
    // in (modelled) confirmations.
    std::chrono::milliseconds bulk_confirm_time{0};
    void release() {
        std::lock_guard lock(mutex_);
        released_ = true;
        cv_.notify_all();
    }
    // Waits until n chunks are held at once.
    bool wait_held(unsigned n) {
        std::unique_lock lock(mutex_);
        return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return held_ >= n; });
    }

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    unsigned held_ = 0;
    bool released_ = false;
    reference::RowVerifier cpu_[kWorkers];
};

struct Sink final : daemon::JobSink {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<std::pair<std::uint32_t, shm::Status>> done;
    void finish_job(std::uint32_t index, shm::Status status, const reference::Tally&) override {
        std::lock_guard lock(mutex);
        done.emplace_back(index, status);
        cv.notify_all();
    }
    bool wait_for(std::uint32_t index, std::chrono::milliseconds limit) {
        std::unique_lock lock(mutex);
        return cv.wait_for(lock, limit, [&] {
            for (const auto& d : done)
                if (d.first == index) return true;
            return false;
        });
    }
};

struct Rows {
    std::vector<std::uint8_t> bytes;
    wire::RowSpan span;
    std::vector<std::uint8_t> truth;
    std::vector<std::uint8_t> results;
};

// n ECDSA rows: signed ones (a third invalid) for small batches; for a bulk
// batch only the count matters (a zero row is an invalid key for everyone).
Rows make_rows(std::size_t n, bool signed_rows) {
    Rows r;
    const std::size_t tail = wire::canonical_tail_size(wire::Table::ecdsa);
    if (signed_rows) {
        reference::GenOptions o;
        o.table = wire::Table::ecdsa;
        o.count = n;
        o.invalid_rate = 0.3;
        o.seed = 29;
        r.bytes = reference::generate_rows(o);
    } else {
        r.bytes.assign(n * wire::stride(wire::RecordKind::ecdsa, tail), 0);
    }
    r.span = wire::RowSpan{wire::RecordKind::ecdsa, tail, wire::SigEncoding::opaque, r.bytes.data(), n};
    r.truth.resize(n);
    reference::Verifier(1).verify(r.span, r.truth.data());
    r.results.assign(n, 0);
    return r;
}

daemon::Job job_of(Rows& r) {
    daemon::Job j;
    j.rows = r.span;
    j.results = r.results.data();
    return j;
}

// Releases the held chunks when a test ends, also by a failed REQUIRE (before
// the scheduler, declared earlier, joins its workers).
struct ReleaseAtExit {
    HoldingBackend& backend;
    ~ReleaseAtExit() { backend.release(); }
};

// A bulk batch: more rows than a lane worker takes.
constexpr std::size_t kBulkRows = daemon::Scheduler::kLaneWorkerRows + kChunkRows;

}  // namespace

TEST_CASE("lane workers: a small batch is verified while every bulk worker holds a chunk", "[scheduler][lane]") {
    const bool lanes = GENERATE(true, false);
    HoldingBackend backend;
    daemon::CpuBackend fallback(kWorkers);
    daemon::Scheduler scheduler(backend, &fallback, kChunkRows);
    ReleaseAtExit release_at_exit{backend};
    if (lanes) scheduler.set_lane_workers(daemon::Scheduler::kLaneWorkers);
    scheduler.start();
    Sink bulk_sink, small_sink;
    std::shared_ptr<daemon::JobQueue> bulk_q = scheduler.make_queue(bulk_sink, 1);
    std::shared_ptr<daemon::JobQueue> small_q = scheduler.make_queue(small_sink, 1);
    Rows bulk = make_rows(kBulkRows, false), small = make_rows(8, true);
    bulk_q->job(0) = job_of(bulk);
    scheduler.submit(bulk_q, 0);
    // Every worker that takes bulk work now holds a chunk of it.
    const unsigned bulk_workers = lanes ? kWorkers - daemon::Scheduler::kLaneWorkers : kWorkers;
    REQUIRE(backend.wait_held(bulk_workers));
    small_q->job(0) = job_of(small);
    scheduler.submit(small_q, 0);
    if (lanes) {
        REQUIRE(small_sink.wait_for(0, std::chrono::seconds(10)));
        CHECK(small.results == small.truth);
    } else {
        // The defect: no worker is free until a bulk chunk ends.
        CHECK_FALSE(small_sink.wait_for(0, std::chrono::milliseconds(300)));
    }
    backend.release();
    REQUIRE(small_sink.wait_for(0, std::chrono::seconds(30)));
    REQUIRE(bulk_sink.wait_for(0, std::chrono::seconds(30)));
    CHECK(small.results == small.truth);
    CHECK(bulk.results == bulk.truth);
    scheduler.stop();
}

TEST_CASE("lane workers: one queue's small batches hold one lane worker, another queue's get the other",
          "[scheduler][lane]") {
    HoldingBackend backend;
    daemon::CpuBackend fallback(kWorkers);
    daemon::Scheduler scheduler(backend, &fallback, kChunkRows);
    ReleaseAtExit release_at_exit{backend};
    scheduler.set_lane_workers(daemon::Scheduler::kLaneWorkers);
    scheduler.start();
    Sink bulk_sink, flood_sink, honest_sink;
    std::shared_ptr<daemon::JobQueue> bulk_q = scheduler.make_queue(bulk_sink, 1);
    std::shared_ptr<daemon::JobQueue> flood_q = scheduler.make_queue(flood_sink, 3);
    std::shared_ptr<daemon::JobQueue> honest_q = scheduler.make_queue(honest_sink, 1);
    Rows bulk = make_rows(kBulkRows, false);
    bulk_q->job(0) = job_of(bulk);
    scheduler.submit(bulk_q, 0);
    REQUIRE(backend.wait_held(kWorkers - daemon::Scheduler::kLaneWorkers));
    // Three small batches of one chunk each that are held too (a client's
    // small batches of invalid rows, confirmed for long): the first holds a
    // lane worker; the others wait for that one, not for the second.
    std::vector<Rows> flood;
    for (int k = 0; k < 3; ++k) flood.push_back(make_rows(kChunkRows, false));
    for (std::uint32_t k = 0; k < 3; ++k) {
        flood_q->job(k) = job_of(flood[k]);
        scheduler.submit(flood_q, k);
    }
    REQUIRE(backend.wait_held(kWorkers - daemon::Scheduler::kLaneWorkers + 1));
    Rows honest = make_rows(8, true);
    honest_q->job(0) = job_of(honest);
    scheduler.submit(honest_q, 0);
    REQUIRE(honest_sink.wait_for(0, std::chrono::seconds(10)));
    CHECK(honest.results == honest.truth);
    CHECK_FALSE(flood_sink.wait_for(0, std::chrono::milliseconds(1)));
    backend.release();
    for (std::uint32_t k = 0; k < 3; ++k) REQUIRE(flood_sink.wait_for(k, std::chrono::seconds(30)));
    REQUIRE(bulk_sink.wait_for(0, std::chrono::seconds(30)));
    for (const Rows& f : flood) CHECK(f.results == f.truth);
    CHECK(bulk.results == bulk.truth);
    scheduler.stop();
}

TEST_CASE("lane workers: a block beside busy bulk workers goes whole to the GPU, no lane worker held "
          "for a CPU share",
          "[scheduler][lane][split]") {
    HoldingBackend backend;
    daemon::CpuBackend fallback(kWorkers);
    daemon::Scheduler scheduler(backend, &fallback, kChunkRows);
    ReleaseAtExit release_at_exit{backend};
    daemon::Metrics metrics;
    daemon::SplitPlanner planner;  // the default estimates: 3 ms a launch, 40 us a row on a core
    scheduler.set_metrics(&metrics);
    scheduler.set_planner(&planner);
    constexpr unsigned lanes = daemon::Scheduler::kLaneWorkers;
    scheduler.set_lane_workers(lanes);
    scheduler.start();
    Sink bulk_sink, block_sink;
    std::shared_ptr<daemon::JobQueue> bulk_q = scheduler.make_queue(bulk_sink, 1);
    std::shared_ptr<daemon::JobQueue> block_q = scheduler.make_queue(block_sink, 1);
    Rows bulk = make_rows(kBulkRows, false);
    bulk_q->job(0) = job_of(bulk);
    scheduler.submit(bulk_q, 0);
    REQUIRE(backend.wait_held(kWorkers - lanes));
    const std::uint64_t bulk_cpu_rows = metrics.split_cpu_rows.load();
    // A block while every bulk worker holds a chunk: the lane workers'
    // batch. Split, one lane worker waited on its launch and the other
    // verified its CPU share for the launch's length (the planner would give
    // that worker these rows), which shortened the launch by microseconds,
    // and a 1-row batch meanwhile waited for a lane worker (on a GPU daemon,
    // whose chunks are 65,536 rows, the block is one launch and the other
    // lane worker is now free; latency bench, docs/benchmarks-history.md §13).
    constexpr std::size_t n = 4096;
    REQUIRE(planner.gpu_rows(n, lanes > 1 ? lanes - 1 : 1) < n);
    Rows block = make_rows(n, false);
    block_q->job(0) = job_of(block);
    scheduler.submit(block_q, 0);
    REQUIRE(backend.wait_held(kWorkers - lanes + 1));  // its first GPU chunk: planned
    CHECK(metrics.split_cpu_rows.load() - bulk_cpu_rows == 0);  // no CPU share
    backend.release();
    REQUIRE(block_sink.wait_for(0, std::chrono::seconds(30)));
    REQUIRE(bulk_sink.wait_for(0, std::chrono::seconds(30)));
    CHECK(block.results == block.truth);
    CHECK(bulk.results == bulk.truth);
    scheduler.stop();
}

TEST_CASE("lane workers: a client owing the lane confirmation time holds at most one lane worker",
          "[scheduler][lane][hostile]") {
    HoldingBackend backend;
    daemon::CpuBackend fallback(kWorkers);
    daemon::Scheduler scheduler(backend, &fallback, kChunkRows);
    ReleaseAtExit release_at_exit{backend};
    daemon::Metrics metrics;
    scheduler.set_metrics(&metrics);
    scheduler.set_lane_workers(daemon::Scheduler::kLaneWorkers);
    scheduler.start();
    constexpr std::uint32_t hostile_uid = 1001, honest_uid = 1002;
    Sink bulk_sink, first_sink, a_sink, b_sink, honest_sink;
    std::shared_ptr<daemon::JobQueue> bulk_q = scheduler.make_queue(bulk_sink, 1);
    std::shared_ptr<daemon::JobQueue> first_q = scheduler.make_queue(first_sink, 1, hostile_uid);
    std::shared_ptr<daemon::JobQueue> a_q = scheduler.make_queue(a_sink, 1, hostile_uid);
    std::shared_ptr<daemon::JobQueue> b_q = scheduler.make_queue(b_sink, 1, hostile_uid);
    std::shared_ptr<daemon::JobQueue> honest_q = scheduler.make_queue(honest_sink, 1, honest_uid);
    Rows bulk = make_rows(kBulkRows, false);
    bulk_q->job(0) = job_of(bulk);
    scheduler.submit(bulk_q, 0);
    REQUIRE(backend.wait_held(kWorkers - daemon::Scheduler::kLaneWorkers));
    // The hostile client's first small batch costs a lane worker 400 ms of
    // confirmations: from then on it owes the lane that time.
    Rows first = make_rows(kConfirmedRows, false);
    first_q->job(0) = job_of(first);
    scheduler.submit(first_q, 0);
    REQUIRE(first_sink.wait_for(0, std::chrono::seconds(10)));
    // Two more, from two other sessions of the same client, then an honest
    // client's 1-row batch: one lane worker is the hostile client's, the other
    // verifies the honest batch at once (before, both took the hostile
    // batches and the honest one waited 400 ms).
    Rows a = make_rows(kConfirmedRows, false), b = make_rows(kConfirmedRows, false), honest = make_rows(1, true);
    a_q->job(0) = job_of(a);
    scheduler.submit(a_q, 0);
    b_q->job(0) = job_of(b);
    scheduler.submit(b_q, 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const auto t0 = std::chrono::steady_clock::now();
    honest_q->job(0) = job_of(honest);
    scheduler.submit(honest_q, 0);
    REQUIRE(honest_sink.wait_for(0, std::chrono::seconds(10)));
    const double honest_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    INFO("honest 1-row batch: " << honest_ms << " ms");
    CHECK(honest_ms < 200.0);
    CHECK(honest.results == honest.truth);
    backend.release();  // the bulk workers take what the lane left
    REQUIRE(a_sink.wait_for(0, std::chrono::seconds(30)));
    REQUIRE(b_sink.wait_for(0, std::chrono::seconds(30)));
    REQUIRE(bulk_sink.wait_for(0, std::chrono::seconds(30)));
    CHECK(a.results == a.truth);
    CHECK(b.results == b.truth);
    CHECK(first.results == first.truth);
    CHECK(bulk.results == bulk.truth);
    CHECK(metrics.lane_indebted_chunks.load() == 2);  // a and b, not first nor the honest batch
    scheduler.stop();
}

TEST_CASE("lane workers: a bulk batch's confirmations leave its client's small batches their lane",
          "[scheduler][lane][hostile]") {
    // A node's own bulk verification (a multisig table's failed attempts) is
    // confirmed on the bulk workers; it must not cost the same uid's blocks
    // their lane (the bench's clients all ran as one uid, and its bulk client
    // of invalid rows put every 1-row batch in debt: p99 6 -> 9 ms).
    HoldingBackend backend;
    backend.bulk_confirm_time = std::chrono::milliseconds(30);
    backend.release();
    daemon::CpuBackend fallback(kWorkers);
    daemon::Scheduler scheduler(backend, &fallback, 4096);
    daemon::Metrics metrics;
    scheduler.set_metrics(&metrics);
    scheduler.set_lane_workers(daemon::Scheduler::kLaneWorkers);
    scheduler.start();
    constexpr std::uint32_t uid = 1003;
    Sink bulk_sink, small_sink;
    std::shared_ptr<daemon::JobQueue> bulk_q = scheduler.make_queue(bulk_sink, 1, uid);
    std::shared_ptr<daemon::JobQueue> small_q = scheduler.make_queue(small_sink, 1, uid);
    // 5 chunks of 4,096 rows, ~150 ms of confirmations in all.
    Rows bulk = make_rows(daemon::Scheduler::kLaneWorkerRows + 4096, false);
    bulk_q->job(0) = job_of(bulk);
    scheduler.submit(bulk_q, 0);
    REQUIRE(bulk_sink.wait_for(0, std::chrono::seconds(30)));
    Rows small = make_rows(8, true);
    small_q->job(0) = job_of(small);
    scheduler.submit(small_q, 0);
    REQUIRE(small_sink.wait_for(0, std::chrono::seconds(10)));
    CHECK(small.results == small.truth);
    CHECK(bulk.results == bulk.truth);
    CHECK(metrics.lane_indebted_chunks.load() == 0);
    scheduler.stop();
}
