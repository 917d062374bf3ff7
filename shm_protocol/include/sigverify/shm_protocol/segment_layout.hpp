// SPDX-License-Identifier: MIT
// sigverify ring ABI: the layout of one client's shared segment, the ring
// entries, the status codes and the control-socket handshake, in one header
// (liburing style: layout and constants only, no logic). What both sides
// compute over this layout (the segment layout, header checks, atomic access,
// status texts) is in segment_access.hpp; the daemon's checks of hostile
// submissions are in daemon/memory/submission_checks.hpp.
//
// A segment is created by the daemon for exactly one client session and handed
// to that client as a file descriptor (SCM_RIGHTS); its name is unlinked before
// the descriptor is sent, so nothing ever stays in /dev/shm.
//
//   offset 0             SegmentHeader (one 4 KiB page): identity, sizes,
//                        offsets, ring indices and doorbells, each on its own
//                        64-byte cache line
//   sq_entries_offset    SubmissionEntry[sq_entries]   client -> daemon
//   cq_entries_offset    CompletionEntry[cq_entries]   daemon -> client
//   arena_offset         arena_size bytes (page aligned): rows written by the
//                        client in place, result bytes written by the daemon
//
// Ownership of the words (who stores, who only loads):
//   sq.tail, cq.head, daemon_bell.seq         client stores, daemon loads
//   sq.head, cq.tail, client_bell.seq, state  daemon stores, client loads
//   *_bell.waiters                            the waiting side stores
// Every index the daemon loads is hostile: it is bounded against the ring size
// and masked before use; the daemon keeps its own private copy of the indices
// it owns and never reads them back from shared memory.
//
// Every shared field is a fixed-width integer, accessed through std::atomic_ref
// (lock-free, address-free, so valid across processes). All structs are
// standard-layout and trivially copyable; every size and offset is pinned by
// static_assert so no compiler flag can move a byte.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "wire_format.hpp"  // sibling: the same in-tree and installed

