// SPDX-License-Identifier: MIT
// The scheduler's chunk path (stage -> verify -> publish), driven without a
// session: a JobQueue with a test JobSink, and backends that fail or lie on
// purpose (no GPU needed).
//   * a chunk the backend fails publishes nothing (results stay zero, tails
//     stay), unless the CPU fallback re-runs it; the fallback metrics count it;
//   * rows and columns, results and collect, all publish libsecp256k1's verdicts;
//   * a client rewriting its rows while a CheckedBackend verifies them cannot
//     make the primary look faulty (both read the scheduler's private copy).
#include <sched.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <utility>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/checked_backend.hpp"
#include "daemon/metrics.hpp"
#include "daemon/scheduler.hpp"
#include "reference/row_generator.hpp"

using namespace sigverify;
using daemon::ChunkResult;
using wire::Mode;

namespace {

// libsecp256k1's verdicts, or an error on every call, or a scribble mid-call.
class TestBackend final : public daemon::Backend {
public:
    bool fail = false;
    std::function<void()> during_verify;
    std::string name() const override { return "test"; }
    unsigned concurrency() const override { return 2; }
    std::size_t preferred_chunk_rows() const override { return 32; }
    ChunkResult verify(unsigned, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override {
        if (fail) {
            // A failing backend may leave anything in the buffer: here all "valid".
            std::fill_n(verdicts, records.count, std::uint8_t(1));
            return {shm::Status::backend_error, {}};
        }
        ChunkResult r;
        r.tally = cpu_.run(records, 0, records.count, Mode::results, verdicts);
        if (during_verify) during_verify();
        return r;
    }

private:
    reference::RowVerifier cpu_;
};

struct Sink final : daemon::JobSink {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<std::pair<shm::Status, reference::Tally>> done;
    void finish_job(std::uint32_t, shm::Status status, const reference::Tally& tally) override {
        std::lock_guard lock(mutex);
        done.emplace_back(status, tally);
        cv.notify_all();
    }
    std::pair<shm::Status, reference::Tally> wait() {
        std::unique_lock lock(mutex);
        REQUIRE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return !done.empty(); }));
        return done.back();
    }
};

struct Data {
    std::vector<std::uint8_t> rows;
    wire::RowSpan span;
    std::vector<std::uint8_t> truth;
};

Data make(wire::Table t, std::size_t n) {
    reference::GenOptions o;
    o.table = t;
    o.count = n;
    o.invalid_rate = 0.3;
    o.high_s_rate = 0.2;
    o.seed = 21;
    Data d{reference::generate_rows(o), {}, std::vector<std::uint8_t>(n)};
    d.span = wire::RowSpan{wire::record_kind(t), wire::canonical_tail_size(t), wire::SigEncoding::opaque, d.rows.data(), n};
    reference::Verifier(2).verify(d.span, d.truth.data());
    return d;
}

