// SPDX-License-Identifier: MIT
// Hostile clients against a real sigverifyd (issue 17): packets after the
// handshake, descriptor exhaustion (EMFILE), log amplification. Each case
// speaks the protocol by hand and asserts a bound: the session keeps working,
// no descriptor leaks, the daemon's CPU time and log stay small, the
// counters keep the exact numbers.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "hostile_client.hpp"
#include "ops/ops_helpers.hpp"
#include "shm_protocol/doorbell.hpp"
#include "shm_protocol/fd_passing.hpp"
#include "shm_protocol/info_message.hpp"
#include "sigverify/shm_protocol/segment_access.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"

using namespace sigverify;
using namespace sigverify::test;
using shm::Status;
using nlohmann::json;
using Clock = std::chrono::steady_clock;


TEST_CASE("packets after the handshake (oversized, carrying descriptors) are drained, counted and ignored",
          "[reliability][hostile]") {
    DaemonProcess d({"--cpu-threads", "1", "--arena-size", "64K", "--ring-entries", "8"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    REQUIRE(s.verify_one(1));
    REQUIRE(eventually([&] { return d.log().find("'raw' connected") != std::string::npos; },
                       std::chrono::seconds(3)));
    const std::size_t fds0 = daemon_fds(d);
    REQUIRE(counter(d, "protocol_errors") == 0);

    constexpr int kPackets = 60;  // 20 oversized, 20 with a descriptor, 20 both
    const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(devnull >= 0);
    std::vector<std::uint8_t> big(4096, 0x5A);
    for (int i = 0; i < kPackets; ++i) {
        const bool oversized = i % 3 != 1, with_fd = i % 3 != 0;
        REQUIRE(shm::send_packet(s.sock, big.data(), oversized ? big.size() : 16, with_fd ? devnull : -1));
    }
    close(devnull);
    REQUIRE(eventually([&] { return counter(d, "protocol_errors") == kPackets; }, std::chrono::seconds(5)));
    // The session still works, and no descriptor was kept.
    CHECK(s.verify_one(2));
    CHECK(s.verify_one(3));
    CHECK(eventually([&] { return daemon_fds(d) == fds0; }, std::chrono::seconds(2)));
    CHECK(daemon_fds(d) == fds0);
    CHECK(counter(d, "protocol_errors") == kPackets);
    // Logged, rate-limited: at most the burst, not a line per packet.
    const std::size_t logged = DaemonProcess::count(d.log(), "unexpected packet after the handshake");
    CHECK(logged >= 1);
    CHECK(logged <= 10);
    CHECK(kill(d.pid(), 0) == 0);
}

TEST_CASE("an info request of any size is answered; an empty packet is ignored, the session goes on",
          "[reliability][hostile]") {
    // Issue 44.4: packets of more than 512 bytes (cut off by the kernel) with
    // the info magic got no answer, though docs/protocol.md answers every size
    // (the client then waits out its 2 s and gives the session up); a
    // zero-length packet read as the socket's closing and ended the session,
    // though docs/security.md ignores packets of any size.
    DaemonProcess d({"--cpu-threads", "1", "--arena-size", "64K", "--ring-entries", "8"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    REQUIRE(s.verify_one(1));
    auto exchange = [&](std::size_t size) {
        std::vector<std::uint8_t> req(size, 0);
        std::memcpy(req.data(), &shm::kInfoMagic, sizeof shm::kInfoMagic);
        shm::InfoReply reply{};
        if (!shm::send_packet(s.sock, req.data(), req.size())) return false;
        shm::ring_force(s.h->daemon_bell);
        pollfd p{s.sock, POLLIN, 0};
        if (::poll(&p, 1, 5000) != 1) return false;
        return ::recv(s.sock, &reply, sizeof reply, 0) == ssize_t(sizeof reply) &&
               reply.magic == shm::kInfoReplyMagic && reply.status == std::uint32_t(Status::invalid_argument);
    };
    for (std::size_t size : {std::size_t(9), std::size_t(512), std::size_t(513), std::size_t(4096)}) {
        INFO(size << " bytes");
        CHECK(exchange(size));
    }
    CHECK(counter(d, "protocol_errors") == 4);
    for (int i = 0; i < 3; ++i) REQUIRE(::send(s.sock, "", 0, MSG_NOSIGNAL) == 0);
    shm::ring_force(s.h->daemon_bell);
    REQUIRE(eventually([&] { return counter(d, "protocol_errors") == 7; }, std::chrono::seconds(5)));
    REQUIRE_FALSE(s.closed_by_daemon(std::chrono::milliseconds(200)));
    CHECK(s.verify_one(2));  // the session still works
    const shm::InfoRequest good{shm::kInfoMagic, 0};
    shm::InfoReply reply{};
    REQUIRE(shm::send_packet(s.sock, &good, sizeof good));
    shm::ring_force(s.h->daemon_bell);
    pollfd p{s.sock, POLLIN, 0};
    REQUIRE(::poll(&p, 1, 5000) == 1);
    REQUIRE(::recv(s.sock, &reply, sizeof reply, 0) == ssize_t(sizeof reply));
    CHECK(reply.status == std::uint32_t(Status::ok));
}

namespace {

bool connect_only(const std::string& path, int& fd) {
    const sockaddr_un addr = unix_addr(path);
    fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    return fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
}

}  // namespace

TEST_CASE("out of descriptors (EMFILE): accept backs off instead of spinning, connected clients are served",
          "[reliability][hostile]") {
    DaemonProcess d({"--cpu-threads", "1", "--arena-size", "64K", "--ring-entries", "8", "--max-clients", "8"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    REQUIRE(s.verify_one(1));
    REQUIRE(eventually([&] { return d.log().find("'raw' connected") != std::string::npos; },
                       std::chrono::seconds(3)));
    REQUIRE(counter(d, "accept_errors") == 0);

    // Leave the daemon two descriptors: the connections below fill them (they
    // never say hello, so each holds its socket for the 2 s handshake timeout)
    // and the next accept() fails with EMFILE.
    rlimit old{};
    REQUIRE(prlimit(d.pid(), RLIMIT_NOFILE, nullptr, &old) == 0);
    rlimit low = old;
    low.rlim_cur = daemon_fds(d) + 2;
    REQUIRE(prlimit(d.pid(), RLIMIT_NOFILE, &low, nullptr) == 0);
    std::vector<int> conns(8, -1);
    for (int& fd : conns) REQUIRE(connect_only(d.socket_path(), fd));
    REQUIRE(eventually([&] { return d.log().find("Too many open files") != std::string::npos; },
                       std::chrono::seconds(3)));

    // A second of EMFILE: little CPU, few log lines, the connected client served.
    const std::size_t lines0 = log_lines(d);
    const double cpu0 = cpu_seconds(d.pid());
    const auto t0 = Clock::now();
    std::uint64_t tag = 10;
    while (Clock::now() - t0 < std::chrono::seconds(1)) {
        CHECK(s.verify_one(tag++));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const double cpu = cpu_seconds(d.pid()) - cpu0;
    const std::size_t lines = log_lines(d) - lines0;
    INFO("daemon CPU over 1 s of EMFILE: " << cpu << " s; log lines: " << lines);
    std::printf("daemon CPU over 1 s of EMFILE: %.3f s; log lines: %zu\n", cpu, lines);
    CHECK(cpu < 0.25);  // a spinning accept loop burns the whole second
    CHECK(lines <= 20);  // two rate-limited keys (accept, malformed handshake) of 10 each
    CHECK(kill(d.pid(), 0) == 0);

    // Descriptors back: the pending connections are accepted, the count is exact-ish and rendered.
    REQUIRE(prlimit(d.pid(), RLIMIT_NOFILE, &old, nullptr) == 0);
    for (int fd : conns) close(fd);
    std::uint64_t errors = 0;
    REQUIRE(eventually([&] { return (errors = counter(d, "accept_errors")) > 0; }, std::chrono::seconds(5)));
    CHECK(errors < 40);  // 10 ms doubling to 1 s: a handful per second, not thousands
    CHECK(stats_command(d.dir(), "stats").find("sigverifyd_accept_errors_total " + std::to_string(errors)) !=
          std::string::npos);
    CHECK(s.verify_one(99));
}

TEST_CASE("a --max-clients the descriptor limit cannot serve is refused at start-up", "[reliability][hostile]") {
    const std::string dir = make_temp_dir();
    auto start = [&](const char* max_clients) {
        const pid_t pid = fork();
        if (pid == 0) {
            rlimit lim{128, 128};
            if (setrlimit(RLIMIT_NOFILE, &lim) != 0) _exit(99);
            const std::string log = dir + "/daemon.log";
            execl(SIGVERIFYD_BIN, SIGVERIFYD_BIN, "--foreground", "--runtime-dir", dir.c_str(), "--log-file",
                  log.c_str(), "--cpu-threads", "1", "--max-clients", max_clients, static_cast<char*>(nullptr));
            _exit(98);
        }
        return pid;
    };
    // Reaps pid within limit; SIGKILLs it (status -1) when it is still running.
    auto reap = [](pid_t pid, std::chrono::milliseconds limit) {
        int st = 0;
        const bool exited = eventually([&] { return waitpid(pid, &st, WNOHANG) == pid; }, limit);
        if (exited) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        kill(pid, SIGKILL);
        waitpid(pid, &st, 0);
        return -1;
    };
    const pid_t pid = start("100");  // needs 64 + 16 + 3 x 100 = 380 > 128
    const int status = reap(pid, std::chrono::seconds(5));
    CHECK(status == 78);  // daemon/ops/exit_codes.hpp: config_error (RestartPreventExitStatus)
    std::ifstream f(dir + "/daemon.log");
    const std::string log((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    CHECK(log.find("RLIMIT_NOFILE") != std::string::npos);
    CHECK(log.find("listening on") == std::string::npos);
    // 8 clients fit (64 + 16 + 24 = 104 <= 128): it starts.
    const pid_t ok = start("8");
    CHECK(eventually([&] { return ::access((dir + "/sigverifyd.sock").c_str(), F_OK) == 0; },
                     std::chrono::seconds(10)));
    kill(ok, SIGTERM);
    CHECK(reap(ok, std::chrono::seconds(10)) == 0);
    remove_tree(dir);
}

TEST_CASE("a connect loop of refused and malformed connections cannot flood the log; the counters stay exact",
          "[reliability][hostile]") {
    DaemonProcess d({"--cpu-threads", "1", "--arena-size", "64K", "--ring-entries", "8", "--max-clients", "2"});
    const std::size_t lines0 = log_lines(d);
    constexpr int kEach = 1000;
    auto one = [&](const void* payload, std::size_t size) {
        RawSession c;
        if (!c.open(d.socket_path())) return false;
        if (size != 0) (void)send(c.sock, payload, size, MSG_NOSIGNAL);
        shm::HelloReply reply{};
        return recv(c.sock, &reply, sizeof reply, 0) == static_cast<ssize_t>(sizeof reply) && reply.status != 0;
    };
    // Malformed handshakes (a 5-byte hello), one after the other.
    const char junk[5] = {1, 2, 3, 4, 5};
    int answered = 0;
    for (int i = 0; i < kEach; ++i) answered += one(junk, sizeof junk);
    CHECK(answered == kEach);
    // Busy refusals: two sessions hold both slots. (Just after the loop above
    // the slots of the ended sessions may not be free yet on a loaded machine:
    // retry, and count the refusals that costs.)
    int refused_handshakes = 0;
    const auto hold = [&](std::unique_ptr<RawSession>& s) {
        return eventually(
            [&] {
                s = std::make_unique<RawSession>();
                if (s->handshake(d.socket_path())) return true;
                ++refused_handshakes;
                return false;
            },
            std::chrono::seconds(10));
    };
    std::unique_ptr<RawSession> a, b;
    REQUIRE(hold(a));
    REQUIRE(hold(b));
    answered = 0;
    for (int i = 0; i < kEach; ++i) answered += one(nullptr, 0);
    CHECK(answered == kEach);

    // Each hostile connection is counted exactly once: as a protocol error, or
    // as a refusal when the slots of sessions that just ended were not yet free
    // (on a loaded machine some malformed hellos are refused as busy first).
    const auto counted = [&] { return counter(d, "protocol_errors") + counter(d, "connections_refused"); };
    const std::uint64_t expected = 2 * kEach + std::uint64_t(refused_handshakes);
    CHECK(eventually([&] { return counted() == expected; }, std::chrono::seconds(5)));
    CHECK(counted() == expected);
    CHECK(counter(d, "protocol_errors") >= 1);
    CHECK(counter(d, "connections_refused") >= kEach / 2);
    const std::size_t lines = log_lines(d) - lines0;
    INFO("log lines for " << 2 * kEach << " hostile connections: " << lines);
    CHECK(lines < 100);
    CHECK(DaemonProcess::count(d.log(), "malformed handshake") >= 1);
    CHECK(DaemonProcess::count(d.log(), "--max-clients 2 reached") >= 1);
    CHECK(a->verify_one(1));
}
