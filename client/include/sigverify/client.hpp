// SPDX-License-Identifier: MIT
// libsigverify: the C++ client of sigverifyd.
//
// A Client holds one session with the daemon: a control socket and one shared
// segment (rings + arena). Rows are copied into the arena (or written there in
// place through the zero-copy API), verified by the daemon, and the verdicts
// (results mode) or zeroed tails (collect mode) come back through the arena.
//
// Thread-safety: every member function may be called from several threads at
// once. Batches of different threads are in flight concurrently (up to the ring
// size); the library serializes only its short ring/arena bookkeeping. A
// zero-copy RowBatch or ColumnBatch belongs to the thread that reserved it
// until it is released.
//
// Allocation: connect() allocates everything a session needs; verifying,
// collecting, reserving, submitting and waiting allocate nothing.
//
// Failure: when the daemon cannot be reached at connect, or dies, shuts down
// or cancels work mid-batch, a client with Fallback::local verifies the
// affected rows in-process with the reference verifier (same verdicts); a
// client without fallback returns Status::unreachable / disconnected /
// shutting_down / cancelled. A dead daemon is detected within
// ClientOptions::liveness_interval (socket hang-up and futex timeouts), so no
// call blocks longer than that after the daemon dies. Completions carry the
// daemon epoch; one from another epoch is never applied (Status::stale_epoch).
// After a daemon death the client reconnects by itself on a later call once no
// batch of the old session is outstanding.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

// Installed as include/sigverify/shm_protocol/ (in the build tree the same
// path leads to the source's shm_protocol/), so -I<includedir> is all a
// consumer needs.
#include "sigverify/export.h"
#include "sigverify/sigverify.h"  // sigverify_version(), which library_version() wraps
#include "sigverify/version.h"    // generated: SIGVERIFY_VERSION_MAJOR, ..._AT_LEAST(...)
#include "sigverify/shm_protocol/segment_access.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify {

using shm::Status;

// The version of the library the program runs with, as
// SIGVERIFY_VERSION_ENCODE(major, minor, patch) and as text; the headers'
// own version is SIGVERIFY_VERSION_NUMBER (sigverify/version.h). Since 0.2.0.
inline std::uint32_t library_version() noexcept { return ::sigverify_version(); }
inline const char* library_version_string() noexcept { return ::sigverify_version_string(); }

enum class Fallback : std::uint8_t { none = 0, local = 1 };

struct ClientOptions {
    std::string runtime_dir;          // empty: $SIGVERIFY_RUNTIME_DIR, else /run/sigverifyd
    std::string name;                 // shown in daemon logs; empty: "pid-<pid>"
    std::uint64_t arena_size = 0;     // requested arena bytes; 0 = daemon default (daemon bounds it)
    std::uint32_t ring_entries = 0;   // requested ring entries; 0 = daemon default
    Fallback fallback = Fallback::none;
    unsigned local_threads = 0;       // threads of the local fallback verifier (0 = all cores)
    std::chrono::milliseconds connect_timeout{2000};   // handshake bound
    std::chrono::milliseconds liveness_interval{20};   // longest sleep between daemon liveness checks
    std::chrono::milliseconds batch_timeout{0};        // 0 = wait as long as the daemon lives
    bool reconnect = true;            // reconnect after a daemon death (rate-limited)
    // Every invalid verdict confirmed by libsecp256k1, also the multisig
    // attempts that decide no group (exact row verdicts). Off: a GPU daemon
    // confirms the invalid verdicts of failing multisig groups and a sample of
    // the others, which gives the same group and block verdicts (docs/security.md).
    bool strict_confirm = false;
    std::uint32_t protocol_version = shm::kProtocolVersion;  // tests of version mismatch only
};

// Outcome of one call. [[nodiscard]]: a call whose result is dropped warns
// (a refused or failed batch must not read as done).
struct [[nodiscard]] BatchResult {
    Status status = Status::ok;
    std::uint64_t valid = 0;
    std::uint64_t invalid = 0;
    std::uint64_t local_rows = 0;     // rows verified in-process by the fallback
    [[nodiscard]] bool ok() const { return status == Status::ok; }
};

