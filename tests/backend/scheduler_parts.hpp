// SPDX-License-Identifier: MIT
// What the scheduler tests share (test_scheduler.cpp, test_scheduler_yield.cpp): backends
// that fail, lie or hold a chunk on purpose, a test JobSink, signed rows and the jobs over
// them. Test-only; each file gets its own copy (anonymous namespace).
#pragma once

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

#include "daemon/backends/checked_backend.hpp"
#include "daemon/ops/metrics.hpp"
#include "daemon/schedule/scheduler.hpp"
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

inline Data make(wire::Table t, std::size_t n) {
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
inline std::pair<shm::Status, reference::Tally> run_job(daemon::Backend& backend, daemon::Backend* fallback,
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

inline daemon::Job row_job(Data& d, Mode mode, std::uint8_t* results) {
    daemon::Job j;
    j.rows = d.span;
    j.mode = mode;
    j.results = results;
    return j;
}

// Rows as collect mode must leave them: the tails of the valid rows zeroed.
inline std::vector<std::uint8_t> collected(const std::vector<std::uint8_t>& rows, const wire::RowSpan& span,
                                    const std::vector<std::uint8_t>& truth) {
    auto want = rows;
    const std::size_t stride = span.row_stride(), record = wire::record_size(span.kind);
    for (std::size_t i = 0; i < span.count; ++i)
        if (truth[i]) std::fill(want.begin() + i * stride + record, want.begin() + (i + 1) * stride, 0);
    return want;
}

}  // namespace

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

inline std::uint64_t first_id(const Data& d) {
    std::uint64_t id = 0;
    std::memcpy(&id, d.span.row(0), sizeof id);
    return id;
}

}  // namespace

namespace {

inline std::uint64_t row_id(const Data& d, std::size_t i) {
    std::uint64_t id = 0;
    std::memcpy(&id, d.span.row(i), sizeof id);
    return id;
}

constexpr std::uint32_t kFlood = 40;

struct FloodResults {
    std::vector<std::uint8_t> bulk;
    std::vector<std::vector<std::uint8_t>> flood;
};

// Submits the 1000-row bulk batch, waits until the backend holds its first
// chunk, queues kFlood one-row batches behind it, releases the backend, and
// stops the scheduler once everything ran.
inline FloodResults flood_behind_held_bulk(daemon::Scheduler& scheduler, OrderBackend& backend, Data& bulk, Data& small) {
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

}  // namespace
