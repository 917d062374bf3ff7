// SPDX-License-Identifier: MIT
// libFuzzer target: one client session of the real daemon code, end to end.
//
// Per input, a daemon::Session (daemon/serve/session.cpp) serves one end of a
// socketpair, with the real Scheduler and CpuBackend (libsecp256k1) behind it;
// the harness is the client on the other end and the input is what that
// client does:
//   1. the handshake: a structured HelloRequest with fuzzed fields, raw bytes
//      of any length, descriptors passed with it, or an early close; then the
//      MappedAck (valid, refusing, garbage)
//   2. a sequence of operations on the segment it received: submissions (raw
//      64-byte entries or plausible verify entries with fuzzed offsets, counts,
//      key sizes, modes; cancels of submitted or unknown tags), arena writes
//      (fuzz bytes or real signed rows of the four tables), hostile ring
//      indices, scribbles over the header and the completion ring, packets on
//      the control socket (up to 4 KiB, with a descriptor or not), shrinking
//      the segment (ftruncate: the SIGBUS guard), doorbells, reaping
//      completions, disconnecting; registered buffers (ABI 1.4): registering
//      files (memfds of real rows as columns or of fuzz bytes, or descriptors
//      the daemon must refuse) with honest or hostile ranges, unregistering,
//      verify_registered_columns entries, cutting and rewriting a registered
//      file under or between batches
//      (and, at any point, the daemon beginning to shut down)
//   3. how the session ends: the server stops it, the server saw the hang-up,
//      or the reader finds the hang-up on its socket itself
//
// Speed (≥ 1,000 inputs/s on one core): the scheduler and its worker live as
// long as the process, and the session has no thread of its own. The harness
// runs the session's own steps (SessionDriver, session_driver.hpp: handshake, pump,
// socket_alive, end_session, leave — the functions Session::run and its reader
// loop call) in the fuzzing thread, at the points where the daemon's reader
// would wake: after the client's handshake messages, after every doorbell.
// Nothing waits on a clock except for verdicts from the worker thread. Each
// input starts from a fresh session and segment, and the scheduler is idle
// between inputs, so inputs are independent; only chunk timing (which chunk of
// a cancelled batch ran) is left to the worker thread.
//
// Invariants checked (abort = finding):
//   - the daemon's segment header passes the client's check_header()
//   - a refused handshake sends no descriptor; an accepted one maps exactly;
//     the session is established exactly when the client's messages were valid
//   - every completion carries the daemon's epoch and a tag that was submitted
//     and not yet answered, with the status check_submission() gives for the
//     entry as written (shutting_down for a valid one taken after the daemon
//     began to shut down); a verify completion counts exactly row_count rows
//   - an honest client (no hostile index or header writes) gets every answer
//     within the bound, and a hostile one ends its own session, never a hang
//   - a packet on the control socket after the handshake (any size, with a
//     descriptor or not) is drained and counted as a protocol error; the
//     session goes on (docs/protocol.md)
//   - every (un)registration is answered by one RegisterReply (right magic, no
//     descriptor) with the status the client's own reading of the protocol
//     gives; an accepted one carries an id never handed out before; a
//     registered batch is answered as check_registered_columns gives for the
//     registered size, and a batch of pool rows counts exactly the reference
//     verifier's valid rows; after a cut into a registered file, buffer_lost
//     or not_found instead, and the session goes on
//   - the daemon never writes a byte of the arena outside the result ranges and
//     row tails (collect) of the entries it accepted
//   - after the session ends: the scheduler lets go of it, the scheduler is
//     idle, every descriptor it opened is closed, nothing is left in /dev/shm,
//     no registered file is still mapped
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <new>
#include <thread>

#include "tests/fuzz/session_client.hpp"

