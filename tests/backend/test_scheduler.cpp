// SPDX-License-Identifier: MIT
// The scheduler's chunk path (stage -> verify -> publish), driven without a
// session: a JobQueue with a test JobSink, and backends that fail or lie on
// purpose (no GPU needed).
//   * a chunk the backend fails publishes nothing (results stay zero, tails
//     stay), unless the CPU fallback re-runs it; the fallback metrics count it;
//   * rows and columns, results and collect, all publish libsecp256k1's verdicts;
//   * a client rewriting its rows while a CheckedBackend verifies them cannot
//     make the primary look faulty (both read the scheduler's private copy).

#include <catch2/catch.hpp>

#include "scheduler_parts.hpp"

using namespace sigverify;
using daemon::ChunkResult;
using wire::Mode;


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
