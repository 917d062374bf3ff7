// SPDX-License-Identifier: MIT
// Cancel (Opcode::cancel, ring ABI 1.3) through a real sigverifyd on the CPU
// backend, under load: a batch that would take many seconds is cancelled
// mid-way and completes with Status::cancelled within a bound; every row is
// then either untouched or fully verified (a valid row's tail zeroed, an
// invalid row's kept; results 0 for a row not verified), judged against
// verdicts known without any verifier of the product (batch_check.hpp);
// another client's batches meanwhile are unaffected; a cancel that names no
// batch in flight is answered (not_found). Also the cancellable copy API
// (std::stop_token) and its C ABI twin (cancel tokens).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <stop_token>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "sigverify/sigverify.h"
#include "support/first_differences.hpp"

using namespace sigverify;
using namespace sigverify::test;
using Clock = std::chrono::steady_clock;

namespace {

// Rows signed once (make_known_rows is slow for hundreds of thousands of
// rows) and repeated: row i is known row i % known.count().
constexpr std::size_t kKnown = 2000;
constexpr std::size_t kRepeat = 100;  // 200,000 ECDSA rows: many seconds on two CPU workers
constexpr auto kCancelAfter = std::chrono::milliseconds(300);
constexpr auto kCancelBound = std::chrono::seconds(1);

struct BigBatch {
    KnownRows known;
    std::vector<std::uint8_t> rows;      // kKnown * kRepeat rows
    std::vector<std::uint8_t> expected;  // per row
    std::size_t count() const { return expected.size(); }
};

BigBatch make_big_batch(std::uint64_t seed) {
    BigBatch b{make_known_rows(wire::Table::ecdsa, kKnown, wire::SigEncoding::opaque, seed), {}, {}};
    for (std::size_t r = 0; r < kRepeat; ++r) {
        b.rows.insert(b.rows.end(), b.known.rows.begin(), b.known.rows.end());
        b.expected.insert(b.expected.end(), b.known.expected.begin(), b.known.expected.end());
    }
    return b;
}

// Collect rule after a cancel: each row's record unchanged, and its tail
// either unchanged (not verified, or invalid) or all zero (verified valid:
// only a row known valid). Returns "" or the first problem; counts the rows
// whose tail was zeroed.
std::string check_untouched_or_collected(const BigBatch& b, const std::uint8_t* after, std::uint64_t& zeroed) {
    const std::size_t stride = b.known.stride, record = b.known.record, tail = b.known.tail;
    zeroed = 0;
    for (std::size_t i = 0; i < b.count(); ++i) {
        const std::uint8_t* was = b.rows.data() + i * stride;
        const std::uint8_t* now = after + i * stride;
        if (std::memcmp(was, now, record) != 0) return "row " + std::to_string(i) + ": record changed";
        const bool kept = std::memcmp(was + record, now + record, tail) == 0;
        const bool cleared = std::all_of(now + record, now + stride, [](std::uint8_t x) { return x == 0; });
        if (!kept && !cleared) return "row " + std::to_string(i) + ": tail half-written";
        if (cleared && b.expected[i] != 1) return "row " + std::to_string(i) + ": invalid row's tail zeroed";
        zeroed += cleared;
    }
    return "";
}

// Another client verifying known Schnorr rows again and again until stop;
// false when any batch failed or differed from the known verdicts.
bool run_bystander(const DaemonProcess& d, std::atomic<bool>& stop, int& batches) {
    auto c = Client::connect(options_for(d, "bystander"));
    const KnownRows k = make_known_rows(wire::Table::schnorr, 200, wire::SigEncoding::opaque, 99);
    std::vector<std::uint8_t> got(200);
    batches = 0;
    do {
        const BatchResult r = c->verify_schnorr(k.rows.data(), 200, k.tail, got.data());
        if (!r.ok() || r.local_rows != 0 || got != k.expected) return false;
        ++batches;
    } while (!stop.load());
    return true;
}

}  // namespace

