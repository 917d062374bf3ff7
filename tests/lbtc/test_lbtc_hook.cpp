// SPDX-License-Identifier: MIT
// libbitcoin's batch hook (sigverify/lbtc.hpp) through real sigverifyd
// processes, called exactly as libbitcoin's call site does (call_site.hpp),
// on rows whose verdicts are known (known_tables.hpp) and checked against
// libsecp256k1. Each case runs the hook in a forked child: the hook's
// session is process-wide, so every child starts it fresh against its own
// daemon (SIGVERIFY_RUNTIME_DIR). Fault cases: no daemon at start; the
// daemon killed, stopped (SIGSTOP: the piece times out), restarted, shutting
// down (its pieces cancelled, new ones refused) and refusing the session
// (busy) mid-call. In every case the hook's answers must be the true verdicts,
// never false with a valid row marked 0.
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <algorithm>
#include <functional>
#include <regex>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "daemon_fixture.hpp"
#include "known_tables.hpp"
#include "ops_helpers.hpp"

using namespace sigverify;
using namespace sigverify::test;

namespace {

// Rows the daemon verified (all tables, both verdicts), from its stats socket.
std::uint64_t daemon_rows(const DaemonProcess& d) {
    const std::string text = stats_command(d.dir(), "stats");
    static const std::regex line(R"(sigverifyd_rows_verified_total\{[^}]*\} ([0-9]+))");
    std::uint64_t total = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it)
        total += std::stoull((*it)[1].str());
    return total;
}

struct Child {
    pid_t pid = -1;
    int started_fd = -1;  // readable once the child made its first hook call's gate read
};

// Starts a child that points the hook at dir, signals on a pipe, and runs
// the call site `rounds` times over each of tables; exit 0 iff all exact.
Child start_hook_child(const std::string& dir, const std::vector<lbtc_call_site::Tables>& tables, int expect_gate,
                       long timeout_ms, int rounds = 1) {
    int p[2];
    REQUIRE(pipe(p) == 0);
    Child c;
    c.pid = run_in_child([&] {
        ::close(p[0]);
        setenv("SIGVERIFY_RUNTIME_DIR", dir.c_str(), 1);
        setenv("SIGVERIFY_LBTC_BATCH_TIMEOUT_MS", std::to_string(timeout_ms).c_str(), 1);
        const bool gate = lbtc_call_site::accelerated();  // the gate, read once, before the batches
        const char go = 1;
        if (::write(p[1], &go, 1) != 1) return false;
        ::close(p[1]);
        for (int r = 0; r < rounds; ++r)
            for (const auto& t : tables)
                if (std::string why = lbtc_call_site::run(t, expect_gate); !why.empty()) {
                    std::fprintf(stderr, "hook child: %s (gate %d)\n", why.c_str(), int(gate));
                    return false;
                }
        return true;
    });
    ::close(p[1]);
    c.started_fd = p[0];
    return c;
}

void wait_started(Child& c) {
    pollfd p{c.started_fd, POLLIN, 0};
    REQUIRE(::poll(&p, 1, 20000) == 1);
    char b;
    REQUIRE(::read(c.started_fd, &b, 1) == 1);
    ::close(c.started_fd);
}

int finish(Child& c) { return wait_child(c.pid); }

// Sizes 1, 7 and `large` (over several pieces when large > 32768), and an
// all-valid table for the true fast paths.
std::vector<lbtc_call_site::Tables> tables_up_to(std::size_t large) {
    std::vector<lbtc_call_site::Tables> v;
    for (std::size_t n : {std::size_t{1}, std::size_t{7}, large}) v.push_back(make_tables(n, 100 + n));
    v.push_back(make_tables(std::min<std::size_t>(large, 3001), 7, true));
    return v;
}

const std::vector<lbtc_call_site::Tables>& small_tables() {
    static const std::vector<lbtc_call_site::Tables> t = tables_up_to(33000);
    return t;
}