namespace sigverify::fuzz {

Client::~Client() {
    if (seg_fd_ >= 0) close(seg_fd_);
    for (auto& [id, b] : buffers_)
        if (b.file >= 0) close(b.file);
}

bool Client::handshake() {
    const std::uint8_t how = in_.ConsumeIntegral<std::uint8_t>();
    // (An exhausted input reads as zeros: zero is the well-formed path.)
    bool closed_early = false;
    bool valid_hello = false;  // the daemon must accept it (and then wait for the ack)
    switch (how % 8) {
    case 5: {  // raw bytes of any length (including the right one)
        const auto bytes = in_.ConsumeBytes<std::uint8_t>(in_.ConsumeIntegralInRange<std::size_t>(0, 200));
        FUZZ_CHECK(shm::send_packet(sock_, bytes.data(), bytes.size()));
        break;
    }
    case 6:  // no hello at all: the peer closes
        shutdown(sock_, SHUT_WR);
        closed_early = true;
        break;
    default: {
        shm::HelloRequest h{};
        h.magic = (how & 0x10) ? in_.ConsumeIntegral<std::uint32_t>() : shm::kHelloMagic;
        h.protocol_version = (how & 0x20) ? in_.ConsumeIntegral<std::uint32_t>() : shm::kProtocolVersion;
        switch (in_.ConsumeIntegralInRange<int>(0, 3)) {
        case 0: h.requested_arena_size = 0; break;
        case 1: h.requested_arena_size = in_.ConsumeIntegralInRange<std::uint64_t>(0, 1 << 20); break;
        default: h.requested_arena_size = in_.ConsumeIntegral<std::uint64_t>(); break;
        }
        const std::uint32_t rings[] = {0, 1, 2, 3, 4, 8, 16, 1u << 31};
        h.requested_ring_entries = (how & 0x40) ? in_.ConsumeIntegral<std::uint32_t>()
                                                : rings[in_.ConsumeIntegralInRange<int>(0, 7)];
        h.flags = (how & 0x80) ? in_.ConsumeIntegral<std::uint32_t>() : 0;
        const auto name = in_.ConsumeBytes<char>(sizeof h.client_name);
        if (!name.empty()) std::memcpy(h.client_name, name.data(), name.size());
        const int pass = (how % 8) == 7 ? sock_ : -1;  // a hostile peer passing a descriptor
        FUZZ_CHECK(shm::send_packet(sock_, &h, sizeof h, pass));
        valid_hello = pass < 0 && h.magic == shm::kHelloMagic && h.flags == 0 &&
                      h.protocol_version == shm::kProtocolVersion &&
                      (h.requested_ring_entries & (h.requested_ring_entries - 1)) == 0;
        break;
    }
    }
    // The ack goes out before the daemon reads anything (it reads the hello,
    // replies, then reads the ack): a valid one, a refusing one, or garbage.
    const std::uint8_t ack_how = in_.ConsumeIntegral<std::uint8_t>() % 8;
    bool ack_ok = true;
    if (!closed_early) {
        if (ack_how == 6) {
            shm::MappedAck ack{shm::kAckMagic, static_cast<std::uint32_t>(shm::Status::bad_segment)};
            shm::send_packet(sock_, &ack, sizeof ack);
            ack_ok = false;
        } else if (ack_how == 7) {
            const auto bytes = in_.ConsumeBytes<std::uint8_t>(in_.ConsumeIntegralInRange<std::size_t>(0, 16));
            shm::send_packet(sock_, bytes.data(), bytes.size());
            ack_ok = bytes.size() == sizeof(shm::MappedAck) && std::memcmp(bytes.data(), "SVAK\0\0\0\0", 8) == 0;
        } else {
            shm::MappedAck ack{shm::kAckMagic, 0};
            FUZZ_CHECK(shm::send_packet(sock_, &ack, sizeof ack));
        }
    }
    const bool established = daemon_.handshake();
    FUZZ_CHECK(!established || ack_ok);

    shm::HelloReply reply{};
    const ssize_t n = recv_reply(sock_, reply, seg_fd_);
    if (n <= 0) {
        FUZZ_CHECK(seg_fd_ < 0);
        FUZZ_CHECK(!established);
        return false;
    }
    FUZZ_CHECK(n == static_cast<ssize_t>(sizeof reply));
    FUZZ_CHECK(reply.magic == shm::kReplyMagic);
    FUZZ_CHECK(reply.epoch == world->ctx->epoch);
    FUZZ_CHECK(shm::read_text(reply.error).size() < sizeof reply.error);
    if (debug())
        std::fprintf(stderr, "hello reply: status %u '%s'\n", reply.status, std::string(shm::read_text(reply.error)).c_str());
    if (reply.status != static_cast<std::uint32_t>(shm::Status::ok)) {
        FUZZ_CHECK(seg_fd_ < 0);  // a refusal never hands out a segment
        FUZZ_CHECK(!shm::read_text(reply.error).empty());
        FUZZ_CHECK(!established);
        FUZZ_CHECK(peer_closed(sock_, 0));
        return false;
    }
    // A raw hello of the right size may be well formed too; a structured one
    // with the right magic, version and flags is never refused here (the
    // sizes are clamped, and this harness's daemon has no client limit).
    FUZZ_CHECK(!valid_hello || reply.status == static_cast<std::uint32_t>(shm::Status::ok));
    FUZZ_CHECK(seg_fd_ >= 0);
    struct stat st{};
    FUZZ_CHECK(fstat(seg_fd_, &st) == 0);
    FUZZ_CHECK(static_cast<std::uint64_t>(st.st_size) == reply.segment_size);
    FUZZ_CHECK((st.st_mode & 0777) == 0600);
    struct stat daemon_st{};
    FUZZ_CHECK(fstat(daemon_.segment_fd(), &daemon_st) == 0);
    FUZZ_CHECK(st.st_ino == daemon_st.st_ino && st.st_dev == daemon_st.st_dev);  // the segment itself
    seg_.size = reply.segment_size;
    seg_.base = daemon_.segment();
    FUZZ_CHECK(seg_.base != nullptr);
    seg_.header = reinterpret_cast<shm::SegmentHeader*>(seg_.base);
    FUZZ_CHECK(shm::word(seg_.header->state).load(std::memory_order_acquire) ==
               static_cast<std::uint32_t>(shm::SegmentState::ready));
    shm::SegmentHeader copy;
    std::memcpy(&copy, seg_.header, sizeof copy);
    FUZZ_CHECK(shm::check_header(copy, seg_.size) == nullptr);
    FUZZ_CHECK(copy.epoch == reply.epoch && copy.session_id == reply.session_id);
    FUZZ_CHECK(copy.arena_size <= kArena && copy.sq_entries <= kRing);
    if (!established) {
        FUZZ_CHECK(peer_closed(sock_, 0));  // the daemon ended the session on the bad ack
        return false;
    }
    seg_ = shm::view_segment(seg_.base, seg_.size, copy);  // the arena is set from here on
    sq_ = shm::submission_producer(seg_, 0);
    cq_ = shm::completion_consumer(seg_, 0);
    // A new segment is all zeros (posix_fallocate of a new file); a byte
    // that is not at the end is one the daemon wrote, or handed out stale.
    shadow_.assign(seg_.arena_size, 0);  // reuses the buffers of earlier inputs
    writable_.assign(seg_.arena_size, 0);
    return true;
}

void Client::operations() {
    int ops = 0;
    while (in_.remaining_bytes() > 0 && ops++ < 48 && !closed_) {
        switch (in_.ConsumeIntegralInRange<int>(0, 14)) {
        case 0:
        case 1:
        case 2: submit_plausible(); break;
        case 3: submit_raw(); break;
        case 4: write_rows(); break;
        case 5: write_bytes(); break;
        case 6: reap(true); break;
        case 7:  // hostile submission tail
            hostile_ = true;
            shm::word(seg_.header->sq_tail).store(in_.ConsumeIntegral<std::uint32_t>(), std::memory_order_release);
            bell();
            break;
        case 8:  // hostile completion head
            hostile_ = true;
            shm::word(seg_.header->cq_head).store(in_.ConsumeIntegral<std::uint32_t>(), std::memory_order_release);
            bell();
            break;
        case 9: scribble_header(); break;
        case 10: stray_packet(); break;
        case 11: submit_cancel(); break;
        case 12: begin_shutdown(); break;
        case 13: truncate_segment(); break;
        default:
            // 14: registered buffers (ABI 1.4) behind one more byte, so
            // that the inputs committed before them keep their meaning
            // up to here (an exhausted input reads 0: the doorbell).
            switch (in_.ConsumeIntegral<std::uint8_t>() % 8) {
            case 1:
            case 2: register_buffer(); break;
            case 3: unregister_buffer(); break;
            case 4: submit_registered(); break;
            case 5: submit_registered_set(); break;
            case 6: shrink_buffer(); break;
            case 7: rewrite_buffer(); break;
            default: bell(); break;
            }
            break;
        }
    }
    if (!closed_ && !in_.ConsumeBool()) reap(true);  // by default, collect every answer
}

void Client::check_arena() const {
    if (seg_.arena == nullptr || truncated_) return;  // no session, it ended in the handshake, or the client cut it
    // Read through the descriptor, not the mapping: the same pages, without
    // a page fault per untouched page of the mapping.
    static std::vector<std::uint8_t> now;
    now.resize(seg_.arena_size);
    FUZZ_CHECK(pread(seg_fd_, now.data(), seg_.arena_size, static_cast<off_t>(seg_.arena - seg_.base)) ==
               static_cast<ssize_t>(seg_.arena_size));
    if (std::memcmp(now.data(), shadow_.data(), seg_.arena_size) == 0) return;  // the common case, fast
    for (std::uint64_t i = 0; i < seg_.arena_size; ++i) {
        if (writable_[i] || now[i] == shadow_[i]) continue;
        std::fprintf(stderr, "daemon wrote arena byte %llu: %02x -> %02x\n", static_cast<unsigned long long>(i),
                     shadow_[i], now[i]);
        std::abort();
    }
}

}  // namespace sigverify::fuzz

