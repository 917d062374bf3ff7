// SPDX-License-Identifier: MIT
// Every client wait has a bound (issue 39, item 1). A daemon that cannot
// accept (stopped with SIGSTOP, its listen backlog full) and a socket that is
// listened on but never accepted: eight threads calling libbitcoin's hook,
// then eight threads sharing one Client with Fallback::local, must each get
// the true verdicts (the local fallback's), every call within its timeout
// plus a small bound. Before the fix the connect blocked without a limit,
// with the client's (or the hook's registry) mutex held: the calls never
// returned while the daemon stayed stopped.
#include <fcntl.h>
#include <spawn.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "daemon_fixture.hpp"
#include "lbtc/known_tables.hpp"
#include "sigverify/client.hpp"
#include "sigverify/lbtc.hpp"

using namespace sigverify;
using namespace sigverify::test;
using Clock = std::chrono::steady_clock;

namespace {

constexpr long kTimeoutMs = 1000;  // the hook's batch timeout and the Client's connect and batch timeouts
constexpr long kBoundMs = 1500;    // what a call may take beyond it (local verification on a loaded machine)
constexpr int kThreads = 8;
constexpr int kCalls = 4;          // per thread at least, and for at least kCallingMs:
constexpr long kCallingMs = 1600;  // later calls retry the connect (every 500 ms) meanwhile

sockaddr_un address_of(const std::string& path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), std::min(path.size() + 1, sizeof a.sun_path - 1));
    return a;
}

// Connects without blocking until the listen backlog at path is full (the
// first EAGAIN); returns the sockets (the caller closes them).
std::vector<int> fill_backlog(const std::string& path) {
    std::vector<int> fds;
    const sockaddr_un a = address_of(path);
    for (int i = 0; i < 5000; ++i) {
        const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        REQUIRE(fd >= 0);
        if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
            const int e = errno;
            ::close(fd);
            REQUIRE(e == EAGAIN);
            return fds;
        }
        fds.push_back(fd);
    }
    FAIL("the backlog never filled");
    return fds;
}

// A socket at dir/sigverifyd.sock that is listened on and never accepted.
int listen_never_accept(const std::string& dir) {
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    const sockaddr_un a = address_of(dir + "/sigverifyd.sock");
    REQUIRE(bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(listen(fd, 4) == 0);
    return fd;
}

// Runs `call` (true when its verdicts are exact) kCalls times on each of
// kThreads threads; false when any answer is wrong or any call took longer
// than kTimeoutMs + kBoundMs.
template <class Call>
bool threads_bounded(const char* what, Call&& call) {
    std::atomic<int> wrong{0};
    std::atomic<long> slowest{0};
    std::atomic<int> calls{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&] {
            const auto start = Clock::now();
            for (int i = 0; i < kCalls || Clock::now() - start < std::chrono::milliseconds(kCallingMs); ++i) {
                const auto t0 = Clock::now();
                if (!call()) ++wrong;
                ++calls;
                const long ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
                long seen = slowest.load();
                while (ms > seen && !slowest.compare_exchange_weak(seen, ms)) {
                }
            }
        });
    for (auto& th : threads) th.join();
    std::fprintf(stderr, "%s: %d calls, %d wrong answers, slowest call %ld ms (bound %ld ms)\n", what,
                 calls.load(), wrong.load(), slowest.load(), kTimeoutMs + kBoundMs);
    return wrong.load() == 0 && slowest.load() <= kTimeoutMs + kBoundMs;
}

// In a forked child pointed at dir: the hook's threads, then one Client's
// threads. Exit 0 when both are exact and bounded.
pid_t start_calls(const std::string& dir, const lbtc_call_site::Tables& t) {
    return run_in_child([&] {
        setenv("SIGVERIFY_RUNTIME_DIR", dir.c_str(), 1);
        setenv("SIGVERIFY_LBTC_BATCH_TIMEOUT_MS", std::to_string(kTimeoutMs).c_str(), 1);
        const std::size_t n = t.ecdsa_rows();
        const bool hook_ok = threads_bounded("hook", [&] {
            std::vector<std::uint8_t> got(n, 7);
            const bool all = lbtc::ecdsa_verify_columns(t.ecdsa_digest.data(), t.ecdsa_key.data(),
                                                        t.ecdsa_signature.data(), n, got.data(), 1);
            return all && got == t.ecdsa_expected;
        });
        ClientOptions opt;
        opt.runtime_dir = dir;
        opt.fallback = Fallback::local;
        opt.local_threads = 1;
        opt.connect_timeout = std::chrono::milliseconds(kTimeoutMs);
        opt.batch_timeout = std::chrono::milliseconds(kTimeoutMs);
        const auto t0 = Clock::now();
        Status st = Status::ok;
        std::string why;
        auto client = Client::connect(opt, st, why);
        const long connect_ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
        std::fprintf(stderr, "Client::connect: %s in %ld ms (%s)\n", std::string(shm::to_string(st)).c_str(),
                     connect_ms, why.c_str());
        if (!client || connect_ms > kTimeoutMs + kBoundMs) return false;
        const bool client_ok = threads_bounded("Client", [&] {
            Columns c;
            c.kind = wire::RecordKind::ecdsa;
            c.count = n;
            c.message = t.ecdsa_digest.data();
            c.key = t.ecdsa_key.data();
            c.signature = t.ecdsa_signature.data();
            std::vector<std::uint8_t> got(n, 7);
            const BatchResult r = client->run_columns(c, wire::Mode::results, got.data());
            return r.ok() && r.valid == n && got == t.ecdsa_expected;
        });
        return hook_ok && client_ok;
    });
}