TEST_CASE("a large batch cancelled mid-way completes cancelled quickly, rows untouched or fully collected",
          "[daemon][cancel]") {
    DaemonProcess d({"--cpu-threads", "2"});
    const BigBatch big = make_big_batch(501);
    auto c = Client::connect(options_for(d, "canceller"));

    std::atomic<bool> stop_bystander{false};
    int bystander_batches = 0;
    bool bystander_ok = false;
    std::thread bystander([&] { bystander_ok = run_bystander(d, stop_bystander, bystander_batches); });

    for (wire::Mode mode : {wire::Mode::collect, wire::Mode::results}) {
        INFO((mode == wire::Mode::collect ? "collect" : "results"));
        RowBatch b;
        REQUIRE(c->reserve(wire::RecordKind::ecdsa, big.known.tail, big.count(), b) == Status::ok);
        std::memcpy(b.rows, big.rows.data(), big.rows.size());
        const auto t_submit = Clock::now();
        REQUIRE(c->submit(b, mode) == Status::ok);
        std::this_thread::sleep_for(kCancelAfter);
        const auto t_cancel = Clock::now();
        REQUIRE(c->cancel(b) == Status::ok);
        const BatchResult r = c->wait(b);
        const auto t_done = Clock::now();
        CHECK(r.status == Status::cancelled);
        CHECK(r.local_rows == 0);
        CHECK(t_done - t_cancel < kCancelBound);
        const std::uint64_t verified = r.valid + r.invalid;
        std::fprintf(stderr, "%s: cancelled after %.0f ms, %llu of %zu rows verified, answered in %.1f ms\n",
                     mode == wire::Mode::collect ? "collect" : "results",
                     std::chrono::duration<double, std::milli>(t_cancel - t_submit).count(),
                     static_cast<unsigned long long>(verified), big.count(),
                     std::chrono::duration<double, std::milli>(t_done - t_cancel).count());
        // Really cut short: most rows were never verified.
        CHECK(verified < big.count() / 2);
        if (mode == wire::Mode::collect) {
            std::uint64_t zeroed = 0;
            CHECK(check_untouched_or_collected(big, b.rows, zeroed) == "");
            CHECK(zeroed == r.valid);
        } else {
            // A verified row reads its known verdict; a dropped one reads 0.
            std::uint64_t ones = 0;
            std::string problem;
            for (std::size_t i = 0; i < big.count() && problem.empty(); ++i) {
                if (b.results[i] > 1 || (b.results[i] == 1 && big.expected[i] != 1))
                    problem = "row " + std::to_string(i) + ": verdict " + std::to_string(b.results[i]);
                ones += b.results[i];
            }
            CHECK(problem == "");
            CHECK(ones == r.valid);
        }
        // A second cancel of the finished batch names nothing in flight.
        CHECK(c->cancel(b) == Status::not_found);
        c->release(b);
    }
    stop_bystander = true;
    bystander.join();
    CHECK(bystander_ok);
    CHECK(bystander_batches > 0);

    // The session is fine afterwards: a full batch gets every known verdict.
    CHECK(check_batch(*c, wire::Table::ecdsa, wire::Mode::results, wire::SigEncoding::opaque, 300, 502));
}

TEST_CASE("cancel of a batch that already completed or was never submitted is answered", "[daemon][cancel]") {
    DaemonProcess d({"--cpu-threads", "2", "--arena-size", "1M"});
    auto c = Client::connect(options_for(d, "late-cancel"));
    const KnownRows k = make_known_rows(wire::Table::schnorr, 50, wire::SigEncoding::opaque, 503);
    RowBatch b;
    REQUIRE(c->reserve(wire::RecordKind::schnorr, k.tail, 50, b) == Status::ok);
    std::memcpy(b.rows, k.rows.data(), k.rows.size());
    CHECK(c->cancel(b) == Status::invalid_argument);  // reserved, not submitted
    REQUIRE(c->submit(b, wire::Mode::results) == Status::ok);
    // Give the daemon time to complete it without reaping it here, so the
    // cancel entry reaches a daemon whose job is gone: not_found from the daemon
    // (50 rows take milliseconds; the wait leaves room for a loaded machine).
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK(c->cancel(b) == Status::not_found);
    const BatchResult r = c->wait(b);
    REQUIRE(r.ok());
    CHECK(first_differences(std::vector<std::uint8_t>(b.results, b.results + 50), k.expected) == "");
    c->release(b);
    CHECK(c->ping() == Status::ok);
}