namespace sigverify::shm {

// ---------------------------------------------------------------------------
// Versions and constants
// ---------------------------------------------------------------------------
constexpr std::uint32_t kSegmentMagic = 0x47535653;  // "SVSG" little-endian
constexpr std::uint16_t kAbiMajor = 1;                // incompatible layout change
constexpr std::uint16_t kAbiMinor = 6;                // compatible addition (1: Opcode::verify_columns,
                                                      // 2: kSubmitStrictConfirm, 3: Opcode::cancel,
                                                      // 4: registered buffers, 5: the info request,
                                                      // shm_protocol/info_message.hpp, 6: a registered
                                                      // buffer per column)
constexpr std::uint32_t kProtocolVersion = 1;         // handshake version

constexpr std::size_t kCacheLine = 64;
constexpr std::size_t kPageSize = 4096;
constexpr std::size_t kHeaderSize = kPageSize;
constexpr std::size_t kArenaAlign = 64;  // rows and results regions start on a cache line

constexpr std::uint32_t kMinRingEntries = 2;
constexpr std::uint32_t kMaxRingEntries = 4096;
constexpr std::uint64_t kMinArenaSize = 64 * 1024;
constexpr std::uint64_t kMaxArenaSize = std::uint64_t(16) << 30;  // 16 GiB hard ceiling

// Values of SegmentHeader::state.
enum class SegmentState : std::uint32_t {
    initializing = 0,  // fields not valid yet
    ready = 1,         // every field written; published last, with release
    closing = 2,       // daemon is shutting down: no new submissions accepted
    closed = 3,        // daemon dropped this session
};

// ---------------------------------------------------------------------------
// Status codes (completions, handshake replies, client API; the C ABI in
// client/include/sigverify/sigverify.h uses the same numbers)
// ---------------------------------------------------------------------------
enum class Status : std::uint32_t {
    ok = 0,
    invalid_argument = 1,   // caller passed bad arguments (client side)
    bad_entry = 2,          // submission with an unknown opcode/enum, or reserved bits set
    bad_range = 3,          // submission offsets/lengths outside the arena, or overflow
    protocol_version = 4,   // handshake protocol version mismatch
    permission_denied = 5,  // peer uid/gid not allowed to connect
    busy = 6,               // daemon at --max-clients
    shutting_down = 7,      // daemon is stopping; the submission was not run
    cancelled = 8,          // in-flight work dropped (shutdown deadline, session end)
    backend_error = 9,      // the verification backend failed on this batch
    unreachable = 10,       // no daemon at the socket (client side)
    disconnected = 11,      // daemon went away while work was in flight (client side)
    timeout = 12,           // a bounded wait ran out (client side)
    ring_full = 13,         // no free submission slot / arena space (try_ variants)
    stale_epoch = 14,       // completion from another daemon epoch: discarded
    too_large = 15,         // a reservation larger than the arena, or a registration over a limit
    handshake = 16,         // malformed or unexpected handshake message
    bad_segment = 17,       // segment header failed validation (magic, ABI, sizes)
    system_error = 18,      // an OS call failed (details in the error text)
    pending = 19,           // poll(): the batch has not completed yet
    not_found = 20,         // Opcode::cancel named no batch in flight (unknown, or already completed);
                            // verify_registered_columns named no registered buffer of this session
    buffer_lost = 21,       // a registered buffer shrank under the daemon (a short read): the batch's
                            // verdicts cannot be trusted and the registration is dropped
};
constexpr std::uint32_t kStatusCount = 22;

// ---------------------------------------------------------------------------
// Ring entries
// ---------------------------------------------------------------------------
enum class Opcode : std::uint8_t {
    invalid = 0,  // never valid: a zeroed slot is not a request
    verify = 1,   // verify row_count rows (mode results or collect)
    nop = 2,      // completes immediately with ok and zero counts (ping, latency)
    verify_columns = 3,  // ABI 1.1: verify row_count rows given as column tables
    cancel = 4,          // ABI 1.3: cancel the batch in flight whose user_tag is rows_offset
    verify_registered_columns = 5,  // ABI 1.4: column tables inside a registered buffer
    verify_registered_column_set = 6,  // ABI 1.6: each column in a registered buffer of its own
};

// The first ABI minor version whose daemon accepts Opcode::verify_columns; an
// older daemon answers such an entry with bad_entry, so clients check
// SegmentHeader::abi_minor before submitting one.
constexpr std::uint16_t kAbiMinorColumns = 1;

// Optional table label of a submission, 0xFF = unspecified. The daemon counts
// by it, and a multisig label lets a GPU daemon confirm only the invalid
// verdicts that decide a group (docs/security.md): a client that mislabels
// its rows changes only how its own verdicts are checked.
constexpr std::uint8_t kTableUnspecified = 0xFF;

// SubmissionEntry::flags bits (ABI 1.2; an older daemon refuses any flag
// with bad_entry, so clients check SegmentHeader::abi_minor first).
// kSubmitStrictConfirm: every INVALID verdict of this batch is confirmed by
// libsecp256k1, also the multisig attempts that decide nothing (exact row
// verdicts; slower on a GPU daemon, no effect on the CPU backend).
constexpr std::uint16_t kSubmitStrictConfirm = 1u << 0;
constexpr std::uint16_t kSubmitKnownFlags = kSubmitStrictConfirm;
constexpr std::uint16_t kAbiMinorStrictConfirm = 2;

// Opcode::cancel (ABI 1.3; an older daemon answers it with bad_entry): the
// entry's rows_offset holds the user_tag of an earlier submission of this
// session, every other field but user_tag is 0. The daemon drops the rows of
// that batch no worker has taken yet; chunks already running finish and
// publish all their verdicts (a chunk publishes all or none, so in collect
// mode every row is either untouched or fully collected). The cancelled
// batch then completes with Status::cancelled and the counts of the rows that
// were verified. The cancel entry itself completes with ok when it found the
// batch, with not_found when no batch in flight has that tag (never
// submitted, or its completion is already posted).
constexpr std::uint16_t kAbiMinorCancel = 3;

// Registered buffers (ABI 1.4; an older daemon answers the control messages
// below by ignoring them and Opcode::verify_registered_columns with
// bad_entry, so clients check SegmentHeader::abi_minor first). A client
// registers memory it already has (a memfd, or a file it maps) over the
// control socket (RegisterRequest + the descriptor); the daemon keeps a
// descriptor of it, reads it with pread and answers with a buffer id. A verify_registered_columns entry
// then names the buffer and gives its columns as offsets into it:
//   rows_offset                  the message column, row_count x 32 bytes
//   registered.key_offset        the key column, row_count x 33 (ECDSA) / 32 (Schnorr)
//   registered.signature_offset  the signature column, row_count x 64
//   registered.buffer_id         the id from the RegisterReply
// every offset relative to the start of the registered range. The verdicts
// go to results_offset in the arena; only results mode, and key_size (the
// tail) must be 0: the daemon never writes a registered buffer.
constexpr std::uint16_t kAbiMinorRegistered = 4;

// A registered buffer per column (ABI 1.6; an older daemon answers the opcode
// with bad_entry). A libbitcoin-like store keeps one file per column: a
// verify_registered_column_set entry names, for each column, a registered
// buffer and an offset into it, in a RegisteredColumnSet the client writes
// into its arena:
//   rows_offset      arena offset of the RegisteredColumnSet (8-byte aligned)
//   results_offset   the verdicts, row_count bytes in the arena
//   bytes 40..63     0 (reserved)
// Every other field as for verify_registered_columns (results mode, no tail).
// The daemon copies the set out of the arena when it takes the entry; a
// later change to those bytes changes nothing.
constexpr std::uint16_t kAbiMinorRegisteredColumnSet = 6;

struct RegisteredColumnRef {
    std::uint64_t buffer_id;  // an id from a RegisterReply of this session
    std::uint64_t offset;     // of the column's first byte, from the start of the registered range
};
static_assert(sizeof(RegisteredColumnRef) == 16);

struct RegisteredColumnSet {
    RegisteredColumnRef message;    // row_count x 32 bytes
    RegisteredColumnRef key;        // row_count x 33 (ECDSA) / 32 (Schnorr)
    RegisteredColumnRef signature;  // row_count x 64
    std::uint64_t reserved[2];      // 0 (a later minor may name a correlate column here)
};
static_assert(sizeof(RegisteredColumnSet) == 64);
static_assert(offsetof(RegisteredColumnSet, key) == 16);
static_assert(offsetof(RegisteredColumnSet, signature) == 32);
static_assert(offsetof(RegisteredColumnSet, reserved) == 48);
static_assert(std::is_trivially_copyable_v<RegisteredColumnSet>);

// One request. Written by the client into sq slot (tail & mask), then the tail
// is published with release. The daemon copies the whole entry out of shared
// memory before looking at any field.
//
// Opcode::verify_columns (ABI 1.1) gives the rows as column tables in the arena
// and reuses the fields as follows (every offset arena-relative):
//   rows_offset     the message column, row_count x 32 bytes
//   key_size        tail_size: correlate bytes per row (0 = no correlate column)
//   columns.key_offset        the key column, row_count x 33 (ECDSA) / 32 (Schnorr)
//   columns.signature_offset  the signature column, row_count x 64
//   columns.correlate_offset  the correlate column, row_count x tail_size
//                             (must be 0 when tail_size is 0)
// Every other field means what it means for Opcode::verify.
struct ColumnOffsets {
    std::uint64_t key_offset;
    std::uint64_t signature_offset;
    std::uint64_t correlate_offset;
};
static_assert(sizeof(ColumnOffsets) == 24);
static_assert(offsetof(ColumnOffsets, key_offset) == 0);
static_assert(offsetof(ColumnOffsets, signature_offset) == 8);
static_assert(offsetof(ColumnOffsets, correlate_offset) == 16);

// The last 24 bytes of a verify_registered_columns entry.
struct RegisteredColumnOffsets {
    std::uint64_t key_offset;
    std::uint64_t signature_offset;
    std::uint64_t buffer_id;
};
static_assert(sizeof(RegisteredColumnOffsets) == 24);
static_assert(offsetof(RegisteredColumnOffsets, buffer_id) == 16);

struct SubmissionEntry {
    std::uint64_t user_tag;        // returned verbatim in the completion
    std::uint64_t rows_offset;     // arena-relative byte offset of row 0 (verify_columns: message column)
    std::uint64_t results_offset;  // arena-relative; results mode only (else 0)
    std::uint64_t row_count;       // rows; stride = record_size(kind) + key_size
    std::uint8_t opcode;           // Opcode
    std::uint8_t record_kind;      // wire::RecordKind
    std::uint8_t key_size;         // 0..255 tail bytes per row (verify_columns: tail_size)
    std::uint8_t encoding;         // wire::SigEncoding (ECDSA); must be 0 for Schnorr
    std::uint8_t mode;             // wire::Mode
    std::uint8_t table;            // wire::Table or kTableUnspecified (stats label)
    std::uint16_t flags;           // kSubmit* bits (ABI 1.2); others must be 0
    // The last 24 bytes: zero for verify and nop; the column offsets for
    // verify_columns. Both sides copy entries with memcpy and read these bytes
    // with column_offsets() / reserved_words_zero(), never by punning.
    union {
        std::uint32_t reserved[6];  // verify, nop: must be 0
        ColumnOffsets columns;      // verify_columns
        RegisteredColumnOffsets registered;  // verify_registered_columns
    };
};
static_assert(sizeof(SubmissionEntry) == 64);
static_assert(offsetof(SubmissionEntry, user_tag) == 0);
static_assert(offsetof(SubmissionEntry, rows_offset) == 8);
static_assert(offsetof(SubmissionEntry, results_offset) == 16);
static_assert(offsetof(SubmissionEntry, row_count) == 24);
static_assert(offsetof(SubmissionEntry, opcode) == 32);
static_assert(offsetof(SubmissionEntry, record_kind) == 33);
static_assert(offsetof(SubmissionEntry, key_size) == 34);
static_assert(offsetof(SubmissionEntry, encoding) == 35);
static_assert(offsetof(SubmissionEntry, mode) == 36);
static_assert(offsetof(SubmissionEntry, table) == 37);
static_assert(offsetof(SubmissionEntry, flags) == 38);
static_assert(offsetof(SubmissionEntry, reserved) == 40);
static_assert(offsetof(SubmissionEntry, columns) == 40);
static_assert(offsetof(SubmissionEntry, registered) == 40);
static_assert(offsetof(SubmissionEntry, columns) + offsetof(ColumnOffsets, key_offset) == 40);
static_assert(offsetof(SubmissionEntry, columns) + offsetof(ColumnOffsets, signature_offset) == 48);
static_assert(offsetof(SubmissionEntry, columns) + offsetof(ColumnOffsets, correlate_offset) == 56);
static_assert(std::is_standard_layout_v<SubmissionEntry>);
static_assert(std::is_trivially_copyable_v<SubmissionEntry>);

// Which part of a rejected verify_columns entry was out of range or
// overlapping: CompletionEntry::detail of its bad_range completion (0 for every
// other rejection).
enum class ColumnDetail : std::uint32_t {
    none = 0,
    row_count = 1,   // row_count > arena_size / (record + tail_size)
    message = 2,     // the column is not inside the arena
    key = 3,
    signature = 4,
    correlate = 5,
    results = 6,
    overlap = 7,     // the written range (results, or the correlate in collect mode) overlaps a column read
    column_set = 8,  // verify_registered_column_set: the RegisteredColumnSet is not inside the arena or
                     // not 8-byte aligned
    // verify_registered_columns: the message/key/signature details above mean
    // "not inside the registered buffer"; row_count: more rows than the buffer holds.
};

// One answer. Written by the daemon into cq slot (tail & mask), then the tail
// is published with release. Exactly one completion per consumed submission
// (while the session lives).
struct CompletionEntry {
    std::uint64_t user_tag;  // copied from the submission
    std::uint64_t valid;     // rows with verdict 1
    std::uint64_t invalid;   // rows with verdict 0
    std::uint64_t epoch;     // daemon epoch that produced this completion
    std::uint32_t status;    // Status
    std::uint32_t detail;    // errno or sub-code for diagnostics, else 0
    std::uint32_t reserved[6];
};
static_assert(sizeof(CompletionEntry) == 64);
static_assert(offsetof(CompletionEntry, user_tag) == 0);
static_assert(offsetof(CompletionEntry, valid) == 8);
static_assert(offsetof(CompletionEntry, invalid) == 16);
static_assert(offsetof(CompletionEntry, epoch) == 24);
static_assert(offsetof(CompletionEntry, status) == 32);
static_assert(offsetof(CompletionEntry, detail) == 36);

// ---------------------------------------------------------------------------
// Header
// ---------------------------------------------------------------------------

// A 32-bit word alone on its cache line.
struct alignas(kCacheLine) CacheLineWord {
    std::uint32_t value;
    std::uint8_t pad[kCacheLine - sizeof(std::uint32_t)];
};
static_assert(sizeof(CacheLineWord) == kCacheLine);

// A futex doorbell: the notifier bumps seq and calls FUTEX_WAKE (shared, not
// private) when waiters != 0; a waiter announces itself in waiters, re-checks
// its condition and sleeps in FUTEX_WAIT(seq, observed, timeout).
struct alignas(kCacheLine) Doorbell {
    std::uint32_t seq;
    std::uint32_t waiters;
    std::uint8_t pad[kCacheLine - 2 * sizeof(std::uint32_t)];
};
static_assert(sizeof(Doorbell) == kCacheLine);

struct alignas(kCacheLine) SegmentHeader {
    // --- identity line (written once before state = ready) -----------------
    std::uint32_t magic;             // kSegmentMagic
    std::uint16_t abi_major;         // kAbiMajor
    std::uint16_t abi_minor;         // kAbiMinor
    std::uint32_t header_size;       // kHeaderSize
    std::uint32_t daemon_pid;
    std::uint64_t segment_size;      // total bytes of the segment
    std::uint64_t epoch;             // daemon epoch (random per daemon start)
    std::uint64_t session_id;        // daemon-assigned id of this client session
    std::uint64_t start_time_ns;     // daemon start, CLOCK_REALTIME ns
    std::uint32_t sq_entries;        // power of two
    std::uint32_t cq_entries;        // power of two, >= sq_entries
    std::uint32_t sqe_size;          // sizeof(SubmissionEntry)
    std::uint32_t cqe_size;          // sizeof(CompletionEntry)
    // --- layout line ---------------------------------------------------------
    std::uint64_t sq_entries_offset;
    std::uint64_t cq_entries_offset;
    std::uint64_t arena_offset;
    std::uint64_t arena_size;
    std::uint32_t sq_mask;           // sq_entries - 1
    std::uint32_t cq_mask;           // cq_entries - 1
    std::uint64_t reserved0[3];
    // --- state line: published last with release ----------------------------
    CacheLineWord state;             // SegmentState
    // --- ring indices (free-running u32 counters; slot = index & mask) -------
    CacheLineWord sq_head;           // daemon: next submission to consume
    CacheLineWord sq_tail;           // client: next free submission slot
    CacheLineWord cq_head;           // client: next completion to reap
    CacheLineWord cq_tail;           // daemon: next free completion slot
    // --- wakeups ------------------------------------------------------------
    Doorbell daemon_bell;            // rung by the client: new submissions, cq space freed
    Doorbell client_bell;            // rung by the daemon: completions posted, sq space freed
    // --- counters of protocol violations seen by the daemon ------------------
    CacheLineWord dropped;           // submissions answered with bad_entry/bad_range
};
static_assert(std::is_standard_layout_v<SegmentHeader>);
static_assert(std::is_trivially_copyable_v<SegmentHeader>);
static_assert(offsetof(SegmentHeader, magic) == 0);
static_assert(offsetof(SegmentHeader, abi_major) == 4);
static_assert(offsetof(SegmentHeader, abi_minor) == 6);
static_assert(offsetof(SegmentHeader, header_size) == 8);
static_assert(offsetof(SegmentHeader, daemon_pid) == 12);
static_assert(offsetof(SegmentHeader, segment_size) == 16);
static_assert(offsetof(SegmentHeader, epoch) == 24);
static_assert(offsetof(SegmentHeader, session_id) == 32);
static_assert(offsetof(SegmentHeader, start_time_ns) == 40);
static_assert(offsetof(SegmentHeader, sq_entries) == 48);
static_assert(offsetof(SegmentHeader, cq_entries) == 52);
static_assert(offsetof(SegmentHeader, sqe_size) == 56);
static_assert(offsetof(SegmentHeader, cqe_size) == 60);
static_assert(offsetof(SegmentHeader, sq_entries_offset) == 64);
static_assert(offsetof(SegmentHeader, cq_entries_offset) == 72);
static_assert(offsetof(SegmentHeader, arena_offset) == 80);
static_assert(offsetof(SegmentHeader, arena_size) == 88);
static_assert(offsetof(SegmentHeader, sq_mask) == 96);
static_assert(offsetof(SegmentHeader, cq_mask) == 100);
static_assert(offsetof(SegmentHeader, state) == 128);
static_assert(offsetof(SegmentHeader, sq_head) == 192);
static_assert(offsetof(SegmentHeader, sq_tail) == 256);
static_assert(offsetof(SegmentHeader, cq_head) == 320);
static_assert(offsetof(SegmentHeader, cq_tail) == 384);
static_assert(offsetof(SegmentHeader, daemon_bell) == 448);
static_assert(offsetof(SegmentHeader, client_bell) == 512);
static_assert(offsetof(SegmentHeader, dropped) == 576);
static_assert(sizeof(SegmentHeader) == 640);
static_assert(sizeof(SegmentHeader) <= kHeaderSize);

static_assert(std::atomic_ref<std::uint32_t>::is_always_lock_free);
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free);
static_assert(std::atomic_ref<std::uint32_t>::required_alignment <= alignof(std::uint32_t));