using namespace sigverify;
using namespace sigverify::fuzz;

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    // A parallel campaign's supervising process (-fork=N, -jobs=N) runs no
    // input: it must not pin itself (its workers would inherit the one core)
    // nor claim a core. The processes that run inputs set up on the first.
    for (int i = 1; i < *argc; ++i)
        if (std::strncmp((*argv)[i], "-fork=", 6) == 0 || std::strncmp((*argv)[i], "-jobs=", 6) == 0) return 0;
    init_world();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (world == nullptr) init_world();
    FuzzedDataProvider in(data, size);
    const std::size_t fds_before = count_fds();
    registered_files.clear();
    int sv[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
    timeval tv{3, 0};  // a reply that never comes is a finding, not a hang
    setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const ucred cred{getpid(), getuid(), getgid()};
    auto& ctx = *world->ctx;
    // A fresh log limit per input, as in a daemon that just started: which
    // lines are formatted then depends on the input, not on the clock and on
    // the inputs before it (libFuzzer's coverage stays reproducible).
    ctx.log_limit.~LogLimit();
    new (&ctx.log_limit) daemon::LogLimit();
    auto session = std::make_shared<daemon::Session>(ctx, sv[0], cred, world->next_id++);  // owns sv[0]
    ctx.active_sessions.fetch_add(1);  // as the server does before the session starts
    {
        daemon::SessionDriver daemon(*session);
        Client client(in, sv[1], daemon);
        if (client.handshake()) client.operations();
        // Disconnect (the kernel closes the socket when a client dies; here we do).
        close(sv[1]);
        // Then one of the three ways a session ends: the server stops it
        // (shutdown, the 2 s violation timeout), the server's poll saw the
        // hang-up (Server::reap_hung_up), or the reader finds EOF on its socket.
        switch (in.ConsumeIntegral<std::uint8_t>() % 8) {
        case 6: session->peer_hung_up(); break;
        case 7: break;
        default: session->request_stop(); break;
        }
        if (!daemon.ended()) FUZZ_CHECK(!daemon.wake());
        FUZZ_CHECK(session->finished());
        // Chunks still running hold the session; wait for the scheduler to let go.
        const auto deadline = Clock::now() + std::chrono::seconds(10);
        while (session.use_count() > 1 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::microseconds(20));
        FUZZ_CHECK(session.use_count() == 1);
        client.check_arena();
    }
    session.reset();  // unmaps, closes the daemon's end of the socket
    FUZZ_CHECK(ctx.active_sessions.load() == 0);
    FUZZ_CHECK(world->scheduler->idle());
    FUZZ_CHECK(count_fds() == fds_before);  // the session closed what it opened
    FUZZ_CHECK(!leftover_segments());
    FUZZ_CHECK(!registered_file_mapped());  // every registered buffer unmapped with the session
    return 0;
}
