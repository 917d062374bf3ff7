// SPDX-License-Identifier: MIT
// libsigverify internals: Client::Impl, the state of one client, and the map
// of which file implements which part of it.
//
//   client.cpp          the public Client: connect, session queries, the
//                       zero-copy calls; the session's life (connect,
//                       reconnect, death detection)
//   connection.cpp      socket, handshake, segment mapping (Connection)
//   ring.cpp            slots and arena space, submission, reaping
//                       completions, waiting (spin, then futex sleep)
//   copy_api.cpp        the copy APIs for rows and columns: split a caller's
//                       batch into pieces, copy them in, pipeline, copy out
//   local_fallback.cpp  in-process verification (LocalFallback)
//   registered.cpp      registered buffers, the control-socket exchange
//   info.cpp            Client::info (the daemon info request)
//
// Locking: one mutex (mu) guards everything below it. Functions named
// *_locked expect it held; sleep_locked() drops it while sleeping. The
// fallback verifiers and the caller's memory copies run without it.
//
// Slots: a batch in flight owns one slot and one contiguous stretch of the
// arena. Arena space is handed out in allocation order (a ring of virtual
// positions: arena_head..arena_tail) and freed in the same order, so a
// released slot returns its space only once every older slot is released.
// slots.size() never exceeds the submission ring, so a submission always
// finds room once the daemon consumed the earlier ones. A slot's generation
// changes on every allocation; batches and completions carry (slot,
// generation), so a stale one is never applied.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <stop_token>
#include <string>
#include <vector>

#include "connection.hpp"
#include "local_fallback.hpp"
#include "sigverify/client.hpp"

namespace sigverify {
namespace detail {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kAlign = shm::kArenaAlign;
constexpr std::size_t kMaxChunkRows = 32768;   // copy API: rows per submission at most
constexpr std::size_t kPipelineDepth = 4;      // copy API: submissions in flight per call
constexpr auto kReconnectInterval = std::chrono::milliseconds(500);

// Which slot a RowBatch or ColumnBatch holds: (slot, generation), the
// generation 0 when it holds none.
struct SlotRef {
    std::uint32_t slot = 0;
    std::uint32_t generation = 0;
};
template <class B>
SlotRef ref(const B& batch) {
    return SlotRef{batch.slot, batch.generation};
}

// The user_tag of a batch's submission is (generation << 32) | slot; the
// tag of a cancel entry for that batch sets kCancelTagBit too, so its
// completion is told apart (slots are far fewer than 2^31).
constexpr std::uint64_t kCancelTagBit = std::uint64_t(1) << 31;
inline std::uint64_t batch_tag(SlotRef b) { return (std::uint64_t(b.generation) << 32) | b.slot; }

inline std::uint64_t align_up(std::uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

// Where a batch's rows are, which names the opcode that verifies it: packed
// rows in the arena, columns in the arena, columns in one registered buffer,
// or a column set naming a registered buffer per column. A slot holds one.
enum class BatchShape : std::uint8_t { rows, arena_columns, registered_columns, registered_column_set };
constexpr shm::Opcode verify_opcode(BatchShape shape) {
    switch (shape) {
    case BatchShape::rows: return shm::Opcode::verify;
    case BatchShape::arena_columns: return shm::Opcode::verify_columns;
    case BatchShape::registered_columns: return shm::Opcode::verify_registered_columns;
    case BatchShape::registered_column_set: return shm::Opcode::verify_registered_column_set;
    }
    return shm::Opcode::verify;
}

// A status that means the daemon could not do the work (the local fallback
// may step in), as opposed to a caller error.
inline bool is_daemon_failure(Status s) {
    return s == Status::disconnected || s == Status::shutting_down || s == Status::cancelled ||
           s == Status::backend_error || s == Status::stale_epoch || s == Status::unreachable ||
           s == Status::timeout;
}

// What ends a call early: the caller's stop token and/or a flag it already
// has (libbitcoin keeps a std::atomic_bool), both polled between pieces and
// while waiting, exactly alike.
struct CancelCheck {
    std::stop_token token;
    const std::atomic<bool>* flag = nullptr;
    bool stop_requested() const {
        return token.stop_requested() || (flag != nullptr && flag->load(std::memory_order_acquire));
    }
};

// The verdict bytes of a counts-only call (results == nullptr) that the
// local fallback verifies: one piece (at most kMaxChunkRows) at a time, made
// on first use only, so the daemon path allocates nothing. get() returns
// nullptr when out of memory (the call then fails, it never guesses).
class CountsOnlyScratch {
public:
    std::uint8_t* get(std::size_t count) {
        if (count > kMaxChunkRows) return nullptr;
        if (!bytes_) bytes_.reset(new (std::nothrow) std::uint8_t[kMaxChunkRows]);
        return bytes_.get();
    }

private:
    std::unique_ptr<std::uint8_t[]> bytes_;
};

// The columns of a registered batch (registered.cpp): each in a buffer (the
// same one three times for the single-buffer form, ABI 1.4; one each, ABI
// 1.6) at an offset from the start of its registered range; message, key,
// signature.
struct RegisteredSource {
    RegisteredBuffer::State* buffer[3] = {nullptr, nullptr, nullptr};
    std::uint64_t offset[3] = {0, 0, 0};
    wire::RecordKind kind = wire::RecordKind::ecdsa;
    wire::SigEncoding encoding = wire::SigEncoding::opaque;
    std::size_t count = 0;
    bool one_buffer() const { return buffer[0] == buffer[1] && buffer[1] == buffer[2]; }
};

}  // namespace detail

// Hidden: Client is exported (SIGVERIFY_API), and a nested class would be too.
struct __attribute__((visibility("hidden"))) Client::Impl {
    using Clock = detail::Clock;