// Large enough that a fault 100 ms in lands inside the calls on 2 cores.
const std::vector<lbtc_call_site::Tables>& fault_tables() {
    static const std::vector<lbtc_call_site::Tables> t = {make_tables(8000, 77)};
    return t;
}

}  // namespace

TEST_CASE("the known tables are what libsecp256k1 says", "[lbtc]") {
    for (const auto& t : small_tables()) CHECK(check_against_reference(t).empty());
    CHECK(check_against_reference(fault_tables()[0]).empty());
}

TEST_CASE("the hook as libbitcoin calls it, through a CPU daemon: exact verdicts, gate false", "[lbtc]") {
    DaemonProcess d({"--cpu-threads", "2"});
    std::uint64_t rows = 0;
    for (const auto& t : small_tables()) rows += t.ecdsa_rows() + t.schnorr_rows();
    Child c = start_hook_child(d.dir(), small_tables(), 0, 10000);
    wait_started(c);
    CHECK(finish(c) == 0);
    // The daemon did the work (each row at least twice: max_threads 0 and 1).
    CHECK(daemon_rows(d) >= 2 * rows);
}

TEST_CASE("the hook through a host-kernel daemon (the GPU path): exact verdicts, gate true", "[lbtc]") {
    DaemonProcess d({"--backend", "host-kernel", "--cpu-threads", "2"});
    // The kernel math on the CPU is slow: smaller tables.
    static const std::vector<lbtc_call_site::Tables> tables = tables_up_to(301);
    Child c = start_hook_child(d.dir(), tables, 1, 10000);
    wait_started(c);
    CHECK(finish(c) == 0);
    CHECK(daemon_rows(d) > 0);
}

TEST_CASE("the hook with no daemon at start: local libsecp256k1 verdicts, gate false", "[lbtc][faults]") {
    const std::string empty = make_temp_dir();
    Child c = start_hook_child(empty, fault_tables(), 0, 10000);
    wait_started(c);
    CHECK(finish(c) == 0);
    remove_tree(empty);
}

TEST_CASE("the hook while the daemon is killed mid-call", "[lbtc][faults]") {
    DaemonProcess d({"--cpu-threads", "2"});
    Child c = start_hook_child(d.dir(), fault_tables(), 0, 10000);
    wait_started(c);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    d.stop(SIGKILL);
    CHECK(finish(c) == 0);
}

TEST_CASE("the hook while the daemon is stopped (SIGSTOP): the piece times out, verified here", "[lbtc][faults]") {
    DaemonProcess d({"--cpu-threads", "2"});
    Child c = start_hook_child(d.dir(), fault_tables(), 0, 400);
    wait_started(c);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::kill(d.pid(), SIGSTOP);
    const int rc = finish(c);  // must not wait for the daemon
    ::kill(d.pid(), SIGCONT);
    CHECK(rc == 0);
}

TEST_CASE("the hook while the daemon restarts mid-call, and after", "[lbtc][faults]") {
    DaemonProcess d({"--cpu-threads", "2"});
    Child c = start_hook_child(d.dir(), fault_tables(), 0, 10000, 2);
    wait_started(c);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    d.stop(SIGKILL);
    d.start();
    CHECK(finish(c) == 0);
}

TEST_CASE("the hook while the daemon shuts down mid-call (pieces cancelled, then refused)", "[lbtc][faults]") {
    DaemonProcess d({"--cpu-threads", "2"});
    Child c = start_hook_child(d.dir(), fault_tables(), 0, 10000);
    wait_started(c);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    d.stop(SIGTERM);
    CHECK(finish(c) == 0);
}

TEST_CASE("the hook when the daemon refuses its session (busy)", "[lbtc][faults]") {
    DaemonProcess d({"--max-clients", "1", "--cpu-threads", "2"});
    ClientOptions o;
    o.runtime_dir = d.dir();
    auto holder = Client::connect(o);  // takes the only slot
    REQUIRE(holder->connected());
    Child c = start_hook_child(d.dir(), fault_tables(), 0, 10000);
    wait_started(c);
    CHECK(finish(c) == 0);
}
