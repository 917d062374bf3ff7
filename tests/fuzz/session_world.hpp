// SPDX-License-Identifier: MIT
// What the session fuzz harness (fuzz_session.cpp, and its Client:
// session_client.hpp) sets up once per process and the probes it checks after
// each input: the real scheduler, CPU backend and daemon context behind every
// session, pools of signed rows with their reference verdicts, the core the
// process keeps, and the descriptor, /dev/shm and mapping probes. Inline: one
// world for every translation unit of the harness.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "daemon/backends/backend.hpp"
#include "daemon/memory/mapping_guard.hpp"
#include "daemon/schedule/scheduler.hpp"
#include "daemon/serve/session.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"
#include "shm_protocol/fd_passing.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"
#include "tests/fuzz/fuzz_check.hpp"

namespace sigverify::fuzz {

constexpr std::uint64_t kArena = 64 * 1024;  // the daemon's --arena-size here (the minimum)
constexpr std::uint32_t kRing = 8;           // the daemon's --ring-entries here
constexpr auto kAnswerBound = std::chrono::seconds(5);
// The daemon's --max-registered-buffers / --max-registered-bytes here: small,
// so that a few registrations reach both limits.
constexpr unsigned kMaxRegistered = 3;
constexpr std::uint64_t kMaxRegisteredBytes = 1 << 20;
constexpr std::uint64_t kMaxFileSize = 2 << 20;  // a registered file (sparse): up to twice the byte limit

struct World {
    std::unique_ptr<daemon::CpuBackend> backend;
    std::unique_ptr<daemon::Scheduler> scheduler;
    std::unique_ptr<daemon::DaemonContext> ctx;
    std::vector<std::uint8_t> pool[4];  // real signed rows (25% invalid) per table
    std::vector<std::uint8_t> verdict[4];  // each pool row's verdict (libsecp256k1, reference verifier)
    std::uint64_t next_id = 1;
};
inline World* world = nullptr;

// The open descriptors below 1024, in one system call (poll reports POLLNVAL
// for a closed one): a session's descriptors are the lowest free numbers, so a
// leaked one is counted; reading /proc/self/fd cost six calls per input.
inline std::size_t count_fds() {
    static pollfd probe[1024];
    for (int i = 0; i < 1024; ++i) probe[i] = pollfd{i, 0, 0};
    FUZZ_CHECK(poll(probe, 1024, 0) >= 0);
    std::size_t n = 0;
    for (const pollfd& p : probe) n += (p.revents & POLLNVAL) == 0;
    return n;
}

inline bool leftover_segments() {
    // tmpfs gives a directory's size as 20 bytes per entry: an empty /dev/shm
    // (the usual case) needs no listing.
    struct stat st{};
    if (stat("/dev/shm", &st) == 0 && st.st_size <= 40) return false;
    bool any = false;
    if (DIR* d = opendir("/dev/shm")) {
        const std::string mine = "sigverifyd." + std::to_string(getpid()) + ".";
        while (dirent* e = readdir(d))
            if (std::strncmp(e->d_name, mine.c_str(), mine.size()) == 0) any = true;
        closedir(d);
    }
    return any;
}

// The core this process keeps to itself: the first of the cores it may run on
// that no other fuzz_session holds (an flock per core, released when the
// process exits), so that the processes of a parallel campaign (-jobs, -fork)
// spread over the cores instead of all taking the one they started on.
// Otherwise the core it runs on now.
inline int claim_core() {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return sched_getcpu();
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed)) continue;
        const std::string lock = "/tmp/sigverify-fuzz-core-" + std::to_string(cpu) + ".lock";
        const int fd = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0) break;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) return cpu;  // fd stays open: the claim
        close(fd);
    }
    return sched_getcpu();
}