// Exported (typeinfo and vtable): a consumer catches what libsigverify.so throws.
class SIGVERIFY_API Error : public std::runtime_error {
public:
    Error(Status status, const std::string& what) : std::runtime_error(what), status_(status) {}
    Status status() const { return status_; }

private:
    Status status_;
};

// A zero-copy row batch (reserve): rows and result bytes inside the shared
// arena. Write count rows of stride wire::stride(kind, tail_size) at rows,
// submit, wait; the verdicts (results mode) or the rows with valid tails
// zeroed (collect mode) are then in place.
struct RowBatch {
    std::uint8_t* rows = nullptr;     // count * stride bytes: write the rows here
    std::uint8_t* results = nullptr;  // count bytes, verdicts after wait() (results mode)
    std::size_t count = 0;
    wire::RecordKind kind = wire::RecordKind::ecdsa;
    std::size_t tail_size = 0;        // bytes after each row's fixed record (0..255)
    wire::SigEncoding encoding = wire::SigEncoding::opaque;  // set by submit()
    std::uint32_t slot = 0;           // internal
    std::uint32_t generation = 0;     // internal (0 = not reserved)

    wire::RowSpan span() const { return wire::RowSpan{kind, tail_size, encoding, rows, count}; }
};

// A zero-copy column batch (reserve_columns): the columns and result bytes
// inside the shared arena, each 64-byte aligned. Write count entries into
// each column, submit, wait; the verdicts (results mode) or the correlate
// column with valid rows' entries zeroed (collect mode) are then in place.
struct ColumnBatch {
    std::uint8_t* message = nullptr;    // count * 32
    std::uint8_t* key = nullptr;        // count * 33 (ECDSA, compressed) / 32 (Schnorr, x-only)
    std::uint8_t* signature = nullptr;  // count * 64
    std::uint8_t* correlate = nullptr;  // count * tail_size (null when tail_size is 0)
    std::uint8_t* results = nullptr;    // count bytes, verdicts after wait() (results mode)
    std::size_t count = 0;
    wire::RecordKind kind = wire::RecordKind::ecdsa;
    std::size_t tail_size = 0;          // correlate bytes per row (0..255)
    wire::SigEncoding encoding = wire::SigEncoding::opaque;  // set by submit()
    std::uint32_t slot = 0;             // internal
    std::uint32_t generation = 0;       // internal (0 = not reserved)
};

// A batch given as column tables (libbitcoin's layout since mid-2026) in
// caller memory is a sigverify::Columns, also named wire::ColumnSpan: the one
// column view of the library, the daemon and the reference verifier, defined
// beside the row view in sigverify/shm_protocol/wire_format.hpp with what each
// column holds. Row i is verified as message[i] || key[i] || signature[i]: the
// same verdicts as the row path on the same data. See docs/columns.md.

// Registered buffers (docs/client.md, "Registered buffers"): memory the
// caller already has (a memfd, or the file of a mapped table) registered with
// the daemon, which reads it with pread (never maps it); column batches inside it are then
// verified without the library copying a byte of them (only the verdicts,
// one byte per row, come back through the arena).
//
// A RegisteredBuffer is the handle of one registration: moving it moves the
// registration, destroying it (or reset()) unregisters it. It must not
// outlive the Client that made it. It keeps its own descriptor of the file
// and its own read-only mapping of the range (data()), which the local
// fallback verifies from, and which re-registers the buffer by itself with
// the next daemon after a reconnect.
class SIGVERIFY_API RegisteredBuffer {
public:
    RegisteredBuffer() noexcept;
    ~RegisteredBuffer();
    RegisteredBuffer(RegisteredBuffer&& other) noexcept;
    RegisteredBuffer& operator=(RegisteredBuffer&& other) noexcept;
    RegisteredBuffer(const RegisteredBuffer&) = delete;
    RegisteredBuffer& operator=(const RegisteredBuffer&) = delete;

    // True while it holds a registration.
    bool registered() const noexcept;
    // The registered range in this process (read-only), and its size.
    const std::uint8_t* data() const noexcept;
    std::uint64_t size() const noexcept;
    // The daemon's id of the buffer in the current session (0: verified
    // locally only: no daemon, or one older than ABI 1.4, with Fallback::local).
    std::uint64_t id() const noexcept;
    // Unregisters now (no-op when not registered).
    void reset() noexcept;