TEST_CASE("the copy API with a stop token and the C ABI cancel token return cancelled promptly", "[daemon][cancel]") {
    DaemonProcess d({"--cpu-threads", "2"});
    const BigBatch big = make_big_batch(504);
    const std::size_t n = big.count();
    const std::size_t stride = big.known.stride, tail = big.known.tail;

    SECTION("C++: run_columns(collect) with std::stop_token") {
        // The rows as libbitcoin's column tables.
        std::vector<std::uint8_t> message(n * 32), key(n * 33), signature(n * 64), correlate(n * tail);
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint8_t* row = big.rows.data() + i * stride;
            std::memcpy(&message[i * 32], row, 32);
            std::memcpy(&key[i * 33], row + 32, 33);
            std::memcpy(&signature[i * 64], row + 65, 64);
            std::memcpy(&correlate[i * tail], row + 129, tail);
        }
        const std::vector<std::uint8_t> correlate_before = correlate;
        auto c = Client::connect(options_for(d, "stop-token"));
        Columns cols;
        cols.kind = wire::RecordKind::ecdsa;
        cols.count = n;
        cols.tail_size = tail;
        cols.message = message.data();
        cols.key = key.data();
        cols.signature = signature.data();
        cols.correlate = correlate.data();
        std::stop_source source;
        BatchResult r;
        Clock::time_point t_done;
        std::thread caller([&] {
            r = c->run_columns(cols, wire::Mode::collect, nullptr, shm::kTableUnspecified, source.get_token());
            t_done = Clock::now();
        });
        std::this_thread::sleep_for(kCancelAfter);
        const auto t_cancel = Clock::now();
        source.request_stop();
        caller.join();
        CHECK(r.status == Status::cancelled);
        CHECK(r.local_rows == 0);
        CHECK(t_done - t_cancel < kCancelBound);
        CHECK(r.valid + r.invalid < n / 2);
        std::uint64_t zeroed = 0;
        std::string problem;
        for (std::size_t i = 0; i < n && problem.empty(); ++i) {
            const std::uint8_t* now = &correlate[i * tail];
            const bool kept = std::memcmp(now, &correlate_before[i * tail], tail) == 0;
            const bool cleared = std::all_of(now, now + tail, [](std::uint8_t x) { return x == 0; });
            if (!kept && !cleared) problem = "row " + std::to_string(i) + ": correlate half-written";
            else if (cleared && big.expected[i] != 1) problem = "row " + std::to_string(i) + ": invalid row zeroed";
            zeroed += cleared;
        }
        CHECK(problem == "");
        CHECK(zeroed == r.valid);
    }

    SECTION("C ABI: sigverify_set_cancel_token around sigverify_collect_ecdsa") {
        std::vector<std::uint8_t> rows = big.rows;
        sigverify_options o;
        sigverify_options_init(&o);
        const std::string dir = d.dir();
        o.runtime_dir = dir.c_str();
        o.client_name = "c-cancel";
        sigverify_client* c = nullptr;
        REQUIRE(sigverify_connect(&o, &c) == SIGVERIFY_OK);
        sigverify_cancel_token* token = sigverify_cancel_token_new();
        REQUIRE(token != nullptr);
        CHECK(sigverify_cancel_token_cancelled(token) == 0);
        int rc = -1;
        std::uint64_t valid = 0, invalid = 0;
        Clock::time_point t_done;
        std::thread caller([&] {
            sigverify_set_cancel_token(token);
            rc = sigverify_collect_ecdsa(c, rows.data(), n, tail, SIGVERIFY_ENCODING_OPAQUE);
            t_done = Clock::now();
            sigverify_last_counts(&valid, &invalid);
            sigverify_set_cancel_token(nullptr);
        });
        std::this_thread::sleep_for(kCancelAfter);
        const auto t_cancel = Clock::now();
        sigverify_cancel_token_cancel(token);
        caller.join();
        CHECK(sigverify_cancel_token_cancelled(token) == 1);
        CHECK(rc == SIGVERIFY_E_CANCELLED);
        CHECK(t_done - t_cancel < kCancelBound);
        CHECK(valid + invalid < n / 2);
        std::uint64_t zeroed = 0;
        CHECK(check_untouched_or_collected(big, rows.data(), zeroed) == "");
        CHECK(zeroed == valid);
        sigverify_cancel_token_free(token);
        // Unbound again: a later call of this thread runs to its end.
        std::vector<std::uint8_t> small(big.known.rows.begin(), big.known.rows.begin() + 100 * stride);
        std::vector<std::uint8_t> res(100);
        CHECK(sigverify_verify_ecdsa(c, small.data(), 100, tail, SIGVERIFY_ENCODING_OPAQUE, res.data()) == SIGVERIFY_OK);
        CHECK(first_differences(res, std::vector<std::uint8_t>(big.expected.begin(), big.expected.begin() + 100)) == "");
        CHECK(std::string(sigverify_strerror(SIGVERIFY_E_NOT_FOUND)) == "no batch in flight or registered buffer with that id");
        sigverify_close(c);
    }
}
