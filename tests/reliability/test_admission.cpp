// SPDX-License-Identifier: MIT
// Admission under attack (issue 17, defects 1, 2 and 6), against a real
// sigverifyd: a client that keeps every segment it is given, a
// connect/handshake/close loop beside honest clients, idle connections that
// hold the stats socket's limit. Each case asserts the bound: shared memory
// (the retained segments' blocks), honest sessions served, log lines, stats
// reachable; and libsigverify's local fallback when a daemon cannot serve.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <memory>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "daemon/serve/connection_rate.hpp"
#include "daemon/serve/segment_budget.hpp"
#include "hostile_client.hpp"
#include "sigverify/client.hpp"

using namespace sigverify;
using namespace sigverify::test;
using shm::Status;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// Bytes a descriptor's file really holds (tmpfs pages), not its size.
std::uint64_t held_bytes(int fd) {
    struct stat st{};
    return fstat(fd, &st) == 0 ? std::uint64_t(st.st_blocks) * 512 : 0;
}

// connect -> hello -> take the segment descriptor -> close, never acking.
// Returns the descriptor, or -1 when the daemon refused (reply status in *status).
int take_segment_and_leave(const std::string& path, std::uint32_t* status) {
    RawSession s;
    if (!s.open(path)) return -1;
    shm::HelloRequest hello{};
    hello.magic = shm::kHelloMagic;
    hello.protocol_version = shm::kProtocolVersion;
    shm::copy_text(hello.client_name, "retainer");
    (void)send(s.sock, &hello, sizeof hello, MSG_NOSIGNAL);
    const shm::ReceivedPacket r = shm::receive_packet(s.sock, &s.reply, sizeof s.reply, shm::KeepDescriptor::first);
    *status = r.bytes == static_cast<ssize_t>(sizeof s.reply) ? s.reply.status : ~0u;
    const int fd = r.fd;  // s closes the socket on return
    return fd;
}

// What an honest client in its own process reports (its exit status).
constexpr int kServedAtOnce = 0;
constexpr int kServedAfterBusy = 10;  // served, after one or more `busy` answers

// An honest client in its own process (its own pid, as a node or a CLI
// command is): handshake, one verified row, close. kServedAtOnce or
// kServedAfterBusy when all went well, anything else on failure.
// busy_patience: how long it keeps trying again (every 20 ms) while the
// daemon answers busy -- what a client of an attacker's own uid must do while
// the attacker's sessions hold that uid's share of slots or segments until
// the daemon has torn them down (docs/security.md). A bound in time, not a
// number of tries: how long a teardown takes depends on the machine's load.
int honest_session_in_child(const std::string& path,
                            std::chrono::milliseconds busy_patience = std::chrono::milliseconds(0)) {
    const pid_t pid = fork();
    if (pid == 0) {
        const auto give_up = Clock::now() + busy_patience;
        for (int attempt = 0;; ++attempt) {
            RawSession s;
            if (s.handshake(path)) _exit(!s.verify_one(7) ? 1 : attempt == 0 ? kServedAtOnce : kServedAfterBusy);
            if (s.reply.status != static_cast<std::uint32_t>(Status::busy) || Clock::now() >= give_up) {
                std::fprintf(stderr, "honest client: attempt %d refused, reply status %u: %.*s\n", attempt,
                             s.reply.status, int(sizeof s.reply.error), s.reply.error);
                _exit(1);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Runs a command, stdout and stderr together; (exit status, output).
std::pair<int, std::string> run_cli(const std::vector<std::string>& argv) {
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) return {-1, "pipe failed"};
    const pid_t pid = fork();
    if (pid == 0) {
        dup2(pipefd[1], 1);
        dup2(pipefd[1], 2);
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execv(args[0], args.data());
        _exit(127);
    }
    close(pipefd[1]);
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = read(pipefd[0], buf, sizeof buf)) != 0;) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) break;
        out.append(buf, std::size_t(n));
    }
    close(pipefd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return {WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), out};
}

}  // namespace