    struct State;  // internal

private:
    friend class Client;
    State* state_ = nullptr;
};

// Column tables inside a registered buffer: each column starts at an offset
// from the start of the registered range (message[count][32],
// key[count][33] ECDSA compressed or [count][32] Schnorr x-only,
// signature[count][64]), exactly as Columns describes them in memory.
struct RegisteredColumns {
    wire::RecordKind kind = wire::RecordKind::ecdsa;
    wire::SigEncoding encoding = wire::SigEncoding::opaque;  // ignored for Schnorr
    std::size_t count = 0;
    std::uint64_t message_offset = 0;
    std::uint64_t key_offset = 0;
    std::uint64_t signature_offset = 0;
};

// Column tables with each column in a registered buffer of its own (ring ABI
// 1.6): a libbitcoin-like store keeps one file per column. Each offset is
// from the start of its buffer's registered range; the three may be one
// buffer too. The buffers must be registered by the same Client.
struct RegisteredColumnBuffers {
    wire::RecordKind kind = wire::RecordKind::ecdsa;
    wire::SigEncoding encoding = wire::SigEncoding::opaque;  // ignored for Schnorr
    std::size_t count = 0;
    const RegisteredBuffer* message = nullptr;  // message[count][32]
    std::uint64_t message_offset = 0;
    const RegisteredBuffer* key = nullptr;      // key[count][33] ECDSA / [count][32] Schnorr
    std::uint64_t key_offset = 0;
    const RegisteredBuffer* signature = nullptr;  // signature[count][64]
    std::uint64_t signature_offset = 0;
};

// What a daemon is (Client::info, ring ABI 1.5): its versions, what it
// verifies on, each GPU and its state now, the confirmation rule, its limits.
struct GpuInfo {
    unsigned index = 0;            // CUDA device index
    std::string name;              // model name
    bool enabled = false;          // verifying now (self-test passed, never switched off)
    std::string self_test;         // "passed", "failed: ...", "passed; switched off: ..."
    std::uint64_t memory_bytes = 0;
};
struct DaemonInfo {
    std::string version;           // daemon release
    unsigned protocol_version = 0; // handshake version
    unsigned abi_major = 0, abi_minor = 0;  // ring ABI
    std::uint64_t epoch = 0;
    std::string backend;           // "cpu", "gpu", "host-kernel" (the GPU path on the CPU), "lanes-ifma8" / "lanes-scalar" (the CPU lanes and their width)
    std::string confirm_rule;      // "strict" or "groups" (docs/security.md)
    unsigned cpu_workers = 0;      // CPU verifier threads (a GPU daemon's fallback)
    unsigned gpu_count = 0;        // GPUs found (gpus lists the first 8)
    unsigned gpus_enabled = 0;     // of them, verifying now
    std::vector<GpuInfo> gpus;
    std::uint64_t max_arena_size = 0;        // per client
    std::uint64_t max_registered_bytes = 0;  // per client
    unsigned max_registered_buffers = 0;
    unsigned max_ring_entries = 0;
    unsigned max_clients = 0;
};

class SIGVERIFY_API Client {
public:
    // Connects (handshake, segment mapping). Throws Error on failure, unless
    // options.fallback == Fallback::local: then it returns a client that
    // verifies locally (connected() == false) and retries the daemon later.
    [[nodiscard]] static std::unique_ptr<Client> connect(const ClientOptions& options = {});
    // Non-throwing form: nullptr on failure with status/message filled.
    [[nodiscard]] static std::unique_ptr<Client> connect(const ClientOptions& options, Status& status,
                                           std::string& message) noexcept;
    ~Client();
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;