    enum class SlotState : std::uint8_t { free, reserved, submitted, done, released };
    // A cancel of the slot's batch: not sent, sent (waiting for the daemon's
    // answer to the cancel entry), answered (cancel_answer holds it).
    enum class CancelState : std::uint8_t { none, sent, answered };
    struct Slot {
        SlotState state = SlotState::free;
        bool abandoned = false;
        std::uint32_t generation = 0;
        std::uint64_t begin = 0, end = 0;  // virtual arena positions (end-begin includes padding)
        std::uint64_t rows_offset = 0, results_offset = 0;
        detail::BatchShape shape = detail::BatchShape::rows;
        // Arena columns: rows_offset is the message column.
        std::uint64_t key_offset = 0, signature_offset = 0, correlate_offset = 0;
        // Registered columns (ABI 1.4): only the results are in the arena
        // (results_offset); the columns are at these offsets (and key_offset,
        // signature_offset) inside registered buffer buffer_id.
        std::uint64_t buffer_id = 0, message_offset = 0;
        // A registered column set (ABI 1.6): a buffer per column; the
        // RegisteredColumnSet is in the arena at column_set_offset (buffer_id
        // and the offsets unused).
        std::uint64_t column_set_offset = 0;
        std::size_t count = 0;
        wire::RecordKind kind = wire::RecordKind::ecdsa;
        std::size_t tail_size = 0;
        wire::SigEncoding encoding = wire::SigEncoding::opaque;
        wire::Mode mode = wire::Mode::results;
        BatchResult result;
        // The caller cancelled this batch: never verified by the local
        // fallback, and a failure of it reads as cancelled.
        bool cancel_requested = false;
        CancelState cancel_state = CancelState::none;
        Status cancel_answer = Status::ok;
    };

    explicit Impl(const ClientOptions& options);
    ~Impl() { conn.close(); }

    // Fork safety (client.cpp). The process this session belongs to: in a
    // forked child its ring, arena, doorbell, socket, mutex and fallback
    // threads are the parent's (the mapping is shared), so the child never
    // touches them, not even to unmap or close. child_session() is this
    // client's session in the calling process: made on first use there,
    // with the same options (its own connection, its own local fallback).
    const pid_t pid = ::getpid();
    std::atomic<Impl*> forked{nullptr};
    Impl& child_session();

    ClientOptions opt;
    detail::LocalFallback local;

    mutable std::mutex mu;
    detail::Connection conn;
    bool live = false;          // conn usable (daemon alive as far as we know)
    std::string last_error;

    std::vector<Slot> slots;
    std::vector<std::uint32_t> free_slots;
    std::vector<std::uint32_t> order;  // allocation order (ring of slots.size())
    std::size_t order_head = 0, order_count = 0;
    std::uint64_t arena_head = 0, arena_tail = 0;  // virtual positions
    std::uint32_t in_use = 0;
    std::uint32_t sleepers = 0;        // threads sleeping on the mapping without the lock
    std::uint32_t next_generation = 1;
    Clock::time_point last_reconnect{};
    bool connecting = false;           // a thread is connecting without the lock

    // --- session (client.cpp) ------------------------------------------------
    Status connect_locked();
    // Reconnects a dead session when due, with the mutex dropped across the
    // connect and handshake (lk is relocked before it returns).
    void maybe_reconnect_locked(std::unique_lock<std::mutex>& lk);
    void install_locked(detail::Connection& c);  // makes c the live session
    void mark_dead_locked(const std::string& why);
    bool alive_locked();