// ---------------------------------------------------------------------------
// Control-socket handshake (AF_UNIX SOCK_SEQPACKET at DIR/sigverifyd.sock)
//
//   client -> daemon   HelloRequest
//   daemon -> client   HelloReply (+ the segment descriptor via SCM_RIGHTS when
//                      status == ok; on refusal the daemon closes the socket)
//   client -> daemon   MappedAck (the client mapped and checked the segment)
//   ... the socket stays open for the whole session; its closing ends the
//   session on either side.
// ---------------------------------------------------------------------------
constexpr std::uint32_t kHelloMagic = 0x4C485653;  // "SVHL"
constexpr std::uint32_t kReplyMagic = 0x52485653;  // "SVHR"
constexpr std::uint32_t kAckMagic = 0x4B415653;    // "SVAK"
constexpr std::size_t kClientNameSize = 64;
constexpr std::size_t kErrorTextSize = 200;

struct HelloRequest {
    std::uint32_t magic;                // kHelloMagic
    std::uint32_t protocol_version;     // kProtocolVersion
    std::uint64_t requested_arena_size; // 0 = daemon default; bounded by the daemon
    std::uint32_t requested_ring_entries;  // 0 = daemon default; power of two
    std::uint32_t flags;                // must be 0
    char client_name[kClientNameSize];  // NUL padded, printable ASCII
};
static_assert(sizeof(HelloRequest) == 88);
static_assert(offsetof(HelloRequest, client_name) == 24);

