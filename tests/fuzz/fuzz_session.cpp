// SPDX-License-Identifier: MIT
// libFuzzer target: one client session of the real daemon code, end to end.
//
// Per input, a daemon::Session (daemon/session.cpp) serves one end of a
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
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>

#include "daemon/backend.hpp"
#include "daemon/mapping_guard.hpp"
#include "daemon/scheduler.hpp"
#include "daemon/session.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"
#include "shm_protocol/doorbell.hpp"
#include "shm_protocol/fd_passing.hpp"
#include "shm_protocol/segment_access.hpp"
#include "daemon/submission_checks.hpp"
#include "tests/fuzz/session_driver.hpp"
#include "tests/fuzz/session_world.hpp"
#include "shm_protocol/segment_layout.hpp"
#include "shm_protocol/segment_view.hpp"

using namespace sigverify;
using Clock = std::chrono::steady_clock;

namespace {

struct Expect {
    shm::Status status;
    std::uint64_t rows;
    bool verify;
    bool cancel = false;        // a cancel entry (ABI 1.3): answered ok or not_found
    bool may_cancel = false;    // a verify that a later cancel entry named: may end cancelled, rows cut short
    bool entry_ok = false;      // passes check_submission (after the daemon began to shut down: shutting_down)
    std::uint64_t buffer_id = 0;        // verify_registered_columns: the buffer named (0: another opcode)
    std::optional<std::uint64_t> valid = std::nullopt;  // the valid count the reference verifier gives (pool rows)
};

// A buffer the daemon registered for this client (ABI 1.4), as the client
// knows it.
struct Buffer {
    int file = -1;              // the client's read-write descriptor of the file (shrinks, rewrites)
    bool sealed = false;        // a sealed memfd: cannot shrink
    std::uint64_t file_size = 0;
    std::uint64_t offset = 0, size = 0;  // the registered range of the file
    bool live = true;           // not unregistered, not known to be dropped by the daemon
    bool shrunk = false;        // the file was cut into the range: the daemon may drop it (buffer_lost)
    bool rewritten = false;     // the client wrote over the range: verdicts no longer the pool's
    // Real pool rows laid out as columns (rows == 0: fuzz bytes), offsets
    // relative to the registered range.
    int table = 0;
    std::uint64_t first = 0, rows = 0;
    std::uint64_t message = 0, key = 0, signature = 0;
};

// The client side of one session, driven by the input.
class Client {
public:
    Client(FuzzedDataProvider& in, int sock, daemon::SessionDriver& daemon) : in_(in), sock_(sock), daemon_(daemon) {}
    ~Client() {
        if (seg_fd_ >= 0) close(seg_fd_);
        for (auto& [id, b] : buffers_)
            if (b.file >= 0) close(b.file);
    }

    // Returns true when a session was established.
    bool handshake() {
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
        // A new segment is all zeros (posix_fallocate of a new file); a byte
        // that is not at the end is one the daemon wrote, or handed out stale.
        shadow_.assign(seg_.arena_size, 0);  // reuses the buffers of earlier inputs
        writable_.assign(seg_.arena_size, 0);
        return true;
    }