// Runs one job through a fresh scheduler and waits for its completion.
std::pair<shm::Status, reference::Tally> run_job(daemon::Backend& backend, daemon::Backend* fallback,
                                                 daemon::Metrics& metrics, const daemon::Job& job) {
    daemon::Scheduler scheduler(backend, fallback, 32);
    scheduler.set_metrics(&metrics);
    scheduler.start();
    Sink sink;
    std::shared_ptr<daemon::JobQueue> q = scheduler.make_queue(sink, 2);
    q->job(1) = job;
    scheduler.submit(q, 1);
    const auto result = sink.wait();
    REQUIRE(scheduler.wait_idle(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
    scheduler.stop();
    return result;
}

daemon::Job row_job(Data& d, Mode mode, std::uint8_t* results) {
    daemon::Job j;
    j.rows = d.span;
    j.mode = mode;
    j.results = results;
    return j;
}

// Rows as collect mode must leave them: the tails of the valid rows zeroed.
std::vector<std::uint8_t> collected(const std::vector<std::uint8_t>& rows, const wire::RowSpan& span,
                                    const std::vector<std::uint8_t>& truth) {
    auto want = rows;
    const std::size_t stride = span.row_stride(), record = wire::record_size(span.kind);
    for (std::size_t i = 0; i < span.count; ++i)
        if (truth[i]) std::fill(want.begin() + i * stride + record, want.begin() + (i + 1) * stride, 0);
    return want;
}

}  // namespace

TEST_CASE("a failed chunk publishes nothing; without a fallback the job fails", "[scheduler]") {
    auto d = make(wire::Table::multisig, 100);
    const auto before = d.rows;
    TestBackend broken;
    broken.fail = true;
    daemon::Metrics metrics;
    std::vector<std::uint8_t> results(100, 0);  // zeroed at submission (fail closed)
    CHECK(run_job(broken, nullptr, metrics, row_job(d, Mode::results, results.data())).first ==
          shm::Status::backend_error);
    CHECK(results == std::vector<std::uint8_t>(100, 0));
    CHECK(run_job(broken, nullptr, metrics, row_job(d, Mode::collect, nullptr)).first == shm::Status::backend_error);
    CHECK(d.rows == before);  // no tail zeroed
    CHECK(metrics.cpu_fallback_chunks == 0);
}

TEST_CASE("the CPU fallback re-runs failed chunks and its verdicts are published", "[scheduler]") {
    auto d = make(wire::Table::ecdsa, 100);
    const auto before = d.rows;
    TestBackend broken;
    broken.fail = true;
    daemon::CpuBackend cpu(2);
    daemon::Metrics metrics;
    std::vector<std::uint8_t> results(100, 0);
    const auto r = run_job(broken, &cpu, metrics, row_job(d, Mode::results, results.data()));
    CHECK(r.first == shm::Status::ok);
    CHECK(results == d.truth);
    CHECK(r.second.valid + r.second.invalid == 100);
    CHECK(metrics.cpu_fallback_chunks == 4);  // 100 rows in chunks of 32
    CHECK(metrics.cpu_fallback_rows == 100);
    CHECK(metrics.chunks == 4);

    CHECK(run_job(broken, &cpu, metrics, row_job(d, Mode::collect, nullptr)).first == shm::Status::ok);
    CHECK(d.rows == collected(before, d.span, d.truth));
}

TEST_CASE("column jobs take the same path: verdicts, or the valid rows' correlate entries zeroed", "[scheduler]") {
    for (auto t : {wire::Table::ecdsa, wire::Table::threshold}) {
        auto d = make(t, 70);
        auto table = reference::rows_to_columns(d.span, reference::CorrelateLayout::tail);
        daemon::Job j;
        j.is_columns = true;
        j.rows = wire::RowSpan{d.span.kind, 0, d.span.encoding, nullptr, d.span.count};
        j.columns = table.view();
        TestBackend cpu_like;
        daemon::Metrics metrics;

        std::vector<std::uint8_t> results(70, 0);
        j.mode = Mode::results;
        j.results = results.data();
        CHECK(run_job(cpu_like, nullptr, metrics, j).first == shm::Status::ok);
        CHECK(results == d.truth);

        const auto correlate_before = table.correlate;
        j.mode = Mode::collect;
        j.results = nullptr;
        CHECK(run_job(cpu_like, nullptr, metrics, j).first == shm::Status::ok);
        const std::size_t w = table.tail_size;
        REQUIRE(w == d.span.tail_size);
        for (std::size_t i = 0; i < 70; ++i) {
            const bool zeroed = std::all_of(table.correlate.begin() + i * w, table.correlate.begin() + (i + 1) * w,
                                            [](std::uint8_t b) { return b == 0; });
            const bool kept = std::equal(table.correlate.begin() + i * w, table.correlate.begin() + (i + 1) * w,
                                         correlate_before.begin() + i * w);
            REQUIRE((d.truth[i] ? zeroed : kept));
        }
    }
}

TEST_CASE("a client rewriting its rows while they are cross-checked cannot switch the primary off", "[scheduler][crosscheck]") {
    // The scheduler stages the records first; the primary and libsecp256k1's
    // re-check of every row both read that private copy.
    auto d = make(wire::Table::ecdsa, 1000);
    const auto original = d.rows;
    auto primary = std::make_unique<TestBackend>();
    std::uint32_t x = 777;
    primary->during_verify = [&] {
        for (auto& b : d.rows) b = std::uint8_t(x = x * 1103515245u + 12345u);
    };
    daemon::CheckedBackend checked(std::move(primary), 1000, daemon::CrossCheckPolicy{1});
    daemon::Metrics metrics;
    std::vector<std::uint8_t> results(1000, 0);
    daemon::Scheduler scheduler(checked, nullptr, 1000);  // one chunk: the scribble lands mid-verification
    scheduler.set_metrics(&metrics);
    scheduler.start();
    Sink sink;
    std::shared_ptr<daemon::JobQueue> q = scheduler.make_queue(sink, 1);
    q->job(0) = row_job(d, Mode::results, results.data());
    scheduler.submit(q, 0);
    CHECK(sink.wait().first == shm::Status::ok);
    scheduler.stop();
    CHECK(d.rows != original);  // the client really did scribble
    CHECK(checked.counters().mismatches == 0);
    CHECK(checked.primary_enabled());
    CHECK(results == d.truth);  // the verdicts of what was staged
}

namespace {

// One worker; remembers which batch each chunk came from (by its first
// record) and can hold a chunk until released.
class OrderBackend final : public daemon::Backend {
public:
    std::mutex mutex;
    std::condition_variable cv;
    bool hold = true, holding = false;
    int passes = 0;  // calls let through while hold is set
    int calls = 0;
    std::vector<std::uint64_t> order;  // first 8 message bytes of each chunk's first record
    std::vector<std::size_t> sizes;

    std::string name() const override { return "order"; }
    unsigned concurrency() const override { return workers; }
    std::size_t preferred_chunk_rows() const override { return 100; }
    bool cheap_small_chunks() const override { return true; }  // a CPU: small batches are spread
    ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override {
        {
            std::unique_lock lock(mutex);
            std::uint64_t id = 0;
            std::memcpy(&id, records.row(0), sizeof id);
            order.push_back(id);
            sizes.push_back(records.count);
            holding = true;
            ++calls;
            cv.notify_all();
            cv.wait(lock, [&] { return !hold || passes > 0; });
            if (hold) --passes;
        }
        ChunkResult r;
        r.tally = cpu_[worker].run(records, 0, records.count, Mode::results, verdicts);
        return r;
    }
    unsigned workers = 1;

private:
    reference::RowVerifier cpu_[4];
};

std::uint64_t first_id(const Data& d) {
    std::uint64_t id = 0;
    std::memcpy(&id, d.span.row(0), sizeof id);
    return id;
}

}  // namespace

TEST_CASE("the latency lane: a batch that fits in one chunk goes before the bulk queues' next chunks", "[scheduler]") {
    std::vector<Data> bulk;
    for (int k = 0; k < 3; ++k) bulk.push_back(make(wire::Table::ecdsa, 1000));  // 10 chunks each
    // make() uses one seed: tell the batches apart by changing their first message byte.
    for (int k = 0; k < 3; ++k) {
        bulk[k].rows[0] ^= std::uint8_t(k + 1);
        reference::Verifier(1).verify(bulk[k].span, bulk[k].truth.data());
    }
    Data quiet = make(wire::Table::schnorr, 1);
    OrderBackend backend;
    daemon::Scheduler scheduler(backend, nullptr, 100);
    scheduler.start();
    Sink sink;
    std::vector<std::shared_ptr<daemon::JobQueue>> queues;
    std::vector<std::vector<std::uint8_t>> results(4);
    for (int k = 0; k < 3; ++k) {
        queues.push_back(scheduler.make_queue(sink, 1));
        results[k].resize(1000);
        queues[k]->job(0) = row_job(bulk[k], Mode::results, results[k].data());
        scheduler.submit(queues[k], 0);
    }
    {
        std::unique_lock lock(backend.mutex);
        REQUIRE(backend.cv.wait_for(lock, std::chrono::seconds(10), [&] { return backend.holding; }));
    }
    // The worker is inside a bulk chunk; now the quiet client's 1-row batch arrives.
    queues.push_back(scheduler.make_queue(sink, 1));
    results[3].resize(1);
    queues[3]->job(0) = row_job(quiet, Mode::results, results[3].data());
    scheduler.submit(queues[3], 0);
    {
        std::lock_guard lock(backend.mutex);
        backend.hold = false;
        backend.cv.notify_all();
    }
    REQUIRE(scheduler.wait_idle(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
    scheduler.stop();
    REQUIRE(backend.order.size() == 31);
    CHECK(backend.order[1] == first_id(quiet));  // the very next chunk
    CHECK(results[3] == quiet.truth);
    for (int k = 0; k < 3; ++k) CHECK(results[k] == bulk[k].truth);
}

TEST_CASE("on the CPU backend a small batch is spread over every worker", "[scheduler]") {
    OrderBackend backend;
    backend.workers = 4;
    backend.hold = false;
    daemon::Scheduler scheduler(backend, nullptr, 256);
    daemon::Metrics metrics;
    scheduler.set_metrics(&metrics);
    scheduler.start();
    Sink sink;
    std::shared_ptr<daemon::JobQueue> q = scheduler.make_queue(sink, 1);
    for (std::size_t n : {std::size_t(64), std::size_t(1000), std::size_t(10), std::size_t(3000)}) {
        Data d = make(wire::Table::ecdsa, n);
        std::vector<std::uint8_t> results(n);
        const std::uint64_t before = metrics.chunks;
        {
            std::lock_guard lock(backend.mutex);
            backend.sizes.clear();
        }
        q->job(0) = row_job(d, Mode::results, results.data());
        scheduler.submit(q, 0);
        REQUIRE(scheduler.wait_idle(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
        CHECK(results == d.truth);
        std::lock_guard lock(backend.mutex);
        const std::size_t biggest = *std::max_element(backend.sizes.begin(), backend.sizes.end());
        INFO(n << " rows");
        // 64 rows: 4 chunks of 16; 1000: 4 of 250; 10: one (chunks of at least 16); 3000: chunks of 256.
        CHECK(metrics.chunks - before == (n == 10 ? 1u : n == 3000 ? 12u : 4u));
        CHECK(biggest == (n == 64 ? 16u : n == 1000 ? 250u : n == 10 ? 10u : 256u));
    }
    scheduler.stop();
}

constexpr std::uint32_t kFlood = 40;

struct FloodResults {
    std::vector<std::uint8_t> bulk;
    std::vector<std::vector<std::uint8_t>> flood;
};

// Submits the 1000-row bulk batch, waits until the backend holds its first
// chunk, queues kFlood one-row batches behind it, releases the backend, and
// stops the scheduler once everything ran.
FloodResults flood_behind_held_bulk(daemon::Scheduler& scheduler, OrderBackend& backend, Data& bulk, Data& small) {
    FloodResults out;
    Sink sink;
    std::shared_ptr<daemon::JobQueue> bulk_q = scheduler.make_queue(sink, 1);
    std::vector<std::uint8_t>& bulk_results = out.bulk;
    bulk_results.resize(1000);
    bulk_q->job(0) = row_job(bulk, Mode::results, bulk_results.data());
    scheduler.submit(bulk_q, 0);
    {
        std::unique_lock lock(backend.mutex);
        REQUIRE(backend.cv.wait_for(lock, std::chrono::seconds(10), [&] { return backend.holding; }));
    }
    std::shared_ptr<daemon::JobQueue> flood_q = scheduler.make_queue(sink, kFlood);
    std::vector<std::vector<std::uint8_t>>& flood_results = out.flood;
    flood_results.assign(kFlood, std::vector<std::uint8_t>(1));
    for (std::uint32_t i = 0; i < kFlood; ++i) {
        flood_q->job(i) = row_job(small, Mode::results, flood_results[i].data());
        scheduler.submit(flood_q, i);
    }
    {
        std::lock_guard lock(backend.mutex);
        backend.hold = false;
        backend.cv.notify_all();
    }
    REQUIRE(scheduler.wait_idle(std::chrono::steady_clock::now() + std::chrono::seconds(60)));
    scheduler.stop();
    return out;
}

TEST_CASE("a flood of small batches cannot starve a bulk batch: it gets every fifth chunk", "[scheduler]") {
    Data bulk = make(wire::Table::ecdsa, 1000);  // 10 chunks of 100
    Data small = make(wire::Table::schnorr, 1);
    OrderBackend backend;
    {
        std::lock_guard lock(backend.mutex);
        backend.hold = true;
    }
    daemon::Scheduler scheduler(backend, nullptr, 100);
    scheduler.start();
    const FloodResults got = flood_behind_held_bulk(scheduler, backend, bulk, small);
    const std::vector<std::uint8_t>& bulk_results = got.bulk;
    const std::vector<std::vector<std::uint8_t>>& flood_results = got.flood;
    REQUIRE(backend.order.size() == 10 + kFlood);
    // While small batches were waiting, no more than kLaneBurst of them in a row.
    std::size_t last_bulk = 0, bulk_chunks = 0;
    for (std::size_t i = 0; i < backend.order.size() && bulk_chunks < 10; ++i) {
        if (backend.sizes[i] != 1) {
            CHECK(i - last_bulk <= daemon::Scheduler::kLaneBurst + 1);
            last_bulk = i;
            ++bulk_chunks;
        }
    }
    CHECK(bulk_chunks == 10);
    CHECK(bulk_results == bulk.truth);
    for (const auto& r : flood_results) CHECK(r == small.truth);
}

TEST_CASE("cancel_job drops one job's unassigned rows; its running chunks finish; the queue's other job runs on",
          "[scheduler][cancel]") {
    TestBackend backend;
    std::atomic<int> chunks{0};
    backend.during_verify = [&] {
        ++chunks;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // 32 rows a chunk: the job takes ~0.3 s
    };
    daemon::Metrics metrics;
    daemon::Scheduler scheduler(backend, nullptr, 32);
    scheduler.set_metrics(&metrics);
    scheduler.start();
    struct IndexSink final : daemon::JobSink {
        std::mutex mutex;
        std::condition_variable cv;
        std::map<std::uint32_t, std::pair<shm::Status, reference::Tally>> done;
        void finish_job(std::uint32_t index, shm::Status status, const reference::Tally& tally) override {
            std::lock_guard lock(mutex);
            done[index] = {status, tally};
            cv.notify_all();
        }
    } sink;
    Data d = make(wire::Table::ecdsa, 4000);
    std::vector<std::uint8_t> results_a(d.span.count, 0xEE), results_b(d.span.count, 0xEE);
    std::shared_ptr<daemon::JobQueue> q = scheduler.make_queue(sink, 4);
    q->job(0) = row_job(d, Mode::results, results_a.data());
    q->job(0).user_tag = 111;
    q->job(1) = row_job(d, Mode::results, results_b.data());
    q->job(1).user_tag = 222;
    std::fill(results_a.begin(), results_a.end(), 0);  // the session zeroes results at accept
    std::fill(results_b.begin(), results_b.end(), 0);
    scheduler.submit(q, 0);
    scheduler.submit(q, 1);
    while (chunks.load() < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(scheduler.cancel_job(*q, 999) == 0);  // no job has that tag
    CHECK(scheduler.cancel_job(*q, 111) == 1);
    {
        std::unique_lock lock(sink.mutex);
        REQUIRE(sink.cv.wait_for(lock, std::chrono::seconds(30), [&] { return sink.done.size() == 2; }));
    }
    REQUIRE(scheduler.wait_idle(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
    const auto [status_a, tally_a] = sink.done[0];
    const auto [status_b, tally_b] = sink.done[1];
    CHECK(status_a == shm::Status::cancelled);
    CHECK(tally_a.valid + tally_a.invalid < d.span.count);  // cut short
    CHECK(status_b == shm::Status::ok);
    CHECK(tally_b.valid + tally_b.invalid == d.span.count);
    CHECK(results_b == d.truth);
    // The cancelled job's rows: the verified ones have their verdicts, the rest read 0.
    std::size_t verified_valid = 0;
    for (std::size_t i = 0; i < d.span.count; ++i) {
        CHECK((results_a[i] == 0 || (results_a[i] == 1 && d.truth[i] == 1)));
        verified_valid += results_a[i];
    }
    CHECK(verified_valid == tally_a.valid);
    CHECK(scheduler.cancel_job(*q, 111) == 0);  // completed: nothing in flight with that tag
    scheduler.stop();
}

namespace {

std::uint64_t row_id(const Data& d, std::size_t i) {
    std::uint64_t id = 0;
    std::memcpy(&id, d.span.row(i), sizeof id);
    return id;
}

}  // namespace

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

namespace {

// The cores each thread of this process may run on, for the threads that may
// run on exactly one ("Cpus_allowed_list" of /proc/self/task/*/status).
std::vector<std::string> single_core_threads() {
    std::vector<std::string> cores;
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream status(task.path() / "status");
        for (std::string line; std::getline(status, line);) {
            if (line.rfind("Cpus_allowed_list:", 0) != 0) continue;
            const std::string list = line.substr(line.find_first_not_of(" \t", 18));
            if (list.find_first_of(",-") == std::string::npos) cores.push_back(list);
        }
    }
    return cores;
}

}  // namespace

TEST_CASE("--pin-workers: each worker keeps to a core of its own; without it none is pinned", "[scheduler][pin]") {
    cpu_set_t allowed;
    REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
    if (CPU_COUNT(&allowed) < 2) {
        WARN("one core: nothing to spread the workers over");
        return;
    }
    REQUIRE(single_core_threads().empty());  // this process: no thread pinned yet
    TestBackend backend;                     // two workers
    for (bool pin : {false, true}) {
        daemon::Scheduler scheduler(backend, nullptr, 32);
        scheduler.set_pin_workers(pin);
        scheduler.start();
        // A job through the workers (each pins itself first thing; the poll
        // below waits for the second if it has not started yet).
        Data d = make(wire::Table::ecdsa, 200);
        std::vector<std::uint8_t> results(200);
        Sink sink;
        std::shared_ptr<daemon::JobQueue> q = scheduler.make_queue(sink, 1);
        q->job(0) = row_job(d, Mode::results, results.data());
        scheduler.submit(q, 0);
        sink.wait();
        CHECK(results == d.truth);
        auto cores = single_core_threads();
        for (int i = 0; pin && cores.size() < 2 && i < 500; ++i) {  // set-up runs in each worker, first thing
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            cores = single_core_threads();
        }
        INFO("pin " << pin);
        if (!pin) {
            CHECK(cores.empty());
        } else {
            REQUIRE(cores.size() == 2);
            CHECK(cores[0] != cores[1]);  // a core each, not one for both
        }
        scheduler.stop();
    }
}