TEST_CASE("a client that keeps every segment and never acks holds no shared memory beyond the budget",
          "[reliability][hostile][shm]") {
    DaemonProcess d({"--cpu-threads", "1", "--arena-size", "1M", "--ring-entries", "8", "--max-clients", "2"});
    const json gauges = json::parse(stats_command(d.dir(), "stats json"))["gauges"];
    const std::uint64_t budget = gauges["shm_budget_bytes"].get<std::uint64_t>();
    REQUIRE(budget >= 4 * (1u << 20));  // 2 segments of ~1 MiB per slot
    REQUIRE(budget < 5 * (1u << 20));

    // Until the loop has held 10 segments and met the rate limit, not a
    // number of tries: a session's slot and segment are free again only once
    // the daemon tore it down, and on a loaded machine that can take longer
    // than 200 refused tries (CI: 3 segments kept, 197 refusals, all slot or
    // budget). A refused try waits 2 ms, so the loop spans the teardowns.
    const auto give_up = Clock::now() + std::chrono::seconds(30);
    const auto done = [&](std::size_t kept_count) {
        return kept_count >= 10 && counter(d, "connections_rate_limited") >= 1;
    };
    std::vector<int> kept;
    int refused = 0;
    std::uint64_t most = 0;
    while (Clock::now() < give_up) {
        std::uint32_t status = 0;
        const int fd = take_segment_and_leave(d.socket_path(), &status);
        if (fd < 0) {
            CHECK(status == std::uint32_t(Status::busy));  // rate limit or budget: a clear refusal
            ++refused;
            if (done(kept.size())) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
            continue;
        }
        // A POSIX shared memory file carries F_SEAL_SEAL: the client cannot
        // seal it against the daemon's truncation.
        CHECK((fcntl(fd, F_GET_SEALS) & F_SEAL_SEAL) != 0);
        CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) != 0);
        kept.push_back(fd);
        std::uint64_t held = 0;
        for (int k : kept) held += held_bytes(k);
        most = std::max(most, held);
    }
    INFO("kept " << kept.size() << " segments, " << refused << " refusals, at most " << most << " bytes held");
    std::printf("retaining loop: kept %zu segments, %d refusals, at most %llu bytes held (budget %llu)\n",
                kept.size(), refused, static_cast<unsigned long long>(most), static_cast<unsigned long long>(budget));
    CHECK(kept.size() >= 10);  // the loop did get segments (the rate limit's burst)
    CHECK(most <= budget);
    // Every retained segment is released soon after its session ended.
    CHECK(eventually(
        [&] {
            std::uint64_t held = 0;
            for (int k : kept) held += held_bytes(k);
            return held == 0;
        },
        std::chrono::seconds(3)));
    CHECK(counter(d, "segments_truncated") >= kept.size());
    CHECK(json::parse(stats_command(d.dir(), "stats json"))["gauges"]["shm_bytes"].get<std::uint64_t>() == 0);
    CHECK(counter(d, "connections_refused") == std::uint64_t(refused));
    CHECK(counter(d, "connections_rate_limited") >= 1);
    // An honest client (another process) still connects and verifies.
    CHECK(honest_session_in_child(d.socket_path()) == 0);
    for (int k : kept) close(k);
}

TEST_CASE("one uid is held to --max-segments-per-uid while slots and the total budget are left",
          "[reliability][hostile][shm]") {
    DaemonProcess d({"--cpu-threads", "1", "--arena-size", "64K", "--ring-entries", "8", "--max-clients", "8",
                     "--max-segments-per-uid", "2"});
    const std::string path = d.socket_path();
    std::vector<std::unique_ptr<RawSession>> held;
    for (int i = 0; i < 2; ++i) {
        held.push_back(std::make_unique<RawSession>());
        REQUIRE(held.back()->handshake(path));
    }
    // A third session of the same uid: 6 slots and 14 of the 16 segments of
    // the total budget are free, but the uid holds its 2.
    RawSession third;
    CHECK_FALSE(third.handshake(path));
    CHECK(third.reply.status == std::uint32_t(Status::busy));
    const std::string why(third.reply.error);
    INFO(why);
    CHECK(why.find("uid") != std::string::npos);
    CHECK(counter(d, "connections_over_shm_budget") == 1);
    // Once one of its sessions ended and its segment was released, the uid gets one again.
    held.pop_back();
    CHECK(eventually([&] { return RawSession().handshake(path); }, std::chrono::seconds(3)));
}

TEST_CASE("a closed session frees its slot at once", "[reliability][hostile][slots]") {
    DaemonProcess d({"--cpu-threads", "1", "--arena-size", "64K", "--ring-entries", "8", "--max-clients", "1"});
    // One client after the other, each in its own process, no pause: each
    // one finds the single slot free (it lingered ~50 ms before).
    int failed = 0;
    for (int i = 0; i < 20; ++i) failed += honest_session_in_child(d.socket_path()) != 0;
    CHECK(failed == 0);
    CHECK(counter(d, "connections_refused") == 0);
}