    void operations() {
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
                case 4:
                case 5: submit_registered(); break;
                case 6: shrink_buffer(); break;
                case 7: rewrite_buffer(); break;
                default: bell(); break;
                }
                break;
            }
        }
        if (!closed_ && !in_.ConsumeBool()) reap(true);  // by default, collect every answer
    }

    // Bytes of the arena the daemon wrote outside what it was allowed to.
    void check_arena() const {
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

private:
    std::uint32_t outstanding() const { return sq_tail_ - reaped_; }

    void push(const shm::SubmissionEntry& e, std::optional<std::uint64_t> valid = std::nullopt) {
        if (outstanding() >= seg_.sq_entries) reap(false);
        if (closed_ || outstanding() >= seg_.sq_entries) return;
        shm::SubmissionEntry copy = e;
        copy.user_tag = next_tag_++;
        shm::CheckedSubmission c;
        const shm::Status st = shm::check_submission(copy, seg_.arena_size, c);
        bool verifies =
            st == shm::Status::ok && (c.opcode == shm::Opcode::verify || c.opcode == shm::Opcode::verify_columns);
        // A registered batch: the daemon looks the buffer up when it takes the
        // entry, at the next wake-up; every (un)registration wakes it first, so
        // the buffers as the client knows them now are the ones it finds.
        shm::Status answer = st;
        if (st == shm::Status::ok && c.opcode == shm::Opcode::verify_registered_columns) {
            auto b = buffers_.find(c.buffer_id);
            if (b == buffers_.end() || !b->second.live) {
                answer = shm::Status::not_found;
            } else {
                shm::CheckedSubmission r = c;
                answer = shm::check_registered_columns(r, b->second.size);
                verifies = answer == shm::Status::ok;
            }
            if (verifies)  // the verdicts go to the arena (results mode only)
                for (std::uint64_t i = 0; i < c.row_count; ++i) writable_[c.results_offset + i] = 1;
        }
        if (verifies && c.opcode != shm::Opcode::verify_registered_columns) {
            // What the daemon may write: results bytes, or (collect) the tails of
            // rows / the correlate entries of column rows.
            if (c.mode == wire::Mode::results) {
                for (std::uint64_t i = 0; i < c.row_count; ++i) writable_[c.results_offset + i] = 1;
            } else if (c.opcode == shm::Opcode::verify_columns) {
                for (std::uint64_t i = 0; i < c.row_count * c.tail_size; ++i) writable_[c.correlate_offset + i] = 1;
            } else {
                const std::size_t rec = wire::record_size(c.kind);
                for (std::uint64_t r = 0; r < c.row_count; ++r)
                    for (std::size_t k = 0; k < c.tail_size; ++k) writable_[c.rows_offset + r * c.stride + rec + k] = 1;
            }
        }
        Expect expect{answer, c.row_count, verifies};
        expect.entry_ok = st == shm::Status::ok;
        if (st == shm::Status::ok && c.opcode == shm::Opcode::verify_registered_columns) {
            expect.buffer_id = c.buffer_id;
            if (verifies) expect.valid = valid;
        }
        if (st == shm::Status::ok && c.opcode == shm::Opcode::cancel) {
            expect.cancel = true;
            if (auto target = expect_.find(c.cancel_tag); target != expect_.end()) target->second.may_cancel = true;
        }
        expect_[copy.user_tag] = expect;
        std::memcpy(&seg_.sqes[sq_tail_ & (seg_.sq_entries - 1)], &copy, sizeof copy);
        ++sq_tail_;
        if (!hostile_) shm::word(seg_.header->sq_tail).store(sq_tail_, std::memory_order_release);
        if (!in_.ConsumeBool()) bell();
    }

    // Rings the daemon's doorbell: the reader wakes and takes what it can.
    void bell() {
        shm::ring(seg_.header->daemon_bell);
        if (!daemon_.wake()) closed_ = true;
    }

    // A packet on the control socket after the handshake (issue 17: one over
    // 512 bytes, or carrying a descriptor, used to end the session silently):
    // drained, counted as a protocol error, its descriptor closed (the fd
    // count after the input checks that), and the session goes on.
    void stray_packet() {
        std::size_t n = in_.ConsumeIntegralInRange<std::size_t>(1, 32);
        const std::uint8_t shape = in_.ConsumeIntegral<std::uint8_t>();
        if (shape & 1) n = std::size_t(1) << in_.ConsumeIntegralInRange<int>(9, 12);  // 512 .. 4096 bytes
        if (shape & 2) n += 1;
        std::vector<std::uint8_t> bytes = in_.ConsumeBytes<std::uint8_t>(n);
        bytes.resize(n, 0xA5);  // a short input still sends the size it chose (never 0: that reads as EOF)
        const int pass = (shape & 4) ? sock_ : -1;
        if (!daemon_.wake()) {  // the reader first takes what was already there
            closed_ = true;
            return;
        }
        const std::uint64_t errors = world->ctx->protocol_errors.load();
        FUZZ_CHECK(shm::send_packet(sock_, bytes.data(), bytes.size(), pass));
        // Nothing else changed since the last wake-up (but a hostile completion
        // head can turn out of bounds when the worker posts a verdict).
        const bool up = daemon_.wake();
        FUZZ_CHECK(up || hostile_);
        // Unless it is a buffer (un)registration (ABI 1.4), which the daemon
        // answers on the socket (the reply is read below).
        std::uint32_t magic = 0;
        if (n >= sizeof magic) std::memcpy(&magic, bytes.data(), sizeof magic);
        const bool control = (n == sizeof(shm::RegisterRequest) && magic == shm::kRegisterMagic) ||
                             (n == sizeof(shm::UnregisterRequest) && magic == shm::kUnregisterMagic && pass < 0);
        if (up && !control) FUZZ_CHECK(world->ctx->protocol_errors.load() >= errors + 1);
        if (up && control) {
            // Read the reply (the next registration reads its own); a raw
            // unregister may have named one of the client's buffers.
            shm::RegisterReply reply{};
            FUZZ_CHECK(recv_register_reply(reply));
            if (magic == shm::kUnregisterMagic) {
                FUZZ_CHECK(reply.magic == shm::kUnregisterReplyMagic);
                if (reply.status == static_cast<std::uint32_t>(shm::Status::ok)) {
                    auto b = buffers_.find(reply.buffer_id);
                    FUZZ_CHECK(b != buffers_.end() && b->second.live);
                    b->second.live = false;
                }
            } else {
                // A stray registration passes no descriptor or the socket.
                FUZZ_CHECK(reply.magic == shm::kRegisterReplyMagic);
                FUZZ_CHECK(reply.status == static_cast<std::uint32_t>(shm::Status::invalid_argument));
            }
        }
        if (debug())
            std::fprintf(stderr, "packet of %zu bytes%s: session %s, protocol errors +%llu\n", n,
                         pass >= 0 ? " with a descriptor" : "", up ? "goes on" : "ended",
                         static_cast<unsigned long long>(world->ctx->protocol_errors.load() - errors));
        if (!up) closed_ = true;
    }

    // The client shrinks its segment through its descriptor: the daemon's next
    // access to a lost page (reader, worker, or this harness, which shares the
    // daemon's mapping) takes SIGBUS, its guard (daemon/mapping_guard.hpp)
    // replaces the mapping and the session ends. Hostile from here on; the
    // arena can no longer be read back.
    void truncate_segment() {
        const std::uint64_t keep = in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.size - 1) & ~std::uint64_t(4095);
        FUZZ_CHECK(ftruncate(seg_fd_, static_cast<off_t>(keep)) == 0);
        hostile_ = truncated_ = true;
        bell();
        if (debug())
            std::fprintf(stderr, "segment cut to %llu bytes: session %s\n", static_cast<unsigned long long>(keep),
                         closed_ ? "ended" : "goes on");
    }

    // The daemon begins to shut down: every entry it takes from now on that
    // passes check_submission is answered shutting_down (the client then
    // reconnects to the next daemon); entries already taken finish.
    void begin_shutdown() {
        if (closing_tag_ == 0) {
            // Entries at and after the daemon's published head are taken after
            // this (tag = ring index + 1). A hostile client's completions are
            // not checked.
            closing_tag_ = hostile_ ? 1 : shm::word(seg_.header->sq_head).load(std::memory_order_acquire) + 1ull;
            daemon_.server_closing();
        }
        bell();
    }

    // A cancel entry (ABI 1.3) naming a tag submitted earlier (answered or
    // not), one never submitted, or with stray fields (bad_entry).
    void submit_cancel() {
        shm::SubmissionEntry e{};
        e.opcode = static_cast<std::uint8_t>(shm::Opcode::cancel);
        const std::uint8_t f = in_.ConsumeIntegral<std::uint8_t>();
        switch (f % 4) {
        case 0:
        case 1: e.rows_offset = next_tag_ > 1 ? next_tag_ - 1 - (f >> 2) % (next_tag_ - 1) : 0; break;
        case 2: e.rows_offset = next_tag_ + (f >> 2); break;  // not submitted yet
        default: e.rows_offset = in_.ConsumeIntegral<std::uint64_t>(); break;
        }
        if (f & 0x80) e.row_count = in_.ConsumeIntegral<std::uint8_t>();  // every other field must be 0
        push(e);
    }

    void submit_plausible() {
        shm::SubmissionEntry e{};
        const std::uint8_t f = in_.ConsumeIntegral<std::uint8_t>();
        e.opcode = static_cast<std::uint8_t>((f & 7) == 0   ? shm::Opcode::nop
                                             : (f & 7) == 1 ? shm::Opcode::verify_columns
                                                            : shm::Opcode::verify);
        e.record_kind = (f >> 3) & 1;
        e.encoding = e.record_kind == 0 ? ((f >> 4) & 1) : 0;
        e.mode = (f >> 5) & 1;
        e.table = (f & 0x40) ? static_cast<std::uint8_t>(e.record_kind == 0 ? (f >> 7) : 2 + (f >> 7))
                             : shm::kTableUnspecified;
        e.key_size = in_.ConsumeBool() ? static_cast<std::uint8_t>(e.record_kind == 0 ? 3 + 3 * (f >> 7) : 3 + 3 * (f >> 7))
                                       : in_.ConsumeIntegral<std::uint8_t>();
        if (e.opcode == static_cast<std::uint8_t>(shm::Opcode::nop)) {
            push(e);
            return;
        }
        e.row_count = in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::uint64_t>(0, 40) : in_.ConsumeIntegral<std::uint64_t>();
        e.rows_offset = in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.arena_size + 8)
                                          : in_.ConsumeIntegral<std::uint64_t>();
        if (e.mode == 0)
            e.results_offset = in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.arena_size + 8)
                                                 : in_.ConsumeIntegral<std::uint64_t>();
        if (e.opcode == static_cast<std::uint8_t>(shm::Opcode::verify_columns)) {
            auto offset = [&] {
                return in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.arena_size + 8)
                                         : in_.ConsumeIntegral<std::uint64_t>();
            };
            shm::ColumnOffsets o{};
            o.key_offset = offset();
            o.signature_offset = offset();
            o.correlate_offset = e.key_size != 0 ? offset() : 0;
            shm::set_column_offsets(e, o);
        }
        push(e);
    }

    // ---- registered buffers (ABI 1.4) ----------------------------------

    // The daemon's answer to a (un)registration: one RegisterReply, never a
    // descriptor with it. False when none came (the socket's 3 s timeout).
    bool recv_register_reply(shm::RegisterReply& reply) {
        alignas(8) std::uint8_t buf[512];
        const shm::ReceivedPacket r = shm::receive_packet(sock_, buf, sizeof buf, shm::KeepDescriptor::first);
        if (r.fd >= 0) close(r.fd);
        FUZZ_CHECK(r.fd < 0 && r.fds_closed == 0);  // a reply never passes a descriptor back
        if (r.bytes != static_cast<ssize_t>(sizeof reply)) {
            std::fprintf(stderr, "control reply of %zd bytes (errno %d)\n", r.bytes, r.error);
            return false;
        }
        std::memcpy(&reply, buf, sizeof reply);
        FUZZ_CHECK(shm::read_text(reply.error).size() < sizeof reply.error);
        FUZZ_CHECK(reply.reserved == 0);
        return true;
    }

    // Sends one control message (the reader first takes what the ring
    // holds, so entries already written meet the buffers as they were) and
    // reads the reply. False when the session ended.
    bool control(const void* msg, std::size_t n, int pass, shm::RegisterReply& reply) {
        if (!daemon_.wake()) {
            closed_ = true;
            return false;
        }
        FUZZ_CHECK(shm::send_packet(sock_, msg, n, pass));
        if (!daemon_.wake()) {
            FUZZ_CHECK(hostile_);
            closed_ = true;
            return false;
        }
        FUZZ_CHECK(recv_register_reply(reply));
        return true;
    }

    // Registers a file: a memfd holding real pool rows as columns or fuzz
    // bytes, or a descriptor the daemon must refuse (none, the socket, a
    // pipe, a directory, a write-only file) or accept (a read-only file, a
    // sealed memfd), with a plausible, inside, past-the-end, wrapping or raw
    // range. The reply must be the one this client's own reading of the
    // protocol gives (docs/protocol.md, segment_layout.hpp).
    void register_buffer() {
        const std::uint8_t how = in_.ConsumeIntegral<std::uint8_t>();
        const std::uint8_t shape = in_.ConsumeIntegral<std::uint8_t>();
        enum class Desc { memfd, none, socket, pipe, directory, read_only, write_only, sealed };
        static constexpr Desc kinds[16] = {Desc::memfd,  Desc::memfd,  Desc::memfd,     Desc::memfd,
                                           Desc::memfd,  Desc::memfd,  Desc::memfd,     Desc::memfd,
                                           Desc::memfd,  Desc::none,   Desc::socket,    Desc::pipe,
                                           Desc::directory, Desc::read_only, Desc::write_only, Desc::sealed};
        Desc desc = kinds[how % 16];
        // The file's contents: real rows as columns, at a fuzzed place.
        Buffer b;
        std::vector<std::uint8_t> content;
        std::uint64_t pad = in_.ConsumeIntegralInRange<std::uint64_t>(0, 8192);
        if ((how & 0x10) == 0) {
            b.table = in_.ConsumeIntegralInRange<int>(0, 3);
            b.first = in_.ConsumeIntegralInRange<std::uint64_t>(0, 31);
            b.rows = in_.ConsumeIntegralInRange<std::uint64_t>(1, 32 - b.first);
            const auto t = static_cast<wire::Table>(b.table);
            const wire::RecordKind kind = wire::record_kind(t);
            const std::size_t kw = wire::column_key_width(kind);
            const std::size_t stride = wire::stride(kind, wire::canonical_tail_size(t));
            content.resize(b.rows * (wire::kColumnMessageWidth + kw + wire::kColumnSignatureWidth));
            std::uint8_t* msg = content.data();
            std::uint8_t* key = msg + b.rows * wire::kColumnMessageWidth;
            std::uint8_t* sig = key + b.rows * kw;
            for (std::uint64_t i = 0; i < b.rows; ++i) {
                const std::uint8_t* row = world->pool[b.table].data() + (b.first + i) * stride;
                std::memcpy(msg + i * 32, row, 32);
                std::memcpy(key + i * kw, row + 32, kw);
                std::memcpy(sig + i * 64, row + 32 + kw, 64);
            }
            b.message = pad;
            b.key = pad + (key - msg);
            b.signature = pad + (sig - msg);
        } else {
            content = in_.ConsumeBytes<std::uint8_t>(in_.ConsumeIntegralInRange<std::size_t>(0, 512));
        }
        const std::uint64_t end = pad + content.size();
        b.file_size = (how & 0x20) ? in_.ConsumeIntegralInRange<std::uint64_t>(0, kMaxFileSize)
                                   : end + in_.ConsumeIntegralInRange<std::uint64_t>(0, 8192);
        // The range.
        std::uint32_t flags = 0;
        std::uint64_t offset = 0, size = 0;
        const std::uint64_t fs = b.file_size;
        switch ((shape >> 5) & 7) {
        case 0:
        case 1:
        case 2:  // what an honest client sends: the columns, from a page boundary or from them
            offset = (shape & 1) ? std::min(pad, fs) : std::min(pad / 4096 * 4096, fs);
            size = (shape & 2) ? fs - offset : std::min(end, fs) - offset;
            break;
        case 3:  // any range inside (size 0 included)
            offset = in_.ConsumeIntegralInRange<std::uint64_t>(0, fs);
            size = in_.ConsumeIntegralInRange<std::uint64_t>(0, fs - offset);
            break;
        case 4:  // past the end
            offset = in_.ConsumeIntegralInRange<std::uint64_t>(0, fs + 1);
            size = fs - std::min(offset, fs) + in_.ConsumeIntegralInRange<std::uint64_t>(1, 4096);
            break;
        case 5:  // offset + size wraps
            offset = UINT64_MAX - in_.ConsumeIntegralInRange<std::uint64_t>(0, 4096);
            size = in_.ConsumeIntegralInRange<std::uint64_t>(1, fs + 1) + (UINT64_MAX - offset);
            if (shape & 1) std::swap(offset, size);
            break;
        case 6:  // raw
            offset = in_.ConsumeIntegral<std::uint64_t>();
            size = in_.ConsumeIntegral<std::uint64_t>();
            break;
        default:  // an honest range with reserved flags set
            size = fs;
            flags = in_.ConsumeIntegral<std::uint32_t>() | 1;
            break;
        }
        // The descriptor.
        int file = -1, pass = -1;
        bool regular = true;
        auto fill = [&](int fd) {
            FUZZ_CHECK(ftruncate(fd, static_cast<off_t>(b.file_size)) == 0);
            if (pad < b.file_size && !content.empty()) {
                const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(content.size(), b.file_size - pad));
                FUZZ_CHECK(pwrite(fd, content.data(), n, static_cast<off_t>(pad)) == static_cast<ssize_t>(n));
            }
        };
        if (desc == Desc::read_only || desc == Desc::write_only) {
            file = open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
            if (file < 0) desc = Desc::memfd;  // no O_TMPFILE on /tmp: a memfd instead
        }
        if (desc == Desc::memfd || desc == Desc::sealed) {
            file = memfd_create("sigverify-fuzz-reg", MFD_CLOEXEC | (desc == Desc::sealed ? MFD_ALLOW_SEALING : 0));
            FUZZ_CHECK(file >= 0);
        }
        if (file >= 0) {
            fill(file);
            pass = file;
            if (desc == Desc::sealed) {
                FUZZ_CHECK(fcntl(file, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == 0);
                b.sealed = true;
            }
            if (desc == Desc::read_only || desc == Desc::write_only) {
                const std::string path = "/proc/self/fd/" + std::to_string(file);
                pass = open(path.c_str(), (desc == Desc::read_only ? O_RDONLY : O_WRONLY) | O_CLOEXEC);
                FUZZ_CHECK(pass >= 0);
            }
        }
        int pipe_fds[2] = {-1, -1};
        switch (desc) {
        case Desc::none: regular = false; break;
        case Desc::socket: pass = sock_; regular = false; break;
        case Desc::pipe:
            FUZZ_CHECK(pipe2(pipe_fds, O_CLOEXEC) == 0);
            pass = pipe_fds[0];
            regular = false;
            break;
        case Desc::directory:
            pass = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            FUZZ_CHECK(pass >= 0);
            regular = false;
            break;
        default: break;
        }
        // What the daemon must answer. The limits count the buffers it holds:
        // one the client shrank may be dropped already, so both counts are
        // bounds, and only a limit that holds for both is certain.
        std::uint64_t count_min = 0, count_max = 0, bytes_min = 0, bytes_max = 0;
        for (const auto& [id, known] : buffers_) {
            if (!known.live) continue;
            ++count_max;
            bytes_max += known.size;
            if (!known.shrunk) {
                ++count_min;
                bytes_min += known.size;
            }
        }
        auto over = [&](std::uint64_t count, std::uint64_t bytes) {
            return count >= kMaxRegistered || size > kMaxRegisteredBytes || bytes > kMaxRegisteredBytes - size;
        };
        std::set<shm::Status> allowed;
        if (flags != 0 || pass < 0 || !regular || size == 0 || offset > fs || size > fs - offset) {
            allowed.insert(shm::Status::invalid_argument);
        } else if (over(count_min, bytes_min)) {
            allowed.insert(shm::Status::too_large);
        } else {
            // A write-only descriptor cannot be mapped for reading (EACCES).
            allowed.insert(desc == Desc::write_only ? shm::Status::system_error : shm::Status::ok);
            if (over(count_max, bytes_max)) allowed.insert(shm::Status::too_large);
        }
        shm::RegisterRequest req{shm::kRegisterMagic, flags, offset, size};
        shm::RegisterReply reply{};
        const bool up = control(&req, sizeof req, pass, reply);
        if (pass >= 0 && pass != file && pass != sock_) close(pass);
        if (pipe_fds[1] >= 0) close(pipe_fds[1]);
        if (debug())
            std::fprintf(stderr,
                         "register (descriptor kind %d, file %llu bytes, range %llu +%llu, flags %u): %s status %u id %llu '%s'\n",
                         static_cast<int>(desc), static_cast<unsigned long long>(fs),
                         static_cast<unsigned long long>(offset), static_cast<unsigned long long>(size), flags,
                         up ? "reply" : "session ended,", reply.status, static_cast<unsigned long long>(reply.buffer_id),
                         reply.error);
        if (!up) {
            if (file >= 0) close(file);
            return;
        }
        FUZZ_CHECK(reply.magic == shm::kRegisterReplyMagic);
        const auto status = static_cast<shm::Status>(reply.status);
        if (allowed.count(status) == 0) {
            std::fprintf(stderr, "register: status %u, expected %u%s\n", reply.status,
                         static_cast<unsigned>(*allowed.begin()), allowed.size() > 1 ? " (or another bound)" : "");
            std::abort();
        }
        if (status != shm::Status::ok) {
            FUZZ_CHECK(reply.buffer_id == 0);
            FUZZ_CHECK(!shm::read_text(reply.error).empty());
            FUZZ_CHECK(reply.detail == (status == shm::Status::system_error ? std::uint32_t(EACCES) : 0u));
            if (file >= 0) close(file);
            return;
        }
        // A new id: never 0, never one this session handed out before.
        FUZZ_CHECK(reply.buffer_id != 0 && buffers_.count(reply.buffer_id) == 0);
        FUZZ_CHECK(reply.detail == 0 && shm::read_text(reply.error).empty());
        b.file = file;
        b.offset = offset;
        b.size = size;
        // Columns before the range, or cut by it, are not the pool's rows.
        if (b.rows != 0 && (pad < offset || end > offset + size)) b.rows = 0;
        b.message -= std::min(b.message, offset);
        b.key -= std::min(b.key, offset);
        b.signature -= std::min(b.signature, offset);
        struct stat st{};
        FUZZ_CHECK(fstat(file, &st) == 0);
        registered_files.emplace_back(st.st_dev, st.st_ino);
        buffers_.emplace(reply.buffer_id, b);
    }

    // A buffer id the client knows (handed out, live or not), or 0.
    std::uint64_t known_id(std::uint8_t pick, bool live_only) const {
        std::vector<std::uint64_t> ids;
        for (const auto& [id, b] : buffers_)
            if (b.live || !live_only) ids.push_back(id);
        return ids.empty() ? 0 : ids[pick % ids.size()];
    }

    // Unregisters a live buffer, one already gone, one never handed out, or
    // with reserved flags: ok exactly for a live one (or not_found for one the
    // daemon may have dropped after a shrink).
    void unregister_buffer() {
        const std::uint8_t f = in_.ConsumeIntegral<std::uint8_t>();
        std::uint64_t id;
        switch (f % 4) {
        case 0:
        case 1: id = known_id(f >> 2, true); break;
        case 2: id = known_id(f >> 2, false); break;
        default: id = (f & 0x80) ? in_.ConsumeIntegral<std::uint64_t>() : (buffers_.empty() ? 1 : buffers_.rbegin()->first + 1); break;
        }
        shm::UnregisterRequest req{shm::kUnregisterMagic, (f & 0xC0) == 0x40 ? in_.ConsumeIntegral<std::uint32_t>() | 1 : 0u, id};
        shm::RegisterReply reply{};
        if (!control(&req, sizeof req, -1, reply)) return;
        if (debug())
            std::fprintf(stderr, "unregister %llu (flags %u): status %u\n", static_cast<unsigned long long>(id), req.flags,
                         reply.status);
        FUZZ_CHECK(reply.magic == shm::kUnregisterReplyMagic);
        FUZZ_CHECK(reply.buffer_id == id);
        FUZZ_CHECK(reply.detail == 0);
        auto b = buffers_.find(id);
        const bool live = b != buffers_.end() && b->second.live;
        if (req.flags != 0) {
            FUZZ_CHECK(reply.status == static_cast<std::uint32_t>(shm::Status::invalid_argument));
        } else if (live && b->second.shrunk) {
            FUZZ_CHECK(reply.status == static_cast<std::uint32_t>(shm::Status::ok) ||
                       reply.status == static_cast<std::uint32_t>(shm::Status::not_found));
            b->second.live = false;
        } else if (live) {
            FUZZ_CHECK(reply.status == static_cast<std::uint32_t>(shm::Status::ok));
            b->second.live = false;
        } else {
            FUZZ_CHECK(reply.status == static_cast<std::uint32_t>(shm::Status::not_found));
        }
    }

    // A verify_registered_columns entry: the columns of a buffer of pool rows
    // as an honest client writes them (a sub-range of its rows; the valid
    // count is known), or fuzzed offsets, counts and fields, naming a live,
    // dead or random buffer id.
    void submit_registered() {
        const std::uint8_t f = in_.ConsumeIntegral<std::uint8_t>();
        std::uint64_t id;
        switch (f % 4) {
        case 0:
        case 1: id = known_id(in_.ConsumeIntegral<std::uint8_t>(), true); break;
        case 2: id = known_id(in_.ConsumeIntegral<std::uint8_t>(), false); break;
        default: id = in_.ConsumeBool() ? in_.ConsumeIntegral<std::uint64_t>() : in_.ConsumeIntegralInRange<std::uint64_t>(0, 8); break;
        }
        const auto known = buffers_.find(id);
        const Buffer* b = known != buffers_.end() ? &known->second : nullptr;
        shm::SubmissionEntry e{};
        e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify_registered_columns);
        shm::RegisteredColumnOffsets o{};
        o.buffer_id = id;
        std::optional<std::uint64_t> valid;
        if (b != nullptr && b->rows != 0 && (f & 4) == 0) {
            const auto t = static_cast<wire::Table>(b->table);
            const wire::RecordKind kind = wire::record_kind(t);
            e.record_kind = static_cast<std::uint8_t>(kind);
            e.encoding = static_cast<std::uint8_t>(pool_encoding(b->table));
            e.table = (f & 8) ? static_cast<std::uint8_t>(t) : shm::kTableUnspecified;
            const std::uint64_t s = in_.ConsumeIntegralInRange<std::uint64_t>(0, b->rows);
            e.row_count = in_.ConsumeIntegralInRange<std::uint64_t>(0, b->rows - s + ((f & 0x10) ? 2 : 0));
            e.rows_offset = b->message + s * wire::kColumnMessageWidth;
            o.key_offset = b->key + s * wire::column_key_width(kind);
            o.signature_offset = b->signature + s * wire::kColumnSignatureWidth;
            if (s + e.row_count <= b->rows) {
                std::uint64_t v = 0;
                for (std::uint64_t i = 0; i < e.row_count; ++i) v += world->verdict[b->table][b->first + s + i];
                valid = v;
            }
        } else {
            const std::uint64_t room = b != nullptr ? b->size + 8 : 8192;
            auto offset = [&] {
                return in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::uint64_t>(0, room) : in_.ConsumeIntegral<std::uint64_t>();
            };
            e.record_kind = (f >> 3) & 1;
            e.encoding = e.record_kind == 0 ? ((f >> 4) & 1) : 0;
            e.table = shm::kTableUnspecified;
            e.row_count = in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::uint64_t>(0, 40) : in_.ConsumeIntegral<std::uint64_t>();
            e.rows_offset = offset();
            o.key_offset = offset();
            o.signature_offset = offset();
        }
        e.results_offset = in_.ConsumeBool() ? in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.arena_size + 8)
                                             : in_.ConsumeIntegral<std::uint64_t>();
        if ((f & 0xE0) == 0xE0) {  // what a registered batch may not ask: collect, a tail, unknown flags
            e.mode = in_.ConsumeIntegral<std::uint8_t>() % 3;
            e.key_size = in_.ConsumeIntegral<std::uint8_t>() % 3;
            e.flags = in_.ConsumeIntegral<std::uint16_t>();
        }
        shm::set_registered_offsets(e, o);
        push(e, valid);
    }

    // The client cuts one of its registered files (between batches, or under
    // one it wrote without ringing): a batch reading a lost page answers
    // buffer_lost, later ones not_found; never a crash of the daemon.
    void shrink_buffer() {
        const std::uint64_t id = known_id(in_.ConsumeIntegral<std::uint8_t>(), false);
        const std::uint8_t f = in_.ConsumeIntegral<std::uint8_t>();
        if (id != 0) {
            Buffer& b = buffers_[id];
            std::uint64_t keep = in_.ConsumeIntegralInRange<std::uint64_t>(0, b.file_size);
            if (f & 1) keep &= ~std::uint64_t(4095);
            const int r = ftruncate(b.file, static_cast<off_t>(keep));
            FUZZ_CHECK(r == 0 || (b.sealed && errno == EPERM));
            if (r == 0) {
                b.file_size = keep;
                if (keep < b.offset + b.size) b.shrunk = true;
            }
            if (debug())
                std::fprintf(stderr, "buffer %llu cut to %llu bytes%s\n", static_cast<unsigned long long>(id),
                             static_cast<unsigned long long>(keep), r == 0 ? "" : " (sealed: refused)");
        }
        if (f & 2) bell();
    }

    // The client rewrites bytes of a registered file: only its own verdicts
    // change (the daemon stages each row before verifying it).
    void rewrite_buffer() {
        const std::uint64_t id = known_id(in_.ConsumeIntegral<std::uint8_t>(), false);
        const auto bytes = in_.ConsumeBytes<std::uint8_t>(in_.ConsumeIntegralInRange<std::size_t>(1, 64));
        if (id == 0 || bytes.empty()) return;
        Buffer& b = buffers_[id];
        if (b.sealed) return;
        const std::uint64_t at = b.offset + in_.ConsumeIntegralInRange<std::uint64_t>(0, b.size - 1);
        if (at < b.file_size) {
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(bytes.size(), b.file_size - at));
            FUZZ_CHECK(pwrite(b.file, bytes.data(), n, static_cast<off_t>(at)) == static_cast<ssize_t>(n));
            b.rewritten = true;
        }
    }

    void submit_raw() {
        shm::SubmissionEntry e{};
        const auto bytes = in_.ConsumeBytes<std::uint8_t>(sizeof e);
        if (!bytes.empty()) std::memcpy(&e, bytes.data(), bytes.size());
        push(e);
    }

    void write_arena(std::uint64_t off, const std::uint8_t* p, std::size_t n) {
        if (off >= seg_.arena_size || n == 0) return;
        n = std::min<std::uint64_t>(n, seg_.arena_size - off);
        std::memcpy(seg_.arena + off, p, n);
        std::memcpy(shadow_.data() + off, p, n);
    }

    void write_rows() {
        const int t = in_.ConsumeIntegralInRange<int>(0, 3);
        const std::size_t stride = wire::stride(wire::record_kind(static_cast<wire::Table>(t)),
                                                wire::canonical_tail_size(static_cast<wire::Table>(t)));
        const std::size_t first = in_.ConsumeIntegralInRange<std::size_t>(0, 31);
        const std::size_t count = in_.ConsumeIntegralInRange<std::size_t>(1, 32 - first);
        const std::uint64_t off = in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.arena_size - 1);
        write_arena(off, world->pool[t].data() + first * stride, count * stride);
    }

    void write_bytes() {
        const std::uint64_t off = in_.ConsumeIntegralInRange<std::uint64_t>(0, seg_.arena_size - 1);
        const auto bytes = in_.ConsumeBytes<std::uint8_t>(in_.ConsumeIntegralInRange<std::size_t>(1, 256));
        write_arena(off, bytes.data(), bytes.size());
    }

    void scribble_header() {
        // Anything in the header page, the daemon's own words included: it must
        // never read back what it owns or trust what the client owns.
        const std::size_t off = in_.ConsumeIntegralInRange<std::size_t>(0, shm::kHeaderSize - 1);
        const auto bytes = in_.ConsumeBytes<std::uint8_t>(in_.ConsumeIntegralInRange<std::size_t>(1, 16));
        const std::size_t n = std::min(bytes.size(), shm::kHeaderSize - off);
        if (n == 0) return;
        std::memcpy(seg_.base + off, bytes.data(), n);
        // Our own bookkeeping relies on the ring index words; past them we are hostile.
        if (off < 448 && off + n > offsetof(shm::SegmentHeader, sq_head)) hostile_ = true;
    }

    // Reaps completions until every outstanding entry is answered (honest
    // client: must happen within the bound) or the session closed.
    void reap(bool all) {
        if (hostile_) {
            // Indices are no longer ours to trust: only wait for the session to
            // end or stay up, never for progress.
            closed_ = shm::word(seg_.header->state).load(std::memory_order_acquire) ==
                      static_cast<std::uint32_t>(shm::SegmentState::closed);
            return;
        }
        shm::word(seg_.header->sq_tail).store(sq_tail_, std::memory_order_release);
        bell();
        const auto deadline = Clock::now() + kAnswerBound;
        while (reaped_ != sq_tail_) {
            const std::uint32_t tail = shm::word(seg_.header->cq_tail).load(std::memory_order_acquire);
            FUZZ_CHECK(std::uint32_t(tail - reaped_) <= seg_.cq_entries);
            while (reaped_ != tail) {
                shm::CompletionEntry c;
                std::memcpy(&c, &seg_.cqes[reaped_ & (seg_.cq_entries - 1)], sizeof c);
                check_completion(c);
                ++reaped_;
            }
            shm::word(seg_.header->cq_head).store(reaped_, std::memory_order_release);
            bell();
            if (!all && outstanding() < seg_.sq_entries) return;
            if (reaped_ == sq_tail_) break;
            if (shm::word(seg_.header->state).load(std::memory_order_acquire) ==
                static_cast<std::uint32_t>(shm::SegmentState::closed)) {
                closed_ = true;
                return;
            }
            if (Clock::now() > deadline) {
                std::fprintf(stderr, "honest client: %u of %u entries unanswered after %lld s\n", sq_tail_ - reaped_,
                             sq_tail_, static_cast<long long>(kAnswerBound.count()));
                std::abort();
            }
            const std::uint32_t seq = shm::begin_wait(seg_.header->client_bell);
            if (shm::word(seg_.header->cq_tail).load(std::memory_order_acquire) == tail)
                shm::wait(seg_.header->client_bell, seq, std::chrono::milliseconds(20));
            shm::end_wait(seg_.header->client_bell);
        }
    }

    void check_completion(const shm::CompletionEntry& c) {
        if (debug())
            std::fprintf(stderr, "completion: tag %llu status %u valid %llu invalid %llu detail %u\n",
                         static_cast<unsigned long long>(c.user_tag), c.status, static_cast<unsigned long long>(c.valid),
                         static_cast<unsigned long long>(c.invalid), c.detail);
        FUZZ_CHECK(c.epoch == world->ctx->epoch);
        auto it = expect_.find(c.user_tag);
        FUZZ_CHECK(it != expect_.end());  // submitted and not answered yet
        const Expect e = it->second;
        expect_.erase(it);
        const Buffer* buffer = nullptr;
        if (e.buffer_id != 0)
            if (auto b = buffers_.find(e.buffer_id); b != buffers_.end()) buffer = &b->second;
        if (closing_tag_ != 0 && c.user_tag >= closing_tag_ && e.entry_ok) {
            FUZZ_CHECK(c.status == static_cast<std::uint32_t>(shm::Status::shutting_down));
            FUZZ_CHECK(c.valid == 0 && c.invalid == 0);
        } else if (e.cancel) {
            FUZZ_CHECK(c.status == static_cast<std::uint32_t>(shm::Status::ok) ||
                       c.status == static_cast<std::uint32_t>(shm::Status::not_found));
            FUZZ_CHECK(c.valid == 0 && c.invalid == 0);
        } else if (e.may_cancel && c.status == static_cast<std::uint32_t>(shm::Status::cancelled)) {
            FUZZ_CHECK(c.valid + c.invalid <= e.rows);  // the chunks that ran before the cancel
        } else if (buffer != nullptr && buffer->shrunk &&
                   (c.status == static_cast<std::uint32_t>(shm::Status::buffer_lost) ||
                    c.status == static_cast<std::uint32_t>(shm::Status::not_found))) {
            // The client cut the file into the range: the daemon found the loss
            // (SIGBUS guard) under this batch or an earlier one and dropped the
            // registration. Never a verdict of its zeros counted as more rows.
            FUZZ_CHECK(c.valid + c.invalid <= e.rows);
            buffers_[e.buffer_id].live = false;
        } else {
            FUZZ_CHECK(c.status == static_cast<std::uint32_t>(e.status));
            if (e.verify) FUZZ_CHECK(c.valid + c.invalid == e.rows);
            else FUZZ_CHECK(c.valid == 0 && c.invalid == 0);
            // Real rows read from a registered buffer the client left alone:
            // exactly the reference verifier's verdicts.
            if (e.verify && e.valid && buffer != nullptr && !buffer->rewritten && !buffer->shrunk) {
                if (c.valid != *e.valid)
                    std::fprintf(stderr, "registered batch tag %llu: %llu valid, the reference verifier says %llu\n",
                                 static_cast<unsigned long long>(c.user_tag), static_cast<unsigned long long>(c.valid),
                                 static_cast<unsigned long long>(*e.valid));
                FUZZ_CHECK(c.valid == *e.valid);
            }
        }
        for (std::uint32_t r : c.reserved) FUZZ_CHECK(r == 0);
    }

    FuzzedDataProvider& in_;
    int sock_;
    daemon::SessionDriver& daemon_;
    int seg_fd_ = -1;
    shm::SegmentView seg_;  // base, size and header once mapped; rings and arena once established
    std::uint32_t sq_tail_ = 0, reaped_ = 0;
    std::uint64_t next_tag_ = 1;
    std::uint64_t closing_tag_ = 0;  // the first tag the daemon takes after it began to shut down (0: not yet)
    bool hostile_ = false, closed_ = false, truncated_ = false;
    std::map<std::uint64_t, Expect> expect_;
    std::map<std::uint64_t, Buffer> buffers_;  // every buffer id the daemon handed out, by id
    // Kept across inputs (ASan hands out fresh pages for every new 64 KiB
    // buffer: page faults were a fifth of the time per input).
    static inline std::vector<std::uint8_t> shadow_, writable_;
};

}  // namespace

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