    // --- ring (ring.cpp) -----------------------------------------------------
    void setup_slots();
    void reap_locked();
    std::uint32_t bell_seq() const;
    void sleep_locked(std::unique_lock<std::mutex>& lk, std::uint32_t seq, Clock::time_point deadline);
    // The end of a wait that starts now: batch_timeout from now (none when
    // 0), and never past the calling thread's detail::call_deadline().
    Clock::time_point wait_deadline() const {
        return detail::within_call(opt.batch_timeout.count() > 0 ? Clock::now() + opt.batch_timeout
                                                                 : Clock::time_point::max());
    }
    void free_slot_locked(std::uint32_t index);
    bool try_alloc_locked(std::uint64_t bytes, std::uint32_t& index);
    Status alloc_waiting_locked(std::unique_lock<std::mutex>& lk, std::uint64_t bytes, bool wait,
                                std::uint32_t& index);
    std::uint64_t max_alloc_rows(wire::RecordKind kind, std::size_t tail_size) const;
    std::uint64_t max_alloc_column_rows(wire::RecordKind kind, std::size_t tail_size) const;
    Status reserve(wire::RecordKind kind, std::size_t tail_size, std::size_t count, RowBatch& b, bool wait);
    Status reserve_columns(wire::RecordKind kind, std::size_t tail_size, std::size_t count, ColumnBatch& b,
                           bool wait);
    Slot* slot_of(detail::SlotRef b);
    // Submits a reserved batch; sets *encoding_out to the encoding sent (opaque
    // for Schnorr) once the batch is known. A failed submission marks the
    // slot done with its status, for wait to report.
    Status submit(detail::SlotRef b, shm::Opcode opcode, wire::Mode mode, wire::SigEncoding enc, std::uint8_t table,
                  wire::SigEncoding* encoding_out);
    // Waits until the submission ring has a free entry (ok), or the daemon is gone (disconnected).
    Status wait_sq_space_locked(std::unique_lock<std::mutex>& lk);
    // No fallback. With a stop token: returns Status::pending (even when
    // blocking) as soon as a stop is requested, unless this batch's cancel
    // was already requested (then it waits for the completion).
    BatchResult wait_raw(detail::SlotRef b, bool block, const detail::CancelCheck* stop = nullptr);
    // Cancels a submitted batch (Opcode::cancel) and waits for the daemon's
    // answer: ok (cancelled), not_found (it had completed), or a failure.
    Status cancel(detail::SlotRef b);
    BatchResult wait(detail::SlotRef b, bool block);      // with the local fallback, in place in the arena
    void release(detail::SlotRef b);

    // --- registered buffers (registered.cpp) -----------------------------------
    // Counts sessions: a registration's daemon id is valid only in the
    // session it was made in (connect_locked bumps it).
    std::uint64_t session_serial = 0;
    Status register_locked(RegisteredBuffer::State& b);
    void unregister_locked(RegisteredBuffer::State& b);
    // One control-socket request and its reply (RegisterReply with `magic`).
    Status control_round_trip_locked(const void* request, std::size_t size, int pass_fd, std::uint32_t magic,
                                     shm::RegisterReply& reply);
    // The same for any reply of reply_size bytes (`what` names the request in
    // the error when it times out).
    Status control_exchange_locked(const void* request, std::size_t size, int pass_fd, std::uint32_t magic,
                                   void* reply, std::size_t reply_size, const char* what);
    Status reserve_registered(const detail::RegisteredSource& src, std::size_t begin, std::size_t count, ColumnBatch& batch,
                              bool wait);
    // run_registered's steps (registered.cpp).
    Status prepare_registered(const detail::RegisteredSource& src, std::size_t& chunk);
    BatchResult verify_registered_locally(const detail::RegisteredSource& src, wire::SigEncoding enc,
                                          std::uint8_t* results, const detail::CancelCheck& stop);
    BatchResult run_registered(const detail::RegisteredSource& src, std::uint8_t* results, std::uint8_t table,
                               const detail::CancelCheck& stop);

    // --- copy API (copy_api.cpp) ---------------------------------------------
    BatchResult run(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results, std::uint8_t table,
                    const detail::CancelCheck& stop);
    BatchResult run_columns(const Columns& cols, wire::Mode mode, std::uint8_t* results, std::uint8_t table,
                            const detail::CancelCheck& stop);
    template <class PieceBatch, class Fill, class CopyBack, class Local, class FallsBack>
    BatchResult pipeline(std::size_t n, std::size_t chunk, wire::Mode mode, wire::SigEncoding enc, std::uint8_t table,
                         const detail::CancelCheck& stop, Fill&& fill, CopyBack&& copy_back, Local&& local_run,
                         FallsBack&& falls_back);
};

// The state of one registration (client.hpp's RegisteredBuffer).
struct __attribute__((visibility("hidden"))) RegisteredBuffer::State {
    Client::Impl* impl = nullptr;
    int fd = -1;                        // our own descriptor: re-registers after a reconnect
    std::uint64_t offset = 0, size = 0;
    void* map = nullptr;                // our read-only mapping (the local fallback reads it)
    std::size_t map_length = 0;
    const std::uint8_t* data = nullptr;
    std::uint64_t daemon_id = 0;        // the daemon's id in session `serial` (0: none)
    std::uint64_t serial = 0;
};

}  // namespace sigverify
