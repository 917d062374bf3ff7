// SPDX-License-Identifier: MIT
// fork() while calls are in flight (issue 44): a node process with the
// libbitcoin hook's process-wide session and a Client of its own, both busy
// on threads against a real daemon, forks children that use the hook and
// the inherited Client at once. Every verdict byte on both sides is checked
// against the known tables (themselves checked against libsecp256k1 by
// test_lbtc_hook). Before the fix the child used the parent's ring and arena:
// each side took the other's verdicts (false VALID among them).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "daemon_fixture.hpp"
#include "known_tables.hpp"
#include "reference/columns.hpp"
#include "sigverify/client.hpp"

using namespace sigverify;
using namespace sigverify::test;

namespace {

// The inherited (or own) Client on the ECDSA and Schnorr columns: "" iff ok
// and every byte is the table's.
std::string client_round(Client& c, const lbtc_call_site::Tables& t) {
    std::vector<std::uint8_t> out(t.ecdsa_rows(), 0xEE);
    BatchResult r = c.verify_ecdsa_columns(t.ecdsa_digest.data(), t.ecdsa_key.data(), t.ecdsa_signature.data(),
                                           t.ecdsa_rows(), out.data());
    if (r.status != Status::ok) return "client ecdsa: status " + std::string(shm::to_string(r.status));
    if (std::string why = lbtc_call_site::first_difference("client ecdsa", out, t.ecdsa_expected); !why.empty()) return why;
    out.assign(t.schnorr_rows(), 0xEE);
    r = c.verify_schnorr_columns(t.schnorr_digest.data(), t.schnorr_key.data(), t.schnorr_signature.data(),
                                 t.schnorr_rows(), out.data());
    if (r.status != Status::ok) return "client schnorr: status " + std::string(shm::to_string(r.status));
    return lbtc_call_site::first_difference("client schnorr", out, t.schnorr_expected);
}

// Hook and client rounds, alternating, `rounds` times (or until stop): "" iff all exact.
std::string busy(Client& c, const std::vector<lbtc_call_site::Tables>& tables, int rounds,
                 const std::atomic<bool>* stop) {
    for (int i = 0; i < rounds && (stop == nullptr || !stop->load()); ++i) {
        const auto& t = tables[static_cast<std::size_t>(i) % tables.size()];
        if (std::string why = lbtc_call_site::run(t, -1); !why.empty()) return "hook: " + why;
        if (std::string why = client_round(c, t); !why.empty()) return why;
    }
    return {};
}

// The node: its hook session and Client made and busy on two threads, then
// `children` forks, each child busy on both at once; true iff every byte on
// both sides was exact and every child ended in time with all exact.
bool node(const std::string& dir, int children) {
    setenv("SIGVERIFY_RUNTIME_DIR", dir.c_str(), 1);
    const std::vector<lbtc_call_site::Tables> tables = {make_tables(6000, 44), make_tables(1500, 45)};
    ClientOptions o;
    o.runtime_dir = dir;
    auto client = Client::connect(o);
    if (std::string why = busy(*client, tables, 1, nullptr); !why.empty()) {  // both sessions up
        std::fprintf(stderr, "node before fork: %s\n", why.c_str());
        return false;
    }
    std::atomic<bool> stop{false};
    std::vector<std::string> parent_why(2);
    std::vector<std::thread> workers;
    for (std::size_t w = 0; w < 2; ++w)
        workers.emplace_back([&, w] { parent_why[w] = busy(*client, tables, 1 << 30, &stop); });
    std::vector<pid_t> pids;
    for (int k = 0; k < children; ++k) {
        std::this_thread::sleep_for(std::chrono::milliseconds(150));  // calls in flight on the threads
        const pid_t pid = fork();
        if (pid == 0) {
            alarm(90);  // a child stuck on the parent's mutex or ring fails, it does not hang the test
            std::atomic<bool> child_stop{false};
            std::string other;
            std::thread second([&] { other = busy(*client, tables, 3, &child_stop); });  // two threads here too
            const std::string why = busy(*client, tables, 3, nullptr);
            second.join();
            if (!why.empty() || !other.empty())
                std::fprintf(stderr, "forked child: %s%s\n", why.c_str(), other.c_str());
            std::fflush(stderr);
            _exit(why.empty() && other.empty() ? 0 : 1);
        }
        pids.push_back(pid);
    }
    bool ok = true;
    for (pid_t pid : pids) {
        const int rc = wait_child(pid);
        if (rc != 0) std::fprintf(stderr, "forked child ended %d\n", rc);
        ok = ok && rc == 0;
    }
    stop = true;
    for (auto& t : workers) t.join();
    for (const std::string& why : parent_why)
        if (!why.empty()) {
            std::fprintf(stderr, "node after fork: %s\n", why.c_str());
            ok = false;
        }
    return ok;
}

}  // namespace

TEST_CASE("fork with calls in flight: hook and Client exact on both sides", "[lbtc][fork]") {
    DaemonProcess d({"--cpu-threads", "2"});
    const pid_t pid = run_in_child([&] { return node(d.dir(), 3); });
    CHECK(wait_child(pid) == 0);
}