inline void init_world() {
    // One core for the fuzzing thread and the scheduler's worker: every
    // munmap of a segment (two per input) otherwise sends a TLB shootdown to
    // the worker's core, a third of the time per input in a VM. libFuzzer runs
    // one input at a time anyway; the worker inherits the mask.
    cpu_set_t one;
    CPU_ZERO(&one);
    if (const int cpu = claim_core(); cpu >= 0) {
        CPU_SET(cpu, &one);
        sched_setaffinity(0, sizeof one, &one);
    }
    world = new World;
    daemon::guard::install();
    world->ctx = std::make_unique<daemon::DaemonContext>();
    auto& ctx = *world->ctx;
    ctx.config.arena_size = kArena;
    ctx.config.ring_entries = kRing;
    ctx.config.max_registered_buffers = kMaxRegistered;
    ctx.config.max_registered_bytes = kMaxRegisteredBytes;
    ctx.epoch = 0x5EED5EED12345678ull;
    ctx.log = std::make_shared<spdlog::logger>("fuzz", std::make_shared<spdlog::sinks::null_sink_mt>());
    ctx.log->set_level(spdlog::level::trace);  // format every log line the paths produce
    world->backend = std::make_unique<daemon::CpuBackend>(1);
    world->scheduler = std::make_unique<daemon::Scheduler>(*world->backend, nullptr, 7);  // small chunks
    world->scheduler->set_metrics(&ctx.metrics);
    world->scheduler->start();
    ctx.scheduler = world->scheduler.get();
    for (int t = 0; t < 4; ++t) {
        reference::GenOptions g;
        g.table = static_cast<wire::Table>(t);
        g.count = 32;
        g.encoding = t == 1 ? wire::SigEncoding::compact : wire::SigEncoding::opaque;
        g.invalid_rate = 0.25;
        g.high_s_rate = t < 2 ? 0.3 : 0.0;
        g.seed = 77 + t;
        g.threads = 1;
        world->pool[t] = reference::generate_rows(g);
        // The verdict of every row, from the reference verifier (not the
        // daemon): what a registered batch of these rows must count valid.
        reference::RowVerifier verifier;
        wire::RowSpan rows;
        rows.kind = wire::record_kind(g.table);
        rows.tail_size = wire::canonical_tail_size(g.table);
        rows.encoding = g.encoding;
        rows.data = world->pool[t].data();
        rows.count = g.count;
        for (std::size_t i = 0; i < g.count; ++i) world->verdict[t].push_back(verifier.verify_row(rows, i) ? 1 : 0);
    }
}

// The signature encoding of a table's pool rows.
inline wire::SigEncoding pool_encoding(int table) {
    return table == 1 ? wire::SigEncoding::compact : wire::SigEncoding::opaque;
}

// Files the daemon accepted as registered buffers in this input (device,
// inode): none of them may still be mapped once the session is gone.
inline std::vector<std::pair<dev_t, ino_t>> registered_files;

// Whether a file of registered_files is still mapped in this process (the
// daemon's mappings: the harness never maps a registered file itself).
inline bool registered_file_mapped() {
    if (registered_files.empty()) return false;
    FILE* maps = std::fopen("/proc/self/maps", "r");
    FUZZ_CHECK(maps != nullptr);
    char line[512];
    bool found = false;
    while (!found && std::fgets(line, sizeof line, maps) != nullptr) {
        unsigned dev_major = 0, dev_minor = 0;
        unsigned long long ino = 0;
        if (std::sscanf(line, "%*s %*s %*s %x:%x %llu", &dev_major, &dev_minor, &ino) != 3 || ino == 0) continue;
        for (const auto& f : registered_files)
            if (static_cast<unsigned long long>(f.second) == ino && major(f.first) == dev_major &&
                minor(f.first) == dev_minor) {
                std::fprintf(stderr, "registered file still mapped after the session: %s", line);
                found = true;
            }
    }
    std::fclose(maps);
    return found;
}

// Receives the HelloReply and the descriptor passed with it (-1 when none).
inline ssize_t recv_reply(int fd, shm::HelloReply& reply, int& seg_fd) {
    alignas(8) std::uint8_t buf[512];
    const shm::ReceivedPacket r = shm::receive_packet(fd, buf, sizeof buf, shm::KeepDescriptor::first);
    seg_fd = r.fd;
    FUZZ_CHECK(r.fds_closed == 0);  // the daemon passes at most the segment
    if (r.bytes == static_cast<ssize_t>(sizeof reply)) std::memcpy(&reply, buf, sizeof reply);
    return r.bytes;
}

// SIGVERIFY_FUZZ_DEBUG=1: what the daemon answered, on stderr (to see what a
// committed input does: ./fuzz_session FILE).
inline bool debug() {
    static const bool on = std::getenv("SIGVERIFY_FUZZ_DEBUG") != nullptr;
    return on;
}

inline bool peer_closed(int fd, int ms) {
    pollfd p{fd, POLLIN | POLLRDHUP, 0};
    if (poll(&p, 1, ms) <= 0) return false;
    if (p.revents & (POLLHUP | POLLRDHUP)) return true;
    char b[512];
    return recv(fd, b, sizeof b, MSG_DONTWAIT) == 0;
}

}  // namespace sigverify::fuzz
