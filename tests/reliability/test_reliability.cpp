// SPDX-License-Identifier: MIT
// Fault tests beyond tests/daemon (which covers one client SIGKILLed mid-batch,
// one daemon SIGKILL with two clients, SIGTERM, the scribbler and hostile raw
// entries): noisy clients (stalled reader, flooder, reconnect loop) with
// measured latency of a quiet client and bounded daemon memory; a daemon
// SIGKILLed under load from several client processes; clients SIGKILLed at
// every protocol point, 200 times, while a bystander's batches run.
//
// Environment (longer variants): SIGVERIFY_RELIABILITY_KILLS (default 200),
// SIGVERIFY_RELIABILITY_NOISE_MS (default 2000).
#include <poll.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <limits>
#include <thread>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "hostile_client.hpp"
#include "shm_protocol/doorbell.hpp"
#include "shm_protocol/fd_passing.hpp"
#include "sigverify/shm_protocol/segment_access.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"

using namespace sigverify;
using namespace sigverify::test;
using Clock = std::chrono::steady_clock;

namespace {

unsigned env_or(const char* name, unsigned def) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? static_cast<unsigned>(std::strtoul(v, nullptr, 10)) : def;
}

// VmRSS of a process in KiB.
long rss_kib(pid_t pid) { return long(status_bytes(pid, "VmRSS") / 1024); }

std::size_t count_lines(const std::string& path) {
    std::ifstream f(path);
    std::string line;
    std::size_t n = 0;
    while (std::getline(f, line)) ++n;
    return n;
}

std::size_t daemon_maps(const DaemonProcess& d) { return count_lines("/proc/" + std::to_string(d.pid()) + "/maps"); }

// Mappings of client segments in the daemon (the names are unlinked: "/dev/shm/sigverifyd.* (deleted)").
std::size_t daemon_segment_maps(const DaemonProcess& d) {
    std::ifstream f("/proc/" + std::to_string(d.pid()) + "/maps");
    std::string line;
    std::size_t n = 0;
    while (std::getline(f, line))
        if (line.find("/sigverifyd.") != std::string::npos) ++n;
    return n;
}

struct Percentiles {
    double p50 = 0, p99 = 0;
    std::size_t n = 0;
};

Percentiles percentiles(std::vector<double> v) {
    Percentiles p;
    p.n = v.size();
    if (v.empty()) return p;
    std::sort(v.begin(), v.end());
    p.p50 = v[v.size() / 2];
    p.p99 = v[std::min(v.size() - 1, v.size() * 99 / 100)];
    return p;
}

