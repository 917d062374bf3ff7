// SPDX-License-Identifier: MIT
// Rows verified in place: a GPU-like primary reads the client's rows where
// they lie (no staging copy), behind the real Scheduler and CheckedBackend.
//
// The guarantee staging used to give must hold without the copy: a client
// that rewrites its rows while they are verified changes only its own
// verdicts and can never make the primary look faulty, while a primary that
// really lies is still switched off. The primary here is libsecp256k1 with
// hooks: it can rewrite rows after reading them (the client scribbling at the
// worst moment) or lie on rows chosen by their content (so it lies again on a
// private copy, as a broken GPU would).
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <mutex>
#include <set>

#include "daemon/backends/checked_backend.hpp"
#include "daemon/ops/metrics.hpp"
#include "kernels/host_ranges.hpp"
#include "scheduler_harness.hpp"

using namespace sigverify;
using daemon::CheckedBackend;
using daemon::ChunkResult;
using daemon::CrossCheckPolicy;

namespace {

class InPlacePrimary final : public daemon::Backend {
public:
    // Rows whose bytes it rewrites after reading them (indices into the client's rows).
    std::set<std::size_t> scribble_rows;
    // Lies (flips its verdict) on rows whose first record byte is below this.
    unsigned lie_below = 0;
    const std::uint8_t* client_begin = nullptr;  // the client's rows, to tell in-place calls apart
    const std::uint8_t* client_end = nullptr;
    std::atomic<std::uint64_t> calls_in_place{0}, calls_staged{0};

    std::string name() const override { return "inplace"; }
    unsigned concurrency() const override { return 2; }
    std::size_t preferred_chunk_rows() const override { return 256; }
    bool verifies_in_place() const override { return true; }
    ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override {
        ChunkResult r;
        const bool in_place = records.data >= client_begin && records.data < client_end;
        (in_place ? calls_in_place : calls_staged).fetch_add(1);
        r.tally = cpu_[worker].run(records, 0, records.count, wire::Mode::results, verdicts);
        for (std::size_t i = 0; i < records.count; ++i) {
            std::uint8_t* row = const_cast<std::uint8_t*>(records.row(i));
            if (records.row(i)[0] < lie_below) verdicts[i] ^= 1;
            if (in_place && scribble_rows.count(std::size_t(row - client_begin) / records.row_stride()) != 0)
                row[40] ^= 0x5A;  // the client rewrites the row after the "GPU" read it
        }
        return r;
    }

private:
    reference::RowVerifier cpu_[2];
};

struct Run {
    std::vector<std::uint8_t> verdicts;
    bool rows_rewritten = false;
    bool primary_enabled = true;
    std::uint64_t mismatches = 0, rewritten = 0, rows_in_place = 0, rows_staged = 0;
    std::uint64_t calls_in_place = 0, calls_staged = 0;  // the primary's calls
};

// One results job over d's rows through a scheduler whose backend is a
// CheckedBackend over p (every verdict re-checked: the samples are 1 in 1).
// announce: the rows are announced as client memory (as a session does).
// The CheckedBackend owns p: p is gone when this returns.
Run run_job(test::SignedRows& d, InPlacePrimary* p, bool announce, bool stage_rows = false) {
    p->client_begin = d.rows.data();
    p->client_end = d.rows.data() + d.rows.size();
    CheckedBackend checked(std::unique_ptr<daemon::Backend>(p), 256, CrossCheckPolicy{1, 0, 1});
    daemon::CpuBackend cpu(2);
    daemon::Metrics metrics;
    daemon::Scheduler scheduler(checked, &cpu, 256);
    scheduler.set_metrics(&metrics);
    if (announce) REQUIRE(scheduler.map_client_memory(d.rows.data(), d.rows.size()));
    scheduler.start();

    struct Sink final : daemon::JobSink {
        std::mutex mutex;
        std::condition_variable cv;
        bool done = false;
        void finish_job(std::uint32_t, shm::Status s, const reference::Tally&) override {
            CHECK(s == shm::Status::ok);
            std::lock_guard lock(mutex);
            done = true;
            cv.notify_all();
        }
    } sink;
    Run out;
    out.verdicts.assign(d.span.count, 0xEE);
    std::shared_ptr<daemon::JobQueue> q = scheduler.make_queue(sink, 1);
    daemon::Job& j = q->job(0);
    j.rows = d.span;
    j.mode = wire::Mode::results;
    j.results = out.verdicts.data();
    j.stage_rows = stage_rows;
    scheduler.submit(q, 0);
    {
        std::unique_lock lock(sink.mutex);
        REQUIRE(sink.cv.wait_for(lock, std::chrono::seconds(60), [&] { return sink.done; }));
    }
    scheduler.stop();
    if (announce) scheduler.unmap_client_memory(d.rows.data());
    out.rows_rewritten = j.rows_rewritten;
    out.primary_enabled = checked.primary_enabled();
    out.mismatches = checked.counters().mismatches;
    out.rewritten = checked.counters().rows_rewritten;
    out.rows_in_place = metrics.rows_in_place;
    out.rows_staged = metrics.rows_staged;
    out.calls_in_place = p->calls_in_place;
    out.calls_staged = p->calls_staged;
    return out;
}

}  // namespace