    // --- copy API (batches of any size; split over the arena transparently) --
    // results must hold n bytes; they are zeroed first (fail closed). Every
    // verify call (rows, columns, registered) also takes results == nullptr:
    // then only the counts come back (BatchResult::valid / invalid), and
    // "all valid" is ok() && invalid == 0 && valid == n. Such a call writes no
    // verdict byte anywhere in the caller's memory; a piece the local fallback
    // verifies uses a scratch of at most 32768 bytes made for that call.
    BatchResult verify_ecdsa(const std::uint8_t* rows, std::size_t n, std::size_t tail_size,
                             std::uint8_t* results, wire::SigEncoding encoding = wire::SigEncoding::opaque);
    BatchResult verify_schnorr(const std::uint8_t* rows, std::size_t n, std::size_t tail_size,
                               std::uint8_t* results);
    BatchResult verify_ecdsa(std::span<const wire::EcdsaRow> rows, std::span<std::uint8_t> results,
                             wire::SigEncoding encoding = wire::SigEncoding::opaque);
    BatchResult verify_multisig(std::span<const wire::MultisigRow> rows, std::span<std::uint8_t> results,
                                wire::SigEncoding encoding = wire::SigEncoding::opaque);
    BatchResult verify_schnorr(std::span<const wire::SchnorrRow> rows, std::span<std::uint8_t> results);
    BatchResult verify_threshold(std::span<const wire::ThresholdRow> rows, std::span<std::uint8_t> results);
    // Collect: zeroes the tail (tail_size bytes) of every valid row in place.
    BatchResult collect_ecdsa(std::uint8_t* rows, std::size_t n, std::size_t tail_size,
                              wire::SigEncoding encoding = wire::SigEncoding::opaque);
    BatchResult collect_schnorr(std::uint8_t* rows, std::size_t n, std::size_t tail_size);
    BatchResult collect_ecdsa(std::span<wire::EcdsaRow> rows, wire::SigEncoding encoding = wire::SigEncoding::opaque);
    BatchResult collect_multisig(std::span<wire::MultisigRow> rows,
                                 wire::SigEncoding encoding = wire::SigEncoding::opaque);
    BatchResult collect_schnorr(std::span<wire::SchnorrRow> rows);
    BatchResult collect_threshold(std::span<wire::ThresholdRow> rows);
    // Generic form; table is a statistics label (shm::kTableUnspecified or a wire::Table).
    BatchResult run(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results,
                    std::uint8_t table = shm::kTableUnspecified);
    // Cancellable form (libbitcoin's batch hook takes a cancel token): once
    // stop is requested, no more of the batch is sent, the parts in flight are
    // cancelled in the daemon (their running chunks finish), and the call
    // returns Status::cancelled soon after, with the counts of the rows that
    // were verified. Every row is then either verified (its verdict byte /
    // its tail zeroed when valid) or untouched (verdict 0, tail unchanged):
    // never half-written. Needs a daemon of ABI 1.3 for a prompt return (an
    // older one finishes the pieces in flight first).
    BatchResult run(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results, std::uint8_t table,
                    std::stop_token stop);
    // The same with a flag the caller already has (libbitcoin's stopper, a
    // std::atomic_bool): the call stops as with a stop token once *cancel
    // reads true, polled between pieces and while waiting. Null: never stops.
    [[nodiscard]] BatchResult run(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results,
                                  std::uint8_t table, const std::atomic<bool>* cancel);

    // --- column API (copy; batches of any size, split over the arena) --------
    // Same contract as the row calls: results (n bytes) zeroed first, 1 =
    // valid; collect zeroes the correlate entry (tail_size bytes) of every
    // valid row in place and leaves invalid rows' entries untouched. The
    // message, key and signature columns are never written. Needs a daemon of
    // ABI 1.1 or later (an older one: Status::bad_entry, or the local fallback).
    BatchResult verify_ecdsa_columns(const std::uint8_t* message, const std::uint8_t* key,
                                     const std::uint8_t* signature, std::size_t n, std::uint8_t* results,
                                     wire::SigEncoding encoding = wire::SigEncoding::opaque);
    BatchResult verify_schnorr_columns(const std::uint8_t* message, const std::uint8_t* key,
                                       const std::uint8_t* signature, std::size_t n, std::uint8_t* results);
    BatchResult collect_ecdsa_columns(const std::uint8_t* message, const std::uint8_t* key,
                                      const std::uint8_t* signature, std::uint8_t* correlate, std::size_t n,
                                      std::size_t tail_size, wire::SigEncoding encoding = wire::SigEncoding::opaque);
    BatchResult collect_schnorr_columns(const std::uint8_t* message, const std::uint8_t* key,
                                        const std::uint8_t* signature, std::uint8_t* correlate, std::size_t n,
                                        std::size_t tail_size);
    // Generic form (results mode ignores columns.correlate).
    BatchResult run_columns(const Columns& columns, wire::Mode mode, std::uint8_t* results,
                            std::uint8_t table = shm::kTableUnspecified);
    // Cancellable form: as run() with a stop token (correlate entries are
    // either zeroed for a verified valid row or unchanged).
    BatchResult run_columns(const Columns& columns, wire::Mode mode, std::uint8_t* results, std::uint8_t table,
                            std::stop_token stop);
    // Cancellable by a caller's flag (as run() with one).
    [[nodiscard]] BatchResult run_columns(const Columns& columns, wire::Mode mode, std::uint8_t* results,
                                          std::uint8_t table, const std::atomic<bool>* cancel);