// A quiet client: 1-row batches (with a correct verdict) for `ms`; latencies in ms.
// It alternates a row known valid and one known invalid (make_known_rows: rows
// 0 and 3), so a daemon answering 1 (or 0) to everything is caught.
std::vector<double> quiet_latencies(Client& c, std::chrono::milliseconds ms, bool& all_correct) {
    const KnownRows known = make_known_rows(wire::Table::schnorr, 4, wire::SigEncoding::opaque, 99);
    const std::size_t pick[2] = {0, 3};
    if (known.expected[pick[0]] != 1 || known.expected[pick[1]] != 0)
        throw std::logic_error("quiet_latencies: rows 0 and 3 are not valid and invalid");
    std::vector<double> lat;
    all_correct = true;
    const auto until = Clock::now() + ms;
    for (std::size_t i = 0; Clock::now() < until; ++i) {
        const std::size_t row = pick[i % 2];
        std::uint8_t res = 0xAA;
        const auto t0 = Clock::now();
        const BatchResult r = c.verify_schnorr(known.rows.data() + row * known.stride, 1, 3, &res);
        lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        if (!r.ok() || res != known.expected[row]) all_correct = false;
        std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    return lat;
}

// Raw protocol helper: connect, optional hello, optional ack; returns the socket.
struct Raw {
    int sock = -1, seg_fd = -1;
    std::uint8_t* base = nullptr;
    std::size_t size = 0;
    shm::SegmentHeader* h = nullptr;

    bool connect(const std::string& path) {
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
        sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        timeval tv{3, 0};
        setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        return ::connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    }
    bool hello() {
        shm::HelloRequest hr{};
        hr.magic = shm::kHelloMagic;
        hr.protocol_version = shm::kProtocolVersion;
        shm::copy_text(hr.client_name, "raw-victim");
        if (send(sock, &hr, sizeof hr, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof hr)) return false;
        shm::HelloReply reply{};
        const shm::ReceivedPacket r = shm::receive_packet(sock, &reply, sizeof reply, shm::KeepDescriptor::first);
        if (r.fd >= 0) seg_fd = r.fd;
        if (r.bytes != static_cast<ssize_t>(sizeof reply) || reply.status != 0) return false;
        size = reply.segment_size;
        void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, seg_fd, 0);
        if (m == MAP_FAILED) return false;
        base = static_cast<std::uint8_t*>(m);
        h = reinterpret_cast<shm::SegmentHeader*>(base);
        return true;
    }
    bool ack() {
        shm::MappedAck a{shm::kAckMagic, 0};
        return send(sock, &a, sizeof a, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof a);
    }
    // Fills the submission ring with no-ops and never reaps a completion.
    void stall() {
        auto* sq = reinterpret_cast<shm::SubmissionEntry*>(base + h->sq_entries_offset);
        std::uint32_t tail = 0;
        for (;;) {
            const std::uint32_t head = shm::word(h->sq_head).load(std::memory_order_acquire);
            while (tail - head < h->sq_entries) {
                shm::SubmissionEntry e{};
                e.opcode = static_cast<std::uint8_t>(shm::Opcode::nop);
                e.user_tag = tail;
                std::memcpy(&sq[tail & h->sq_mask], &e, sizeof e);
                ++tail;
            }
            shm::word(h->sq_tail).store(tail, std::memory_order_release);
            shm::ring(h->daemon_bell);
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
    }
};

constexpr std::int64_t kFailed = std::numeric_limits<std::int64_t>::min();

// Reads exactly n bytes within the limit (a child that died early must not hang the test).
bool read_within(int fd, void* buf, std::size_t n, std::chrono::milliseconds limit) {
    const auto deadline = Clock::now() + limit;
    std::size_t got = 0;
    while (got < n) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        pollfd p{fd, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) return false;
        const ssize_t r = read(fd, static_cast<char*>(buf) + got, n - got);
        if (r <= 0) return false;
        got += static_cast<std::size_t>(r);
    }
    return true;
}

// Tells the parent (over fd) that the child reached its point.
void signal_point(int fd) { (void)!write(fd, "p", 1); }

}  // namespace

