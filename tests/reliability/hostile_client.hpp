// Hand-written protocol clients and probes for the hostile-client tests
// (test_hostile.cpp, test_admission.cpp): a raw session that can stop at any
// step of the handshake, the daemon's descriptors, log lines and counters.
#pragma once

#include <dirent.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "ops/ops_helpers.hpp"
#include "shm_protocol/doorbell.hpp"
#include "shm_protocol/fd_passing.hpp"
#include "shm_protocol/segment_access.hpp"
#include "shm_protocol/segment_layout.hpp"

namespace sigverify::test {

// A client that speaks the protocol by hand (as in test_daemon_ring.cpp).
struct RawSession {
    int sock = -1;
    int seg_fd = -1;
    std::uint8_t* base = nullptr;
    std::size_t size = 0;
    shm::SegmentHeader* h = nullptr;
    shm::HelloReply reply{};
    std::uint32_t sq_tail = 0, cq_head = 0;

    ~RawSession() {
        if (base != nullptr) munmap(base, size);
        if (seg_fd >= 0) close(seg_fd);
        if (sock >= 0) close(sock);
    }

    bool open(const std::string& path) {
        const sockaddr_un addr = unix_addr(path);
        sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        timeval tv{3, 0};
        setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        return ::connect(sock, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
    }

    bool handshake(const std::string& path) {
        if (!open(path)) return false;
        shm::HelloRequest hello{};
        hello.magic = shm::kHelloMagic;
        hello.protocol_version = shm::kProtocolVersion;
        shm::copy_text(hello.client_name, "hostile");
        (void)send(sock, &hello, sizeof hello, MSG_NOSIGNAL);
        const shm::ReceivedPacket r = shm::receive_packet(sock, &reply, sizeof reply, shm::KeepDescriptor::first);
        seg_fd = r.fd;
        if (r.bytes != static_cast<ssize_t>(sizeof reply) || reply.status != 0 || seg_fd < 0) return false;
        size = reply.segment_size;
        void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, seg_fd, 0);
        if (m == MAP_FAILED) return false;
        base = static_cast<std::uint8_t*>(m);
        h = reinterpret_cast<shm::SegmentHeader*>(base);
        shm::MappedAck ack{shm::kAckMagic, 0};
        return send(sock, &ack, sizeof ack, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof ack);
    }

    // One ECDSA row of known verdict, verified in results mode: true when
    // its completion arrives ok with the right verdict.
    bool verify_one(std::uint64_t tag) {
        const KnownRows known = make_known_rows(wire::Table::ecdsa, 1, wire::SigEncoding::opaque, tag);
        std::memcpy(base + h->arena_offset, known.rows.data(), known.rows.size());
        std::memset(base + h->arena_offset + 4096, 0xAA, 1);
        shm::SubmissionEntry e{};
        e.user_tag = tag;
        e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify);
        e.record_kind = static_cast<std::uint8_t>(wire::RecordKind::ecdsa);
        e.key_size = 3;
        e.mode = static_cast<std::uint8_t>(wire::Mode::results);
        e.table = shm::kTableUnspecified;
        e.rows_offset = 0;
        e.results_offset = 4096;
        e.row_count = 1;
        auto* sqes = reinterpret_cast<shm::SubmissionEntry*>(base + h->sq_entries_offset);
        std::memcpy(&sqes[sq_tail & h->sq_mask], &e, sizeof e);
        ++sq_tail;
        shm::word(h->sq_tail).store(sq_tail, std::memory_order_release);
        shm::ring(h->daemon_bell);
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        auto* cqes = reinterpret_cast<shm::CompletionEntry*>(base + h->cq_entries_offset);
        while (std::chrono::steady_clock::now() < deadline) {
            if (shm::word(h->cq_tail).load(std::memory_order_acquire) != cq_head) {
                shm::CompletionEntry c;
                std::memcpy(&c, &cqes[cq_head & h->cq_mask], sizeof c);
                ++cq_head;
                shm::word(h->cq_head).store(cq_head, std::memory_order_release);
                return c.user_tag == tag && c.status == 0 && c.valid + c.invalid == 1 &&
                       base[h->arena_offset + 4096] == known.expected[0];
            }
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        return false;
    }
};

inline std::size_t count_entries(const std::string& dir) {
    std::size_t n = 0;
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') ++n;
        closedir(d);
    }
    return n;
}

inline std::size_t daemon_fds(const DaemonProcess& d) { return count_entries("/proc/" + std::to_string(d.pid()) + "/fd"); }

inline std::size_t log_lines(const DaemonProcess& d) { return DaemonProcess::count(d.log(), "\n"); }

inline std::uint64_t counter(const DaemonProcess& d, const std::string& name) {
    return nlohmann::json::parse(stats_command(d.dir(), "stats json"))["counters"][name].get<std::uint64_t>();
}

template <class F>
inline bool eventually(F&& f, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!f()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

}  // namespace sigverify::test
