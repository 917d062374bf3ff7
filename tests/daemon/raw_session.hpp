// SPDX-License-Identifier: MIT
// A raw client for tests: speaks the control-socket handshake and the rings
// by hand against a real daemon, so that tests can write what the client
// library never would (malformed entries, hostile control messages).
#pragma once

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include "batch_check.hpp"
#include "shm_protocol/doorbell.hpp"
#include "shm_protocol/fd_passing.hpp"
#include "sigverify/shm_protocol/segment_access.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"

namespace sigverify::test {

struct RawSession {
    int sock = -1;
    int seg_fd = -1;
    std::uint8_t* base = nullptr;
    std::size_t size = 0;
    shm::SegmentHeader* h = nullptr;
    shm::HelloReply reply{};
    ssize_t reply_bytes = 0;

    ~RawSession() {
        if (base != nullptr) munmap(base, size);
        if (seg_fd >= 0) close(seg_fd);
        if (sock >= 0) close(sock);
    }

    bool open(const std::string& path) {
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
        sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        timeval tv{3, 0};
        setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        return ::connect(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    }

    void send_raw(const void* p, std::size_t n) { (void)send(sock, p, n, MSG_NOSIGNAL); }

    bool recv_reply() {
        const shm::ReceivedPacket r = shm::receive_packet(sock, &reply, sizeof reply, shm::KeepDescriptor::first);
        reply_bytes = r.bytes;
        if (r.fd >= 0) seg_fd = r.fd;
        return reply_bytes == static_cast<ssize_t>(sizeof reply);
    }

    bool handshake(const std::string& path, std::uint32_t version = shm::kProtocolVersion,
                   const char* client_name = "raw") {
        if (!open(path)) return false;
        shm::HelloRequest hello{};
        hello.magic = shm::kHelloMagic;
        hello.protocol_version = version;
        shm::copy_text(hello.client_name, client_name);
        send_raw(&hello, sizeof hello);
        if (!recv_reply() || reply.status != 0 || seg_fd < 0) return false;
        size = reply.segment_size;
        void* m = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, seg_fd, 0);
        if (m == MAP_FAILED) return false;
        base = static_cast<std::uint8_t*>(m);
        h = reinterpret_cast<shm::SegmentHeader*>(base);
        shm::MappedAck ack{shm::kAckMagic, 0};
        send_raw(&ack, sizeof ack);
        return true;
    }

    shm::SubmissionEntry* sqes() { return reinterpret_cast<shm::SubmissionEntry*>(base + h->sq_entries_offset); }
    shm::CompletionEntry* cqes() { return reinterpret_cast<shm::CompletionEntry*>(base + h->cq_entries_offset); }
    std::uint8_t* arena() { return base + h->arena_offset; }

    std::uint32_t sq_tail = 0, cq_head = 0;

    void submit(const shm::SubmissionEntry& e) {
        std::memcpy(&sqes()[sq_tail & h->sq_mask], &e, sizeof e);
        ++sq_tail;
        shm::word(h->sq_tail).store(sq_tail, std::memory_order_release);
        shm::ring(h->daemon_bell);
    }

    // Waits (bounded) for the next completion.
    bool next_completion(shm::CompletionEntry& out, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            if (shm::word(h->cq_tail).load(std::memory_order_acquire) != cq_head) {
                std::memcpy(&out, &cqes()[cq_head & h->cq_mask], sizeof out);
                ++cq_head;
                shm::word(h->cq_head).store(cq_head, std::memory_order_release);
                return true;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        }
        return false;
    }

    // One ECDSA row of known verdict, verified in results mode (row at arena
    // offset 0, its verdict byte at 4096): true when its completion arrives ok
    // with the right verdict.
    bool verify_one(std::uint64_t tag) {
        const KnownRows known = make_known_rows(wire::Table::ecdsa, 1, wire::SigEncoding::opaque, tag);
        std::memcpy(arena(), known.rows.data(), known.rows.size());
        std::memset(arena() + 4096, 0xAA, 1);
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
        submit(e);
        shm::CompletionEntry c{};
        return next_completion(c) && c.user_tag == tag && c.status == 0 && c.valid + c.invalid == 1 &&
               arena()[4096] == known.expected[0];
    }

    // True when the daemon closed our socket within the limit.
    bool closed_by_daemon(std::chrono::milliseconds limit) {
        pollfd p{sock, POLLIN | POLLRDHUP, static_cast<short>(0)};
        if (::poll(&p, 1, static_cast<int>(limit.count())) <= 0) return false;
        char buf[512];
        return (p.revents & (POLLHUP | POLLRDHUP)) != 0 || recv(sock, buf, sizeof buf, MSG_DONTWAIT) == 0;
    }
};

// Raw control messages (ring ABI 1.4): one request, one reply; a reply that
// does not arrive whole reads as magic 0.
inline shm::RegisterReply receive_register_reply(RawSession& s) {
    shm::RegisterReply reply{};
    const shm::ReceivedPacket r = shm::receive_packet(s.sock, &reply, sizeof reply, shm::KeepDescriptor::none);
    if (r.bytes != static_cast<ssize_t>(sizeof reply)) reply.magic = 0;
    return reply;
}

inline shm::RegisterReply raw_register(RawSession& s, int fd, std::uint64_t offset, std::uint64_t size,
                                       std::uint32_t flags = 0) {
    shm::RegisterRequest req{shm::kRegisterMagic, flags, offset, size};
    shm::send_packet(s.sock, &req, sizeof req, fd);
    shm::ring_force(s.h->daemon_bell);
    return receive_register_reply(s);
}

// A verify_registered_columns entry (results mode) over buffer id's columns.
inline shm::SubmissionEntry registered_entry(std::uint64_t id, std::uint64_t message, std::uint64_t key,
                                             std::uint64_t signature, std::uint64_t results, std::uint64_t n,
                                             wire::RecordKind kind = wire::RecordKind::ecdsa) {
    shm::SubmissionEntry e{};
    e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify_registered_columns);
    e.record_kind = static_cast<std::uint8_t>(kind);
    e.mode = static_cast<std::uint8_t>(wire::Mode::results);
    e.table = shm::kTableUnspecified;
    e.rows_offset = message;
    e.results_offset = results;
    e.row_count = n;
    shm::set_registered_offsets(e, shm::RegisteredColumnOffsets{key, signature, id});
    return e;
}

inline shm::RegisterReply raw_unregister(RawSession& s, std::uint64_t id) {
    shm::UnregisterRequest req{shm::kUnregisterMagic, 0, id};
    shm::send_packet(s.sock, &req, sizeof req);
    shm::ring_force(s.h->daemon_bell);
    return receive_register_reply(s);
}

}  // namespace sigverify::test
