// SPDX-License-Identifier: MIT
// contrib/libbitcoin's sigverifyd branch bounds each call by its batch
// timeout, the connect included: a call never waits for a connect and then
// for a batch (up to twice SIGVERIFY_LBTC_BATCH_TIMEOUT_MS), and a daemon that
// died and came back at the same socket is found again by a later call. Its
// own process, so that the branch's process-wide session starts empty here.
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "daemon_fixture.hpp"
#include "known_tables.hpp"
#include "libbitcoin_batch_shim.hpp"
#include "packed_rows.hpp"

using namespace sigverify;
using namespace sigverify::test;
namespace lb = libbitcoin::system;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kTimeoutMs = 1500;
// What a call may take past its timeout (a loaded 2-core machine).
constexpr int kSlackMs = 400;

struct Rows {
    std::vector<lb::ecdsa::batch::row_t> rows;
    std::vector<std::uint8_t> expected;
};

// Enough rows that a batch outlasts the daemon's short wake-up below.
Rows make_rows() {
    const lbtc_call_site::Tables t = make_tables(16000, 91);
    return Rows{pack(t).ecdsa, t.ecdsa_expected};
}

struct Call {
    bool verdict = false;
    std::vector<std::uint8_t> results;  // one byte a row when verdict
    long ms = 0;
};

Call call(const Rows& r) {
    const lb::ecdsa::batch batch{std::span<const lb::ecdsa::batch::row_t>(r.rows)};
    const lb::stopper go{false};
    lb::data_chunk out;
    const auto t0 = Clock::now();
    Call c;
    c.verdict = sigverify::libbitcoin_branch::try_verify(out, go, batch);
    c.ms = static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count());
    if (c.verdict) c.results = out.empty() ? std::vector<std::uint8_t>(r.rows.size(), 1) : out;
    return c;
}

// Calls until one gives verdicts (at most `limit`), each within the bound.
Call first_verdict(const Rows& r, std::chrono::milliseconds limit) {
    const auto end = Clock::now() + limit;
    Call c;
    do {
        c = call(r);
        CHECK(c.ms <= kTimeoutMs + kSlackMs);
        if (c.verdict) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    } while (Clock::now() < end);
    return c;
}

}  // namespace

TEST_CASE("a branch call waits for a connect or a batch, never both", "[lbtc][contrib]") {
    const Rows r = make_rows();
    DaemonProcess d({"--cpu-threads", "2"});
    setenv("SIGVERIFY_RUNTIME_DIR", d.dir().c_str(), 1);
    setenv("SIGVERIFY_LBTC_BATCH_TIMEOUT_MS", std::to_string(kTimeoutMs).c_str(), 1);

    // The daemon is stopped when the first call connects; it wakes long
    // enough to finish the handshake near the end of the connect timeout and
    // stops again: before the fix the call then waited the whole batch
    // timeout as well (~2.5 s).
    REQUIRE(::kill(d.pid(), SIGSTOP) == 0);
    auto first = std::async(std::launch::async, [&] { return call(r); });
    std::this_thread::sleep_for(std::chrono::milliseconds(kTimeoutMs * 2 / 3));
    ::kill(d.pid(), SIGCONT);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    ::kill(d.pid(), SIGSTOP);
    const Call c = first.get();
    CHECK_FALSE(c.verdict);  // no verdict, never "invalid": libbitcoin's own order verifies
    CHECK(c.ms <= kTimeoutMs + kSlackMs);
    ::kill(d.pid(), SIGCONT);

    // The session it made answers the later calls with the true verdicts.
    const Call later = first_verdict(r, std::chrono::seconds(8));
    REQUIRE(later.verdict);
    CHECK(lbtc_call_site::first_difference("after the slow connect", later.results, r.expected) == "");

    // A stopped daemon: a batch call waits its timeout, no more, and gives no verdict.
    REQUIRE(::kill(d.pid(), SIGSTOP) == 0);
    const Call stopped = call(r);
    CHECK_FALSE(stopped.verdict);
    CHECK(stopped.ms <= kTimeoutMs + kSlackMs);
    ::kill(d.pid(), SIGCONT);

    // The daemon dies and a new one starts at the same socket: the calls in
    // between have no verdict, each within the bound, and a later one is the
    // new daemon's.
    d.stop(SIGKILL);
    const Call gone = call(r);
    CHECK_FALSE(gone.verdict);
    CHECK(gone.ms <= kTimeoutMs + kSlackMs);
    d.start();
    const Call back = first_verdict(r, std::chrono::seconds(10));
    REQUIRE(back.verdict);
    CHECK(lbtc_call_site::first_difference("after the restart", back.results, r.expected) == "");
}