struct HelloReply {
    std::uint32_t magic;                // kReplyMagic
    std::uint32_t protocol_version;     // the daemon's
    std::uint32_t status;               // Status
    std::uint32_t reserved;
    std::uint64_t segment_size;         // bytes to map from the passed descriptor
    std::uint64_t epoch;                // daemon epoch (also in the segment header)
    std::uint64_t session_id;
    char error[kErrorTextSize];         // NUL-terminated human-readable reason
};
static_assert(sizeof(HelloReply) == 240);
static_assert(offsetof(HelloReply, error) == 40);

struct MappedAck {
    std::uint32_t magic;   // kAckMagic
    std::uint32_t status;  // ok, or bad_segment when the client rejected it
};
static_assert(sizeof(MappedAck) == 8);

// ---------------------------------------------------------------------------
// Control-socket messages after the handshake (ABI 1.4): registered buffers.
//
//   client -> daemon   RegisterRequest + the buffer's descriptor (SCM_RIGHTS)
//   daemon -> client   RegisterReply (status ok with buffer_id, or the refusal)
//   client -> daemon   UnregisterRequest
//   daemon -> client   RegisterReply (magic kUnregisterReplyMagic, buffer_id echoed)
//
// One request at a time: the client waits for each reply before it sends the
// next. The descriptor must be a regular file (a memfd counts) readable by the
// daemon; [offset, offset + size) must lie inside the file (fstat), size > 0.
// The daemon keeps a duplicate of the descriptor and reads the range with
// pread (it never maps it: a hole of a sparse file reads as zeros without
// allocating a page), and counts size against the session's limits
// (--max-registered-bytes, --max-registered-buffers). Refusals:
//   invalid_argument  size 0, range past the end of the file, not a regular
//                     file, no descriptor, reserved fields not 0
//   too_large         the session's registered bytes or buffer count would
//                     pass the daemon's limit
//   system_error      the daemon's descriptor budget (RLIMIT_NOFILE) is
//                     spent, or the descriptor could not be kept (detail: errno)
//   not_found         unregister: no such buffer id
// Batches in flight keep their buffer mapped until they complete; everything
// is unmapped when the session ends. Ids are never reused within a session.
// ---------------------------------------------------------------------------
constexpr std::uint32_t kRegisterMagic = 0x47525653;       // "SVRG"
constexpr std::uint32_t kUnregisterMagic = 0x52555653;     // "SVUR"
constexpr std::uint32_t kRegisterReplyMagic = 0x52525653;  // "SVRR"
constexpr std::uint32_t kUnregisterReplyMagic = 0x55525653;  // "SVRU"

struct RegisterRequest {
    std::uint32_t magic;   // kRegisterMagic
    std::uint32_t flags;   // must be 0
    std::uint64_t offset;  // byte offset of the range in the file
    std::uint64_t size;    // bytes
};
static_assert(sizeof(RegisterRequest) == 24);

struct UnregisterRequest {
    std::uint32_t magic;   // kUnregisterMagic
    std::uint32_t flags;   // must be 0
    std::uint64_t buffer_id;
};
static_assert(sizeof(UnregisterRequest) == 16);

struct RegisterReply {
    std::uint32_t magic;      // kRegisterReplyMagic / kUnregisterReplyMagic
    std::uint32_t status;     // Status
    std::uint64_t buffer_id;  // the new id (register), the id named (unregister)
    std::uint32_t detail;     // errno of a system_error, else 0
    std::uint32_t reserved;
    char error[kErrorTextSize];  // NUL-terminated reason of a refusal
};
static_assert(sizeof(RegisterReply) == 224);
static_assert(offsetof(RegisterReply, error) == 24);

}  // namespace sigverify::shm