    // --- registered buffers (ring ABI 1.4) ----------------------------------
    // Registers [offset, offset + size) of fd (a memfd or a regular file open
    // for reading; the caller keeps its descriptor) with the daemon. Statuses:
    // ok; invalid_argument (size 0, a range past the end of the file, not a
    // regular file, not readable); too_large (the daemon's per-client limits
    // --max-registered-bytes / --max-registered-buffers, or a range this
    // process cannot map); bad_entry (a daemon older than ABI 1.4, without
    // Fallback::local); unreachable / disconnected (no daemon, without
    // Fallback::local). With Fallback::local a buffer is registered locally
    // when the daemon cannot take it (id() == 0) and verified in-process.
    [[nodiscard]] Status register_buffer(int fd, std::uint64_t offset, std::uint64_t size, RegisteredBuffer& buffer);
    // Throwing form (Error with the status above).
    [[nodiscard]] RegisteredBuffer register_buffer(int fd, std::uint64_t offset, std::uint64_t size);
    // Verifies count rows whose columns lie inside the registered buffer
    // (results mode: results gets count bytes, zeroed first, 1 = valid). The
    // columns are never copied by the library. invalid_argument (before
    // anything is sent) when a column passes the end of the buffer, two
    // columns overlap in it, or the buffer is not registered by this client; buffer_lost when the file shrank under the daemon (the
    // registration is dropped; also when the file is found shorter than its
    // registered range before the call or, with Fallback::local, while the
    // library reads it); with Fallback::local a batch the daemon fails is
    // verified in-process from copies of the file read with pread (never
    // past its current end: rows cut off answer 0 and buffer_lost).
    BatchResult verify_registered_columns(const RegisteredBuffer& buffer, const RegisteredColumns& columns,
                                          std::uint8_t* results, std::uint8_t table = shm::kTableUnspecified);
    // Cancellable form (as run() with a stop token).
    BatchResult verify_registered_columns(const RegisteredBuffer& buffer, const RegisteredColumns& columns,
                                          std::uint8_t* results, std::uint8_t table, std::stop_token stop);
    // Cancellable by a caller's flag (as run() with one).
    [[nodiscard]] BatchResult verify_registered_columns(const RegisteredBuffer& buffer,
                                                        const RegisteredColumns& columns, std::uint8_t* results,
                                                        std::uint8_t table, const std::atomic<bool>* cancel);
    // Each column in a buffer of its own (RegisteredColumnBuffers; a daemon
    // of ring ABI 1.6 or later when they differ: an older one answers
    // bad_entry, or with Fallback::local the rows are verified in-process).
    // Otherwise as above; invalid_argument when a buffer is missing or not
    // this Client's, or a column passes the end of its buffer.
    [[nodiscard]] BatchResult verify_registered_columns(const RegisteredColumnBuffers& columns, std::uint8_t* results,
                                                        std::uint8_t table = shm::kTableUnspecified,
                                                        const std::atomic<bool>* cancel = nullptr);
    // Cancellable form (as run() with a stop token).
    [[nodiscard]] BatchResult verify_registered_columns(const RegisteredColumnBuffers& columns, std::uint8_t* results,
                                                        std::uint8_t table, std::stop_token stop);

