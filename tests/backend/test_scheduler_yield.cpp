// SPDX-License-Identifier: MIT
// The scheduler's latency lane on the CPU backend: a worker pauses its chunk after one
// piece for a waiting small batch and hands the rest back (Scheduler::set_yield_rows);
// every row is verified once, in its slot, cancels and floods included.
#include <catch2/catch.hpp>

#include "scheduler_parts.hpp"

using namespace sigverify;
using daemon::ChunkResult;
using wire::Mode;


TEST_CASE("yielding to the lane: a worker hands the rest of its chunk back after one piece; every row once, in its slot",
          "[scheduler][yield]") {
    Data bulk = make(wire::Table::ecdsa, 1000);  // chunks of 100 rows, pieces of 16
    Data quiet = make(wire::Table::schnorr, 1);
    OrderBackend backend;  // one worker, holds its first verify call
    daemon::Scheduler scheduler(backend, nullptr, 100);
    scheduler.set_yield_rows(16);
    scheduler.start();
    Sink bulk_sink, quiet_sink;
    std::shared_ptr<daemon::JobQueue> bulk_q = scheduler.make_queue(bulk_sink, 1);
    std::vector<std::uint8_t> bulk_results(1000), quiet_results(1);
    bulk_q->job(0) = row_job(bulk, Mode::results, bulk_results.data());
    scheduler.submit(bulk_q, 0);
    {
        std::unique_lock lock(backend.mutex);
        REQUIRE(backend.cv.wait_for(lock, std::chrono::seconds(10), [&] { return backend.holding; }));
    }
    // The worker is inside the first piece of a 100-row chunk; the 1-row batch arrives.
    std::shared_ptr<daemon::JobQueue> quiet_q = scheduler.make_queue(quiet_sink, 1);
    quiet_q->job(0) = row_job(quiet, Mode::results, quiet_results.data());
    scheduler.submit(quiet_q, 0);
    {
        std::lock_guard lock(backend.mutex);
        backend.hold = false;
        backend.cv.notify_all();
    }
    REQUIRE(scheduler.wait_idle(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
    scheduler.stop();
    std::lock_guard lock(backend.mutex);
    REQUIRE(backend.order.size() >= 3);
    CHECK(backend.sizes[0] == 16);
    CHECK(backend.order[1] == first_id(quiet));  // after one piece, not after the chunk
    CHECK(backend.order[2] == row_id(bulk, 16));  // then the rows handed back
    CHECK(scheduler.chunks_yielded() == 1);
    // Every row verified exactly once: the backend saw 1001 rows in all, the
    // tallies count each batch's rows once, and each verdict is in its row's slot.
    std::size_t seen = 0;
    for (std::size_t s : backend.sizes) seen += s;
    CHECK(seen == 1001);
    CHECK(bulk_results == bulk.truth);
    CHECK(quiet_results == quiet.truth);
    const auto [bulk_status, bulk_tally] = bulk_sink.wait();
    CHECK(bulk_status == shm::Status::ok);
    CHECK(bulk_tally.valid + bulk_tally.invalid == 1000);
    CHECK(bulk_tally.valid == std::size_t(std::count(bulk.truth.begin(), bulk.truth.end(), 1)));
}

TEST_CASE("yielding to the lane under load: two workers, bulk and 1-row batches in both modes, every verdict right",
          "[scheduler][yield]") {
    OrderBackend backend;
    backend.workers = 2;
    backend.hold = false;
    daemon::Scheduler scheduler(backend, nullptr, 64);
    scheduler.set_yield_rows(8);
    scheduler.start();
    Sink sink;
    constexpr int kBulk = 3;
    constexpr std::size_t kRows = 2000;
    Data quiet = make(wire::Table::ecdsa, 1);
    Sink quiet_sink;
    std::shared_ptr<daemon::JobQueue> quiet_q = scheduler.make_queue(quiet_sink, 1);
    std::vector<Data> bulk;
    for (int k = 0; k < kBulk; ++k) {
        bulk.push_back(make(wire::Table::ecdsa, kRows));
        bulk[k].rows[0] ^= std::uint8_t(k + 1);
        reference::Verifier(1).verify(bulk[k].span, bulk[k].truth.data());
    }
    // Collect mode for the last bulk batch: its valid rows' tails are zeroed, no other byte moves.
    const auto collect_want = collected(bulk[kBulk - 1].rows, bulk[kBulk - 1].span, bulk[kBulk - 1].truth);
    std::vector<std::shared_ptr<daemon::JobQueue>> queues;
    std::vector<std::vector<std::uint8_t>> results(kBulk, std::vector<std::uint8_t>(kRows));
    for (int k = 0; k < kBulk; ++k) {
        queues.push_back(scheduler.make_queue(sink, 1));
        const bool collect = k == kBulk - 1;
        queues[k]->job(0) = row_job(bulk[k], collect ? Mode::collect : Mode::results, collect ? nullptr : results[k].data());
        scheduler.submit(queues[k], 0);
    }
    std::vector<std::uint8_t> quiet_result(1);
    for (int i = 0; i < 40; ++i) {
        quiet_result[0] = 0;
        quiet_q->job(0) = row_job(quiet, Mode::results, quiet_result.data());
        scheduler.submit(quiet_q, 0);
        std::unique_lock lock(quiet_sink.mutex);
        REQUIRE(quiet_sink.cv.wait_for(lock, std::chrono::seconds(30), [&] { return quiet_sink.done.size() == std::size_t(i) + 1; }));
        CHECK(quiet_sink.done.back().first == shm::Status::ok);
        CHECK(quiet_result == quiet.truth);
    }
    REQUIRE(scheduler.wait_idle(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
    scheduler.stop();
    for (int k = 0; k < kBulk - 1; ++k) CHECK(results[k] == bulk[k].truth);
    CHECK(bulk[kBulk - 1].rows == collect_want);
    std::size_t seen = 0;
    for (std::size_t s : backend.sizes) seen += s;
    CHECK(seen == kBulk * kRows + 40);  // no row verified twice, none dropped
    CHECK(scheduler.chunks_yielded() > 0);
    std::lock_guard lock(sink.mutex);
    REQUIRE(sink.done.size() == std::size_t(kBulk));
    std::size_t tallied = 0;
    for (const auto& [status, tally] : sink.done) {
        CHECK(status == shm::Status::ok);
        tallied += tally.valid + tally.invalid;
    }
    CHECK(tallied == kBulk * kRows);
}

TEST_CASE("yielding to the lane: a job cancelled while rows it handed back wait completes at once, without them",
          "[scheduler][yield][cancel]") {
    Data bulk = make(wire::Table::ecdsa, 1000);
    Data quiet = make(wire::Table::schnorr, 1);
    OrderBackend backend;  // one worker, holds every verify call but those let through
    daemon::Scheduler scheduler(backend, nullptr, 100);
    scheduler.set_yield_rows(16);
    scheduler.start();
    Sink bulk_sink, quiet_sink;
    std::shared_ptr<daemon::JobQueue> bulk_q = scheduler.make_queue(bulk_sink, 1);
    std::shared_ptr<daemon::JobQueue> quiet_q = scheduler.make_queue(quiet_sink, 1);
    std::vector<std::uint8_t> bulk_results(1000), quiet_results(1);
    bulk_q->job(0) = row_job(bulk, Mode::results, bulk_results.data());
    quiet_q->job(0) = row_job(quiet, Mode::results, quiet_results.data());
    scheduler.submit(bulk_q, 0);
    {
        std::unique_lock lock(backend.mutex);
        REQUIRE(backend.cv.wait_for(lock, std::chrono::seconds(10), [&] { return backend.calls == 1; }));
    }
    scheduler.submit(quiet_q, 0);
    {
        // Let the bulk chunk's first piece finish: the worker hands rows [16, 100) back
        // and takes the 1-row batch, whose verify call is held.
        std::unique_lock lock(backend.mutex);
        backend.passes = 1;
        backend.cv.notify_all();
        REQUIRE(backend.cv.wait_for(lock, std::chrono::seconds(10), [&] { return backend.calls == 2; }));
        REQUIRE(backend.order[1] == first_id(quiet));
    }
    // The bulk job has no running chunk now, only rows waiting: cancel completes it at once.
    scheduler.cancel(*bulk_q, shm::Status::cancelled);
    {
        std::lock_guard lock(bulk_sink.mutex);
        REQUIRE(bulk_sink.done.size() == 1);
        CHECK(bulk_sink.done[0].first == shm::Status::cancelled);
    }
    {
        std::lock_guard lock(backend.mutex);
        backend.hold = false;
        backend.cv.notify_all();
    }
    CHECK(quiet_sink.wait().first == shm::Status::ok);
    REQUIRE(scheduler.wait_idle(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
    scheduler.stop();
    CHECK(quiet_results == quiet.truth);
    // The one piece verified was published; the rows handed back never were (zero: fail closed).
    for (std::size_t i = 0; i < 1000; ++i) {
        INFO("row " << i);
        CHECK(bulk_results[i] == (i < 16 ? bulk.truth[i] : 0));
    }
    std::lock_guard lock(backend.mutex);
    CHECK(backend.order.size() == 2);
    CHECK(scheduler.chunks_yielded() == 1);
    std::lock_guard sink_lock(bulk_sink.mutex);
    CHECK(bulk_sink.done.size() == 1);  // completed exactly once
}

TEST_CASE("yielding to the lane: under a flood of small batches the bulk chunk forced every fifth pick runs whole",
          "[scheduler][yield]") {
    Data bulk = make(wire::Table::ecdsa, 1000);  // 10 chunks of 100
    Data small = make(wire::Table::schnorr, 1);
    OrderBackend backend;
    daemon::Scheduler scheduler(backend, nullptr, 100);
    scheduler.set_yield_rows(16);
    scheduler.start();
    const FloodResults got = flood_behind_held_bulk(scheduler, backend, bulk, small);
    const std::vector<std::uint8_t>& bulk_results = got.bulk;
    const std::vector<std::vector<std::uint8_t>>& flood_results = got.flood;
    // The chunk that was running when the flood came yielded after one piece;
    // the bulk chunks forced every fifth pick ran whole (100 rows between two
    // small batches). Near its end the bulk batch's last chunk is lane work
    // itself and may yield once more.
    CHECK(scheduler.chunks_yielded() <= 2);
    std::lock_guard lock(backend.mutex);
    std::size_t run = 0, seen = 0;
    std::vector<std::size_t> runs;
    for (std::size_t s : backend.sizes) {
        seen += s;
        if (s == 1 && run != 0) runs.push_back(std::exchange(run, 0));
        else if (s != 1) run += s;
    }
    if (run != 0) runs.push_back(run);
    CHECK(seen == 1000 + kFlood);
    REQUIRE(runs.size() >= 5);
    CHECK(runs[0] == 16);   // the first piece, then the flood's first four
    CHECK(runs[1] == 84);   // the rest handed back, forced: whole
    CHECK(runs[2] == 100);  // then whole chunks, four small batches apart
    CHECK(runs[3] == 100);
    CHECK(runs[4] == 100);
    CHECK(bulk_results == bulk.truth);
    for (const auto& r : flood_results) CHECK(r == small.truth);
}