// Waits for the child at most limit; SIGKILLs it (and fails) past that.
int finish_within(pid_t pid, std::chrono::seconds limit) {
    const auto end = Clock::now() + limit;
    while (Clock::now() < end) {
        int status = 0;
        if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    FAIL("the calls did not return within " << limit.count() << " s (a wait without a bound)");
    return -1;
}

// The CLI's `sigverify ping` pinging in a loop (options: extra arguments);
// its pid. (A CLI that waits without a bound is killed by finish_within.)
pid_t start_cli_ping(const std::string& dir, const std::vector<std::string>& options) {
    std::vector<std::string> args = {SIGVERIFY_CLI_BIN, "ping", "--count", "1000000", "--runtime-dir", dir};
    args.insert(args.end(), options.begin(), options.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    REQUIRE(posix_spawn(&pid, SIGVERIFY_CLI_BIN, nullptr, nullptr, argv.data(), environ) == 0);
    return pid;
}

// The CLI with args, stdout and stderr to files out and err; its pid.
pid_t spawn_cli(const std::vector<std::string>& cli_args, const std::string& out, const std::string& err) {
    std::vector<std::string> args = {SIGVERIFY_CLI_BIN};
    args.insert(args.end(), cli_args.begin(), cli_args.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, SIGVERIFY_CLI_BIN, &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    REQUIRE(rc == 0);
    return pid;
}

std::string file_text(const std::string& path) {
    std::string text;
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
        char buf[4096];
        for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
        std::fclose(f);
    }
    return text;
}

// Every call's worst case, with all threads' calls in turn: generous, it only
// tells a hang from an answer.
constexpr std::chrono::seconds kChildLimit{40};

}  // namespace

TEST_CASE("a stopped daemon with a full listen backlog: every call returns true verdicts in time", "[bounded]") {
    const lbtc_call_site::Tables t = make_tables(200, 39, true);
    DaemonProcess d({"--cpu-threads", "1"});
    REQUIRE(kill(d.pid(), SIGSTOP) == 0);
    std::vector<int> held = fill_backlog(d.socket_path());
    INFO("backlog filled with " << held.size() << " connections");
    const pid_t child = start_calls(d.dir(), t);
    const int rc = finish_within(child, kChildLimit);
    kill(d.pid(), SIGCONT);
    for (int fd : held) ::close(fd);
    CHECK(rc == 0);
}

TEST_CASE("a socket listened on and never accepted: every call returns true verdicts in time", "[bounded]") {
    const lbtc_call_site::Tables t = make_tables(200, 40, true);
    const std::string dir = make_temp_dir();
    const int listener = listen_never_accept(dir);
    SECTION("backlog with room") {
        const pid_t child = start_calls(dir, t);
        CHECK(finish_within(child, kChildLimit) == 0);
    }
    SECTION("backlog full") {
        std::vector<int> held = fill_backlog(dir + "/sigverifyd.sock");
        const pid_t child = start_calls(dir, t);
        CHECK(finish_within(child, kChildLimit) == 0);
        for (int fd : held) ::close(fd);
    }
    ::close(listener);
    remove_tree(dir);
}

TEST_CASE("the hook's timeout bounds a whole call with several pieces in flight on a stopped daemon", "[bounded]") {
    // The smallest arena cuts each call's rows into several pieces, as many
    // in flight as the pipeline takes. Before one deadline covered the
    // call, each piece in flight waited the whole timeout in turn, and a
    // reserve as long again.
    const lbtc_call_site::Tables t = make_tables(600, 41);
    DaemonProcess d({"--cpu-threads", "1", "--arena-size", "64K"});
    const pid_t daemon = d.pid();
    const std::string dir = d.dir();
    const pid_t child = run_in_child([&] {
        setenv("SIGVERIFY_RUNTIME_DIR", dir.c_str(), 1);
        setenv("SIGVERIFY_LBTC_BATCH_TIMEOUT_MS", std::to_string(kTimeoutMs).c_str(), 1);
        const std::size_t n = t.ecdsa_rows();
        const bool all_valid = std::count(t.ecdsa_expected.begin(), t.ecdsa_expected.end(), 0) == 0;
        auto call = [&] {
            std::vector<std::uint8_t> got(n, 7);
            const bool all = lbtc::ecdsa_verify_columns(t.ecdsa_digest.data(), t.ecdsa_key.data(),
                                                        t.ecdsa_signature.data(), n, got.data(), 1);
            return all == all_valid && got == t.ecdsa_expected;
        };
        if (!call()) return false;  // the session is made, and the daemon answers
        if (kill(daemon, SIGSTOP) != 0) return false;
        return threads_bounded("hook, daemon stopped under a live session", call);
    });
    const int rc = finish_within(child, kChildLimit);
    kill(daemon, SIGCONT);
    CHECK(rc == 0);
}

TEST_CASE("sigverify ping gives up on a daemon stopped under it", "[bounded][cli]") {
    DaemonProcess d({"--cpu-threads", "1"});
    const pid_t ping = start_cli_ping(d.dir(), {});  // its default bound, 5 s a ping
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // connected and pinging
    REQUIRE(kill(d.pid(), SIGSTOP) == 0);
    const auto t0 = Clock::now();
    // Exit 4: the daemon failed (timeout), within the bound; before the
    // bound the ping waited as long as the daemon stayed stopped.
    const int rc = finish_within(ping, std::chrono::seconds(20));
    const long ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    kill(d.pid(), SIGCONT);
    INFO("sigverify ping exited " << rc << " after " << ms << " ms");
    CHECK(rc == 4);
    CHECK(ms <= 5000 + kBoundMs);
}

TEST_CASE("sigverify verify gives up on a daemon stopped mid-batch, and writes no verdict", "[bounded][cli]") {
    const std::string tmp = make_temp_dir();
    const std::string rows = tmp + "/rows", results = tmp + "/results", out = tmp + "/out", err = tmp + "/err";
    // Enough rows that one verifier thread is still at them when it stops.
    const pid_t gen = spawn_cli({"gen", "--table", "ecdsa", "--count", "100000", "--invalid-rate", "0.05", "--out",
                                 rows},
                                out, err);
    REQUIRE(finish_within(gen, std::chrono::seconds(120)) == 0);
    DaemonProcess d({"--cpu-threads", "1"});
    constexpr long kCliTimeoutMs = 1000;
    for (const bool columns : {false, true}) {
        std::vector<std::string> args = {"verify", "--runtime-dir", d.dir(), "--timeout-ms",
                                         std::to_string(kCliTimeoutMs), "--out", results};
        if (columns) {
            const std::string cols = tmp + "/columns";
            const pid_t conv = spawn_cli({"columns", "--from-rows", rows, "--table", "ecdsa", "--out", cols}, out, err);
            REQUIRE(finish_within(conv, std::chrono::seconds(60)) == 0);
            args.insert(args.end(), {"--columns", cols});
        } else {
            args.insert(args.end(), {"--in", rows, "--table", "ecdsa"});
        }
        std::remove(results.c_str());
        const pid_t verify = spawn_cli(args, out, err);
        std::this_thread::sleep_for(std::chrono::milliseconds(400));  // connected, the batch in flight
        REQUIRE(kill(d.pid(), SIGSTOP) == 0);
        const auto t0 = Clock::now();
        const int rc = finish_within(verify, std::chrono::seconds(30));
        const long ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
        REQUIRE(kill(d.pid(), SIGCONT) == 0);
        const std::string said = file_text(err);
        INFO((columns ? "columns" : "rows") << ": exit " << rc << " after " << ms << " ms; stderr: " << said);
        CHECK(rc == 4);  // the daemon failed; before the bound it waited as long as the daemon stayed stopped
        CHECK(ms <= kCliTimeoutMs + kBoundMs);
        CHECK(said.find("timeout") != std::string::npos);
        CHECK(file_text(out).empty());      // no summary, no row counted as invalid
        CHECK(access(results.c_str(), F_OK) != 0);  // no verdict file
    }
    remove_tree(tmp);
}