    // --- zero-copy API ------------------------------------------------------
    // Reserves count rows (and count result bytes) in the arena. Waits for
    // space when wait is true (at most batch_timeout when one is set, then
    // returns timeout), else returns ring_full. too_large when the
    // batch can never fit (see max_batch_rows); unreachable/disconnected when
    // there is no daemon session.
    [[nodiscard]] Status reserve(wire::RecordKind kind, std::size_t tail_size, std::size_t count, RowBatch& batch,
                   bool wait = true);
    // Reserves a column batch of count rows: the message, key, signature and,
    // when tail_size > 0, correlate columns, plus count result bytes. Write
    // the columns in place, then submit/wait/release as for rows. Same
    // statuses as reserve(), and bad_entry when the daemon is older than ABI 1.1.
    [[nodiscard]] Status reserve_columns(wire::RecordKind kind, std::size_t tail_size, std::size_t count, ColumnBatch& batch,
                           bool wait = true);
    [[nodiscard]] Status submit(RowBatch& batch, wire::Mode mode, wire::SigEncoding encoding = wire::SigEncoding::opaque,
                  std::uint8_t table = shm::kTableUnspecified);
    [[nodiscard]] Status submit(ColumnBatch& batch, wire::Mode mode, wire::SigEncoding encoding = wire::SigEncoding::opaque,
                  std::uint8_t table = shm::kTableUnspecified);
    // Blocks until the batch completes (or the daemon is gone / batch_timeout).
    // With Fallback::local a failed batch is verified in place, locally.
    BatchResult wait(RowBatch& batch);
    BatchResult wait(ColumnBatch& batch);
    // Non-blocking: status pending while the batch is in flight.
    BatchResult poll(RowBatch& batch);
    BatchResult poll(ColumnBatch& batch);
    // Cancels a submitted batch and waits for the daemon's answer (one round
    // trip, not the batch): the rows no daemon worker has taken yet are
    // dropped; chunks already running finish and publish all their verdicts,
    // so in collect mode each row is either untouched or fully collected, and
    // in results mode an unverified row reads 0. wait()/poll() then report
    // Status::cancelled (with the counts of the verified rows), and the local
    // fallback never verifies a cancelled batch. Returns ok when the daemon
    // cancelled it, not_found when the batch had completed already (wait()
    // returns its result), invalid_argument when the batch is not submitted,
    // bad_entry when the daemon is older than ABI 1.3, disconnected when there
    // is no daemon (wait() reports cancelled).
    [[nodiscard]] Status cancel(RowBatch& batch);
    [[nodiscard]] Status cancel(ColumnBatch& batch);
    // Frees the arena space of a reserved/completed batch. A batch still in
    // flight is abandoned: its space is freed when its completion arrives.
    void release(RowBatch& batch);
    void release(ColumnBatch& batch);
    // Largest batch reserve() can ever satisfy.
    std::size_t max_batch_rows(wire::RecordKind kind, std::size_t tail_size) const;
    // Largest batch reserve_columns() can ever satisfy.
    std::size_t max_column_batch_rows(wire::RecordKind kind, std::size_t tail_size) const;

    // --- session ---------------------------------------------------------------
    // Asks the daemon what it is (one control-socket round trip; allocates).
    // ok; bad_entry: a daemon older than ABI 1.5 (it cannot answer);
    // unreachable / disconnected: no daemon session now (also with
    // Fallback::local: info describes a daemon, never the local fallback);
    // timeout: no answer within 2 s (the session is given up, as for a
    // registration); busy: this session asked more often than the daemon's
    // rate limit of info requests allows (docs/protocol.md; the session goes on).
    [[nodiscard]] Status info(DaemonInfo& out);
    // Round trip of a no-op submission through the rings; rtt_ns is optional.
    [[nodiscard]] Status ping(std::uint64_t* rtt_ns = nullptr);
    bool connected() const;
    std::uint64_t epoch() const;             // daemon epoch of the current session (0: none)
    std::uint64_t arena_size() const;
    std::string last_error() const;          // text of the last connection-level failure

private:
    struct Impl;
    friend class RegisteredBuffer;
    explicit Client(std::unique_ptr<Impl> impl);
    // The session of the calling process: impl_ itself, or in a forked child
    // a session of the child's own (impl_'s ring, arena and socket are the
    // parent's and are never touched there; docs/client.md).
    Impl& session() const;
    std::unique_ptr<Impl> impl_;
};

}  // namespace sigverify
