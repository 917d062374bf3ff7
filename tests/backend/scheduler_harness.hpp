// SPDX-License-Identifier: MIT
// Shared by the scheduler-level backend tests: signed rows with their
// libsecp256k1 verdicts, and one results-mode job run through a started
// Scheduler to completion.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "daemon/schedule/scheduler.hpp"
#include "reference/row_generator.hpp"

namespace sigverify::test {

struct SignedRows {
    std::vector<std::uint8_t> rows;
    wire::RowSpan span;
    std::vector<std::uint8_t> truth;  // libsecp256k1's verdicts
};

// n generated rows of a single-signature table (canonical 3-byte tails).
inline SignedRows signed_rows(wire::Table table, std::size_t n, double invalid_rate, std::uint64_t seed) {
    reference::GenOptions o;
    o.table = table;
    o.count = n;
    o.invalid_rate = invalid_rate;
    o.seed = seed;
    SignedRows d{reference::generate_rows(o), {}, std::vector<std::uint8_t>(n)};
    d.span = wire::RowSpan{wire::record_kind(table), wire::canonical_tail_size(table), wire::SigEncoding::opaque,
                           d.rows.data(), n};
    reference::Verifier(2).verify(d.span, d.truth.data());
    return d;
}

// Submits rows as one results-mode job to a started scheduler, waits for its
// completion (status ok), then stops the scheduler: joining the workers is
// what guarantees none still runs inside the sink when it goes away.
// Returns the published verdicts.
inline std::vector<std::uint8_t> run_results_job_and_stop(daemon::Scheduler& scheduler, const wire::RowSpan& rows) {
    struct Sink final : daemon::JobSink {
        std::mutex mutex;
        std::condition_variable cv;
        bool done = false;
        shm::Status status = shm::Status::ok;
        void finish_job(std::uint32_t, shm::Status s, const reference::Tally&) override {
            std::lock_guard lock(mutex);
            done = true;
            status = s;
            cv.notify_all();
        }
    } sink;
    std::shared_ptr<daemon::JobQueue> q = scheduler.make_queue(sink, 1);
    std::vector<std::uint8_t> results(rows.count);
    q->job(0).rows = rows;
    q->job(0).mode = wire::Mode::results;
    q->job(0).results = results.data();
    scheduler.submit(q, 0);
    std::unique_lock lock(sink.mutex);
    REQUIRE(sink.cv.wait_for(lock, std::chrono::seconds(60), [&] { return sink.done; }));
    CHECK(sink.status == shm::Status::ok);
    lock.unlock();
    scheduler.stop();
    return results;
}

}  // namespace sigverify::test