TEST_CASE("rows go to a backend that verifies in place without a staging copy", "[inplace]") {
    auto d = test::signed_rows(wire::Table::ecdsa, 1000, 0.1, 71);
    auto* p = new InPlacePrimary;
    const Run r = run_job(d, p, true);
    CHECK(r.verdicts == d.truth);
    CHECK(r.primary_enabled);
    CHECK(r.rows_in_place == 1000);
    CHECK(r.rows_staged == 0);
    CHECK(r.calls_staged == 0);
    CHECK_FALSE(r.rows_rewritten);
}

TEST_CASE("a client rewriting rows a GPU reads in place changes only its own verdicts; the GPU stays on",
          "[inplace]") {
    auto d = test::signed_rows(wire::Table::ecdsa, 1000, 0.0, 72);
    const std::vector<std::uint8_t> original = d.rows;
    auto* p = new InPlacePrimary;
    const std::set<std::size_t> scribbled = {5, 77, 640};
    p->scribble_rows = scribbled;
    const Run r = run_job(d, p, true);
    CHECK(d.rows != original);  // the client really did rewrite them
    CHECK(r.primary_enabled);
    CHECK(r.mismatches == 0);
    CHECK(r.rewritten == 3);
    CHECK(r.rows_rewritten);  // the session stages its later batches
    // Every other row keeps its verdict; the rewritten rows get libsecp256k1's
    // verdict on what they hold now.
    reference::RowVerifier cpu;
    for (std::size_t i = 0; i < d.span.count; ++i) {
        INFO("row " << i);
        CHECK(r.verdicts[i] == (scribbled.count(i) ? std::uint8_t(cpu.verify_row(d.span, i)) : d.truth[i]));
    }
}

TEST_CASE("a primary that lies on rows read in place is still switched off", "[inplace]") {
    auto d = test::signed_rows(wire::Table::ecdsa, 1000, 0.1, 73);
    auto* p = new InPlacePrimary;
    p->lie_below = 8;  // ~3% of rows, judged by content: it lies on a private copy too
    const Run r = run_job(d, p, true);
    CHECK_FALSE(r.primary_enabled);
    CHECK(r.mismatches >= 1);
    CHECK(r.rewritten == 0);
    CHECK(r.verdicts == d.truth);  // the CPU fallback re-ran what the liar touched
}

TEST_CASE("rows outside announced client memory get no benefit of the doubt", "[inplace]") {
    // Not announced: CheckedBackend treats the rows as private, so a
    // disagreement (here caused by the rewrite) switches the primary off.
    auto d = test::signed_rows(wire::Table::ecdsa, 600, 0.0, 74);
    auto* p = new InPlacePrimary;
    p->scribble_rows = {10};
    const Run r = run_job(d, p, false);
    CHECK_FALSE(r.primary_enabled);
    CHECK(r.rewritten == 0);
}

TEST_CASE("a session's batches are staged once it has rewritten rows", "[inplace]") {
    auto d = test::signed_rows(wire::Table::ecdsa, 700, 0.1, 75);
    auto* p = new InPlacePrimary;
    p->scribble_rows = {3};  // only applies to in-place reads: staged rows are private
    const Run r = run_job(d, p, true, /*stage_rows=*/true);
    CHECK(r.calls_in_place == 0);
    CHECK(r.rows_staged == 700);
    CHECK(r.rows_in_place == 0);
    CHECK(r.verdicts == d.truth);
    CHECK(r.primary_enabled);
}

TEST_CASE("HostRanges: containment at the edges, nesting", "[inplace]") {
    std::vector<std::uint8_t> mem(100);
    const std::uint8_t* b = mem.data();
    gpu::HostRanges set;
    CHECK_FALSE(set.contains(b, 1));
    CHECK(set.add(b + 10, 50));
    CHECK(set.contains(b + 10, 50));
    CHECK(set.contains(b + 59, 1));
    CHECK_FALSE(set.contains(b + 59, 2));
    CHECK_FALSE(set.contains(b + 9, 1));
    CHECK_FALSE(set.contains(b + 60, 1));
    CHECK_FALSE(set.contains(b + 10, 51));
    CHECK_FALSE(set.add(b + 10, 50));  // nested
    CHECK_FALSE(set.remove(b + 10));
    CHECK(set.contains(b + 20, 5));
    CHECK(set.remove(b + 10));  // the last count
    CHECK_FALSE(set.contains(b + 20, 5));
    CHECK_FALSE(set.remove(b + 10));
}