TEST_CASE("a connect/handshake/close loop neither locks honest clients out nor floods the log",
          "[reliability][hostile][slots]") {
    DaemonProcess d({"--cpu-threads", "1", "--arena-size", "64K", "--ring-entries", "8", "--max-clients", "4"});
    const std::string path = d.socket_path();
    REQUIRE(eventually([&] { return d.log().find("listening on") != std::string::npos; }, std::chrono::seconds(5)));
    const std::size_t lines0 = log_lines(d);
    const double cpu0 = cpu_seconds(d.pid());

    // The attacker: one process, never more than one session open. Its first
    // burst (20 sessions at once, before its process's rate applies) can hold
    // its uid's share of segments while the daemon tears the sessions down;
    // it says on `burst` when the rate limit first refused it (the burst is
    // spent, from then on it gets at most 20 sessions a second).
    constexpr auto kAttack = std::chrono::milliseconds(2000);
    int burst[2];
    REQUIRE(pipe2(burst, O_CLOEXEC) == 0);
    const pid_t attacker = fork();
    if (attacker == 0) {
        close(burst[0]);
        const auto end = Clock::now() + kAttack;
        unsigned sessions = 0;
        bool told = false;
        while (Clock::now() < end) {
            RawSession s;
            const bool served = s.handshake(path);
            sessions += served;
            if (!served && !told &&
                std::string(s.reply.error, strnlen(s.reply.error, sizeof s.reply.error)).find("rate limit") !=
                    std::string::npos) {
                told = write(burst[1], "b", 1) == 1;
            }
        }
        _exit(sessions > 0 ? 0 : 1);
    }
    close(burst[1]);
    const auto t0 = Clock::now();
    // An honest client of the same uid during the burst: it may be told busy
    // while the burst's sessions hold the uid's share of segments (they pass
    // through that share six at a time, each held until it is torn down: on
    // a loaded machine the burst lasts a few hundred milliseconds, longer
    // than the one retry 50 ms later this test used to allow, which failed
    // once in CI), but it is served once the share is free again.
    int failed = 0, served_after_busy = 0;
    const auto tally = [&](int st) {
        failed += st != kServedAtOnce && st != kServedAfterBusy;
        served_after_busy += st == kServedAfterBusy;
    };
    tally(honest_session_in_child(path, kAttack));
    // 20 honest clients after the burst, each its own process, spread over
    // the rest of the attack: the loop now holds at most its one session and
    // the few still being torn down, so each is served (a busy answer here
    // would mean sessions outlive their clients by a quarter second: printed).
    pollfd spent{burst[0], POLLIN, 0};
    REQUIRE(poll(&spent, 1, 5000) == 1);
    close(burst[0]);
    const auto after_burst = Clock::now();
    for (int i = 0; i < 20; ++i) {
        tally(honest_session_in_child(path, std::chrono::milliseconds(1000)));
        std::this_thread::sleep_until(after_burst + (t0 + kAttack - after_burst) * (i + 1) / 20);
    }
    int st = 0;
    rusage ru{};
    wait4(attacker, &st, 0, &ru);
    const double attacker_cpu = double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                                double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
    const double cpu = cpu_seconds(d.pid()) - cpu0;
    const std::size_t lines = log_lines(d) - lines0;
    const std::uint64_t limited = counter(d, "connections_rate_limited");
    const std::uint64_t accepted = counter(d, "connections_accepted");
    const std::uint64_t over_budget = counter(d, "connections_over_shm_budget");
    std::printf("connect loop: over the shared memory budget %llu\n", static_cast<unsigned long long>(over_budget));
    std::printf("connect loop: %d honest client(s) served after a busy answer (the first one runs during the burst)\n",
                served_after_busy);
    INFO("honest failures " << failed << "; attacker CPU " << attacker_cpu << " s; daemon CPU " << cpu << " s; log lines " << lines << "; accepted "
                            << accepted << "; rate-limited " << limited);
    std::printf("connect loop: attacker CPU %.3f s\n", attacker_cpu);
    std::printf("connect loop: honest failures %d, daemon CPU %.3f s, log lines %zu, accepted %llu, rate-limited "
                "%llu\n",
                failed, cpu, lines, static_cast<unsigned long long>(accepted),
                static_cast<unsigned long long>(limited));
    CHECK(WIFEXITED(st));
    CHECK(failed == 0);
    CHECK(limited > 0);
    // The attacker's sessions: its process's burst (20) plus 20/s, then refusals.
    CHECK(accepted <= 20 + 20 + 3 * 20);
    // Session start and end lines and refusal lines are each rate-limited (10
    // per kind per 10 s, then one summary): a bounded number of lines however
    // many sessions the loop opens, not one or two per attempt.
    CHECK(accepted > 30);  // more sessions than the limit lets lines through
    CHECK(lines <= 4 * 11 + 4);
    // A refused attempt costs the daemon no more than it costs the attacker
    // (it cost the daemon 1.4 cores against the attacker's ~0 before rate
    // limits). Under ASan more of the daemon's share is instrumented C++ (the
    // attacker's is system calls): a looser bound there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    CHECK(cpu < 3 * attacker_cpu + 0.3);
#else
    CHECK(cpu <= 1.5 * attacker_cpu + 0.05);
#endif
    // Once the attacker's last sessions are torn down, a client is served at once.
    CHECK(eventually(
        [&] { return json::parse(stats_command(d.dir(), "stats json"))["gauges"]["shm_bytes"].get<std::uint64_t>() == 0; },
        std::chrono::seconds(3)));
    CHECK(honest_session_in_child(path) == kServedAtOnce);
}