TEST_CASE("noisy clients: stalled reader, flooder, reconnect loop; bounded memory, quiet client's latency",
          "[reliability][noisy]") {
    DaemonProcess d({"--cpu-threads", "2", "--arena-size", "1M", "--ring-entries", "64"});
    const auto noise_ms = std::chrono::milliseconds(env_or("SIGVERIFY_RELIABILITY_NOISE_MS", 2000));
    auto quiet = Client::connect(options_for(d, "quiet"));
    bool correct = false;
    quiet_latencies(*quiet, std::chrono::milliseconds(200), correct);  // warm-up
    const long rss0 = rss_kib(d.pid());
    const std::size_t fds0 = daemon_fds(d);
    const auto base = percentiles(quiet_latencies(*quiet, noise_ms, correct));
    CHECK(correct);

    std::vector<pid_t> noisy;
    // 1. Stops reading completions: fills its rings with no-ops, never reaps.
    noisy.push_back(run_in_child([&] {
        Raw r;
        if (!r.connect(d.socket_path()) || !r.hello() || !r.ack()) return false;
        r.stall();
        return true;
    }));
    // 2. Floods: back-to-back 256-row batches, forever.
    noisy.push_back(run_in_child([&] {
        auto c = Client::connect(options_for(d, "flooder"));
        auto rows = make_rows(wire::Table::ecdsa, 256, wire::SigEncoding::opaque, 5);
        std::vector<std::uint8_t> res(256);
        // Load only: the flooder's verdicts are not what this test judges.
        for (;;) (void)c->verify_ecdsa(rows.data(), 256, 3, res.data());
        return true;
    }));
    // 3. Connects, pings and disconnects in a loop.
    noisy.push_back(run_in_child([&] {
        for (;;) {
            Status st;
            std::string msg;
            auto c = Client::connect(options_for(d, "flapper"), st, msg);
            if (c) (void)c->ping();  // churn only: the test judges the quiet client
        }
        return true;
    }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto noisy_lat = percentiles(quiet_latencies(*quiet, noise_ms, correct));
    CHECK(correct);
    const long rss1 = rss_kib(d.pid());
    for (pid_t p : noisy) kill(p, SIGKILL);
    for (pid_t p : noisy) wait_child(p);
    CHECK(eventually([&] { return daemon_fds(d) <= fds0; }, std::chrono::seconds(3)));
    const long rss2 = rss_kib(d.pid());
    std::printf("noisy clients: quiet 1-row latency p50 %.3f ms p99 %.3f ms (%zu batches) alone; "
                "p50 %.3f ms p99 %.3f ms (%zu batches) with a stalled reader, a flooder and a reconnect loop\n",
                base.p50, base.p99, base.n, noisy_lat.p50, noisy_lat.p99, noisy_lat.n);
    std::printf("noisy clients: daemon VmRSS %ld KiB before, %ld KiB under noise, %ld KiB after; fds %zu -> %zu\n",
                rss0, rss1, rss2, fds0, daemon_fds(d));
    // Bounded memory: the noise adds at most a few session segments (1 MiB arenas).
    CHECK(rss1 - rss0 < 48 * 1024);
    CHECK(rss2 - rss0 < 48 * 1024);
    // The quiet client keeps being served: each batch waits for at most one chunk per
    // worker of the flooder; generous bound for a loaded 2-core machine (sanitizers too).
    CHECK(noisy_lat.n > 20);
    CHECK(noisy_lat.p50 < 50.0);
    CHECK(noisy_lat.p99 < 500.0);
    CHECK(kill(d.pid(), 0) == 0);
    CHECK(leftover_segments(d).empty());
}

TEST_CASE("daemon SIGKILLed under load from several client processes: error or fallback within 1 s, reconnect, no stale verdict",
          "[reliability][daemon-kill]") {
    DaemonProcess d({"--cpu-threads", "1", "--arena-size", "256K"});
    constexpr int kClients = 4;
    const wire::Table tables[kClients] = {wire::Table::ecdsa, wire::Table::multisig, wire::Table::schnorr,
                                          wire::Table::threshold};
    int to_parent[2], to_child[kClients][2];
    REQUIRE(pipe(to_parent) == 0);
    std::vector<pid_t> kids;
    for (int k = 0; k < kClients; ++k) {
        REQUIRE(pipe(to_child[k]) == 0);
        kids.push_back(run_in_child([&, k] {
            close(to_parent[0]);
            close(to_child[k][1]);
            const wire::Table table = tables[k];
            ClientOptions o = options_for(d, "loaded");
            if (k % 2 == 1) {
                o.fallback = Fallback::local;
                o.local_threads = 1;
            }
            auto c = Client::connect(o);
            const std::uint64_t epoch0 = c->epoch();
            // Batches larger than the 256K arena (split in pieces); small enough that a
            // fallback client's local verification of the rest stays well inside 1 s.
            const std::size_t n = 2500;
            // Known verdicts (make_known_rows), not the daemon's own verifier.
            KnownRows known = make_known_rows(table, n, wire::SigEncoding::opaque, 300 + k);
            auto& rows = known.rows;
            const std::vector<std::uint8_t>& expected = known.expected;
            std::vector<std::uint8_t> got(n);
            auto span = span_of(table, wire::SigEncoding::opaque, rows, n);
            // Phase 1: batches until the daemon dies under them. The child always
            // reports (a time, or kFailed), so the parent never waits for a dead child.
            (void)!write(to_parent[1], "r", 1);
            std::int64_t t = kFailed;
            for (;;) {
                std::fill(got.begin(), got.end(), 0xAA);
                const BatchResult r = c->run(span, wire::Mode::results, got.data());
                const auto t_done = Clock::now();
                bool good = true;
                for (std::size_t i = 0; i < n; ++i) {
                    // A verdict that is there must be right, whoever made it (no stale or
                    // garbage verdict); a failed call leaves zeros for unfinished pieces.
                    if (r.ok() ? got[i] != expected[i] : (got[i] != 0 && got[i] != expected[i])) good = false;
                }
                if (!good) break;
                if (r.ok() && r.local_rows == 0) continue;  // the daemon did it all: keep going
                if (!r.ok() && r.status != Status::disconnected && r.status != Status::unreachable) break;
                t = t_done.time_since_epoch().count();  // error or fallback: report when
                break;
            }
            (void)!write(to_parent[1], &t, sizeof t);
            if (t == kFailed) return false;
            // Phase 2: wait for the restart, then the same rows through the new daemon.
            char go;
            if (read(to_child[k][0], &go, 1) != 1) return false;
            const auto deadline = Clock::now() + std::chrono::seconds(5);
            for (;;) {
                std::fill(got.begin(), got.end(), 0xAA);
                const BatchResult r = c->run(span, wire::Mode::results, got.data());
                if (r.ok() && r.local_rows == 0 && c->connected()) {
                    if (c->epoch() == epoch0) return false;  // must be the new daemon
                    return got == expected;
                }
                if (r.ok() && got != expected) return false;
                if (Clock::now() > deadline) return false;
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
        }));
        close(to_child[k][0]);
    }
    close(to_parent[1]);
    char ready;
    for (int k = 0; k < kClients; ++k) REQUIRE(read_within(to_parent[0], &ready, 1, std::chrono::seconds(60)));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // every client has a batch in flight
    const auto t_kill = Clock::now();
    REQUIRE(kill(d.pid(), SIGKILL) == 0);
    double worst = 0;
    for (int k = 0; k < kClients; ++k) {
        std::int64_t t = 0;
        REQUIRE(read_within(to_parent[0], &t, sizeof t, std::chrono::seconds(30)));
        CHECK(t != kFailed);
        if (t == kFailed) continue;
        const double after = std::chrono::duration<double>(Clock::duration(t) - t_kill.time_since_epoch()).count();
        worst = std::max(worst, after);
    }
    close(to_parent[0]);
    std::printf("daemon SIGKILL under load: the slowest of %d clients returned an error or fell back %.1f ms after the kill\n",
                kClients, worst * 1e3);
    CHECK(worst < 1.0);
    d.stop(SIGKILL);  // reap
    CHECK(leftover_segments(d).empty());
    d.start();
    for (int k = 0; k < kClients; ++k) {
        (void)!write(to_child[k][1], "g", 1);
        close(to_child[k][1]);
    }
    for (pid_t p : kids) CHECK(wait_child(p) == 0);
    CHECK(leftover_segments(d).empty());
}

TEST_CASE("clients SIGKILLed at every protocol point, repeatedly: daemon alive, bystander correct, everything reclaimed",
          "[reliability][client-kill]") {
    DaemonProcess d({"--cpu-threads", "2", "--arena-size", "256K", "--ring-entries", "16"});
    const unsigned kills = env_or("SIGVERIFY_RELIABILITY_KILLS", 200);
    {  // settle the daemon's own descriptors and mappings (stats, first session)
        auto warm = Client::connect(options_for(d, "warm"));
        REQUIRE(warm->ping() == Status::ok);
        CHECK(daemon_segment_maps(d) == 1);  // what the reclaim check below counts is really there
    }
    REQUIRE(eventually([&] { return d.log().find("'warm'") != std::string::npos &&
                                    d.log().find("session ended") != std::string::npos; },
                       std::chrono::seconds(3)));
    const std::size_t fds0 = daemon_fds(d), maps0 = daemon_maps(d);
    const long rss0 = rss_kib(d.pid());

    // A bystander process checks batches of all four tables the whole time.
    int stop_pipe[2];
    REQUIRE(pipe(stop_pipe) == 0);
    const pid_t bystander = run_in_child([&] {
        close(stop_pipe[1]);
        auto c = Client::connect(options_for(d, "bystander"));
        std::uint64_t seed = 1;
        for (;;) {
            pollfd p{stop_pipe[0], POLLIN, 0};
            if (poll(&p, 1, 0) > 0) return true;
            for (wire::Table t : {wire::Table::ecdsa, wire::Table::multisig, wire::Table::schnorr, wire::Table::threshold})
                if (!check_batch(*c, t, seed % 2 ? wire::Mode::collect : wire::Mode::results, wire::SigEncoding::opaque,
                                 50 + seed % 200, seed))
                    return false;
            ++seed;
        }
    });
    close(stop_pipe[0]);

    // Protocol points: 0 connected, no hello; 1 hello answered, no ack; 2 session up,
    // rows reserved in the arena; 3 batch submitted, client waiting; 4 big batch being
    // verified and written by the daemon; 5 raw client with a full ring it never reaps.
    constexpr int kPoints = 6;
    const auto victim_rows = make_rows(wire::Table::ecdsa, 1500, wire::SigEncoding::opaque, 1000);  // inherited
    unsigned per_point[kPoints] = {};
    const auto t0 = Clock::now();
    for (unsigned i = 0; i < kills; ++i) {
        const int point = static_cast<int>(i % kPoints);
        int fds[2];
        REQUIRE(pipe(fds) == 0);
        const pid_t victim = run_in_child([&] {
            close(fds[0]);
            if (point <= 1 || point == 5) {
                Raw r;
                if (!r.connect(d.socket_path())) return false;
                if (point == 0) {
                    signal_point(fds[1]);
                    pause();
                }
                if (!r.hello()) return false;
                if (point == 1) {
                    signal_point(fds[1]);
                    pause();
                }
                if (!r.ack()) return false;
                signal_point(fds[1]);
                r.stall();
                return true;
            }
            auto c = Client::connect(options_for(d, "victim"));
            const std::size_t n = point == 4 ? 1500 : 200;
            RowBatch b;
            if (c->reserve(wire::RecordKind::ecdsa, 3, n, b) != Status::ok) return false;
            std::memcpy(b.rows, victim_rows.data(), n * 132);
            if (point == 2) {
                signal_point(fds[1]);
                pause();
            }
            if (c->submit(b, wire::Mode::results) != Status::ok) return false;
            signal_point(fds[1]);
            (void)c->wait(b);  // the parent kills this child around here: the daemon side is checked
            pause();
            return true;
        });
        close(fds[1]);
        char x;
        const bool reached = read_within(fds[0], &x, 1, std::chrono::seconds(30));
        close(fds[0]);
        // Point 4: let the daemon get into the batch (it is writing verdicts now).
        if (point == 4) std::this_thread::sleep_for(std::chrono::milliseconds(5 + i % 20));
        kill(victim, SIGKILL);
        wait_child(victim);
        REQUIRE(reached);
        ++per_point[point];
    }
    const double kill_secs = std::chrono::duration<double>(Clock::now() - t0).count();
    (void)!write(stop_pipe[1], "s", 1);
    close(stop_pipe[1]);
    CHECK(wait_child(bystander) == 0);

    CHECK(kill(d.pid(), 0) == 0);
    // Every victim's session ends; its descriptors and mappings are reclaimed.
    const bool fds_back = eventually([&] { return daemon_fds(d) <= fds0; }, std::chrono::seconds(5));
    const bool segments_unmapped = eventually([&] { return daemon_segment_maps(d) == 0; }, std::chrono::seconds(5));
    // Other mappings may grow a little and stay (glibc's thread-stack cache, malloc
    // arenas of new session threads); they must not grow with the number of kills.
    const bool maps_bounded = daemon_maps(d) <= maps0 + 48;
    const long rss1 = rss_kib(d.pid());
    std::printf("client kills: %u SIGKILLs in %.1f s (points: no hello %u, no ack %u, reserved %u, waiting %u, "
                "daemon writing %u, full ring %u); daemon fds %zu -> %zu, maps %zu -> %zu (segment mappings %zu), "
                "VmRSS %ld -> %ld KiB\n",
                kills, kill_secs, per_point[0], per_point[1], per_point[2], per_point[3], per_point[4], per_point[5],
                fds0, daemon_fds(d), maps0, daemon_maps(d), daemon_segment_maps(d), rss0, rss1);
    CHECK(fds_back);
    CHECK(segments_unmapped);
    CHECK(maps_bounded);
    CHECK(rss1 - rss0 < 32 * 1024);
    CHECK(leftover_segments(d).empty());
    auto after = Client::connect(options_for(d, "after"));
    CHECK(check_batch(*after, wire::Table::threshold, wire::Mode::results, wire::SigEncoding::opaque, 100, 77));
}