TEST_CASE("stats stay reachable while idle connections hold the stats connection limit",
          "[reliability][hostile][stats]") {
    DaemonProcess d({"--cpu-threads", "1", "--arena-size", "64K", "--ring-entries", "8"});
    REQUIRE(eventually([&] { return ::access((d.dir() + "/stats.sock").c_str(), F_OK) == 0; },
                       std::chrono::seconds(5)));
    // The siege: 16 idle connections (the limit), reopened as they are closed.
    std::atomic<bool> stop{false};
    std::atomic<unsigned> reopened{0};
    std::thread siege([&] {
        std::vector<int> idle;
        while (!stop.load()) {
            for (auto it = idle.begin(); it != idle.end();) {
                pollfd p{*it, POLLIN | POLLRDHUP, 0};
                if (poll(&p, 1, 0) > 0) {  // closed by the daemon (evicted, or the request timeout)
                    close(*it);
                    it = idle.erase(it);
                } else {
                    ++it;
                }
            }
            while (idle.size() < 16) {
                const int fd = stats_connect(d.dir());
                if (fd < 0) break;
                idle.push_back(fd);
                ++reopened;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        for (int fd : idle) close(fd);
    });
    REQUIRE(eventually([&] { return reopened.load() >= 16; }, std::chrono::seconds(5)));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    int answered = 0;
    std::string last;
    for (int i = 0; i < 10; ++i) {
        const auto [rc, out] = run_cli({SIGVERIFY_CLI_BIN, "stats", "--runtime-dir", d.dir()});
        last = out;
        answered += rc == 0 && out.find("sigverifyd_connections_accepted_total") != std::string::npos;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    stop.store(true);
    siege.join();
    INFO("last answer: " << last.substr(0, 300));
    CHECK(answered == 10);
    CHECK(counter(d, "stats_evicted") >= 10);
}

TEST_CASE("sigverify stats prints the daemon's refusal, not a broken pipe", "[reliability][hostile][stats]") {
    // A stand-in stats socket that refuses as sigverifyd does at its limit:
    // the reason, then close, whether or not the command was read. The CLI's
    // send then may fail (EPIPE); the reason must be what it reports.
    const std::string dir = make_temp_dir();
    const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const sockaddr_un addr = unix_addr(dir + "/stats.sock");
    REQUIRE(bind(listener, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(listen(listener, 16) == 0);
    constexpr int kTries = 10;
    std::thread refuser([&] {
        for (int i = 0; i < kTries; ++i) {
            const int fd = accept(listener, nullptr, nullptr);
            if (fd < 0) return;
            const std::string line = "error: too many stats connections (16)\n";
            (void)send(fd, line.data(), line.size(), MSG_NOSIGNAL);
            shutdown(fd, SHUT_WR);
            close(fd);
        }
    });
    int reported = 0;
    std::string last;
    for (int i = 0; i < kTries; ++i) {
        const auto [rc, out] = run_cli({SIGVERIFY_CLI_BIN, "stats", "--runtime-dir", dir});
        last = out;
        reported += rc != 0 && out.find("too many stats connections (16)") != std::string::npos &&
                    out.find("Broken pipe") == std::string::npos;
    }
    refuser.join();
    INFO("last output: " << last);
    CHECK(reported == kTries);
    close(listener);
    remove_tree(dir);
}

TEST_CASE("Fallback::local covers a daemon that cannot create the segment", "[reliability][hostile][fallback]") {
    // A stand-in daemon that answers every hello with system_error, as
    // sigverifyd does when /dev/shm is full.
    const std::string dir = make_temp_dir();
    const int listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    const sockaddr_un addr = unix_addr(dir + "/sigverifyd.sock");
    REQUIRE(bind(listener, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(listen(listener, 8) == 0);
    std::atomic<bool> stop{false};
    std::thread fake([&] {
        while (!stop.load()) {
            pollfd p{listener, POLLIN, 0};
            if (poll(&p, 1, 50) <= 0) continue;
            const int fd = accept(listener, nullptr, nullptr);
            if (fd < 0) continue;
            shm::HelloRequest hello{};
            (void)recv(fd, &hello, sizeof hello, 0);
            shm::HelloReply reply{};
            reply.magic = shm::kReplyMagic;
            reply.protocol_version = shm::kProtocolVersion;
            reply.status = static_cast<std::uint32_t>(Status::system_error);
            shm::copy_text(reply.error, "sigverifyd could not create the shared segment");
            (void)send(fd, &reply, sizeof reply, MSG_NOSIGNAL);
            close(fd);
        }
    });
    ClientOptions o;
    o.runtime_dir = dir;
    o.local_threads = 1;
    Status st = Status::ok;
    std::string msg;
    // Without fallback: the error is reported.
    CHECK(Client::connect(o, st, msg) == nullptr);
    CHECK(st == Status::system_error);
    CHECK(msg.find("could not create the shared segment") != std::string::npos);
    // With it: a client that verifies in-process, with the right verdicts.
    o.fallback = Fallback::local;
    auto c = Client::connect(o, st, msg);
    REQUIRE(c != nullptr);
    CHECK(!c->connected());
    const KnownRows known = make_known_rows(wire::Table::ecdsa, 16, wire::SigEncoding::opaque, 3);
    std::vector<std::uint8_t> results(16, 0xAA);
    const BatchResult r = c->verify_ecdsa(known.rows.data(), 16, known.tail, results.data());
    CHECK(r.status == Status::ok);
    CHECK(r.local_rows == 16);
    CHECK(results == known.expected);
    stop.store(true);
    fake.join();
    close(listener);
    remove_tree(dir);
}

TEST_CASE("SegmentBudget: refuses what would exceed the total or the uid's bound; release gives it back",
          "[reliability][shm][unit]") {
    daemon::SegmentBudget b(300, 200);
    std::string why;
    CHECK(b.try_reserve(1000, 150, why));
    CHECK_FALSE(b.try_reserve(1000, 100, why));  // uid 1000 would hold 250 > 200
    CHECK(why.find("uid 1000") != std::string::npos);
    CHECK(b.try_reserve(1001, 100, why));
    CHECK_FALSE(b.try_reserve(1002, 100, why));  // total would be 350 > 300
    CHECK(why.find("budget exhausted") != std::string::npos);
    CHECK(b.total() == 250);
    CHECK(b.of_uid(1002) == 0);
    b.release(1000, 150);
    CHECK(b.total() == 100);
    CHECK(b.try_reserve(1002, 100, why));
    CHECK(b.of_uid(1000) == 0);
}

TEST_CASE("ConnectionRate: a burst per process and per uid, then the rate; one process cannot use up its uid",
          "[reliability][slots][unit]") {
    daemon::ConnectionRate::Limits l;
    l.per_process_burst = 5;
    l.per_process_rate = 10;
    l.per_uid_burst = 8;
    l.per_uid_rate = 10;
    l.max_tracked = 4;
    daemon::ConnectionRate rate(l);
    const auto t0 = daemon::ConnectionRate::Clock::now();
    std::string why;
    int admitted = 0;
    for (int i = 0; i < 20; ++i) admitted += rate.admit(1000, 42, t0, why);
    CHECK(admitted == 5);  // the process's burst
    CHECK(why.find("process 42") != std::string::npos);
    // Another process of the same uid still gets the rest of the uid's burst.
    admitted = 0;
    for (int i = 0; i < 20; ++i) admitted += rate.admit(1000, 43, t0, why);
    CHECK(admitted == 3);
    CHECK(why.find("uid 1000") != std::string::npos);
    // Another uid is not affected.
    CHECK(rate.admit(2000, 44, t0, why));
    // 100 ms later: one token per 100 ms for the process and the uid.
    CHECK(rate.admit(1000, 42, t0 + std::chrono::milliseconds(100), why));
    CHECK_FALSE(rate.admit(1000, 42, t0 + std::chrono::milliseconds(100), why));
    // Many processes: the table stays bounded, the uid's bucket still limits them.
    admitted = 0;
    for (int pid = 100; pid < 200; ++pid) admitted += rate.admit(3000, pid, t0, why);
    CHECK(admitted == 8);
}
