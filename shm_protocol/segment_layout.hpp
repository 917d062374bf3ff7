// sigverify ring ABI: the layout of one client's shared segment, the ring
// entries, the status codes and the control-socket handshake, in one header
// (liburing style).
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
#include <cstring>
#include <limits>
#include <string_view>
#include <type_traits>

#include "shm_protocol/wire_format.hpp"

namespace sigverify::shm {

// ---------------------------------------------------------------------------
// Versions and constants
// ---------------------------------------------------------------------------
constexpr std::uint32_t kSegmentMagic = 0x47535653;  // "SVSG" little-endian
constexpr std::uint16_t kAbiMajor = 1;                // incompatible layout change
constexpr std::uint16_t kAbiMinor = 1;                // compatible addition (1: Opcode::verify_columns)
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
    too_large = 15,         // a zero-copy reservation larger than the arena
    handshake = 16,         // malformed or unexpected handshake message
    bad_segment = 17,       // segment header failed validation (magic, ABI, sizes)
    system_error = 18,      // an OS call failed (details in the error text)
    pending = 19,           // poll(): the batch has not completed yet
};
constexpr std::uint32_t kStatusCount = 20;

constexpr std::string_view to_string(Status s) {
    switch (s) {
    case Status::ok: return "ok";
    case Status::invalid_argument: return "invalid argument";
    case Status::bad_entry: return "malformed submission entry";
    case Status::bad_range: return "submission offsets or lengths outside the arena";
    case Status::protocol_version: return "protocol version mismatch";
    case Status::permission_denied: return "permission denied";
    case Status::busy: return "daemon busy (too many clients)";
    case Status::shutting_down: return "daemon shutting down";
    case Status::cancelled: return "batch cancelled";
    case Status::backend_error: return "verification backend error";
    case Status::unreachable: return "daemon unreachable";
    case Status::disconnected: return "daemon disconnected";
    case Status::timeout: return "timed out";
    case Status::ring_full: return "ring or arena full";
    case Status::stale_epoch: return "completion from a stale daemon epoch";
    case Status::too_large: return "request larger than the arena";
    case Status::handshake: return "malformed handshake";
    case Status::bad_segment: return "invalid shared segment";
    case Status::system_error: return "system error";
    case Status::pending: return "pending";
    }
    return "unknown status";
}

// ---------------------------------------------------------------------------
// Ring entries
// ---------------------------------------------------------------------------
enum class Opcode : std::uint8_t {
    invalid = 0,  // never valid: a zeroed slot is not a request
    verify = 1,   // verify row_count rows (mode results or collect)
    nop = 2,      // completes immediately with ok and zero counts (ping, latency)
    verify_columns = 3,  // ABI 1.1: verify row_count rows given as column tables
};

// The first ABI minor version whose daemon accepts Opcode::verify_columns; an
// older daemon answers such an entry with bad_entry, so clients check
// SegmentHeader::abi_minor before submitting one.
constexpr std::uint16_t kAbiMinorColumns = 1;

// Optional statistics label of a submission (the daemon never trusts it for
// anything but counting). 0xFF = unspecified.
constexpr std::uint8_t kTableUnspecified = 0xFF;

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
    std::uint16_t flags;           // must be 0
    // The last 24 bytes: zero for verify and nop; the column offsets for
    // verify_columns. Both sides copy entries with memcpy and read these bytes
    // with column_offsets() / reserved_words_zero(), never by punning.
    union {
        std::uint32_t reserved[6];  // verify, nop: must be 0
        ColumnOffsets columns;      // verify_columns
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
static_assert(offsetof(SubmissionEntry, columns) + offsetof(ColumnOffsets, key_offset) == 40);
static_assert(offsetof(SubmissionEntry, columns) + offsetof(ColumnOffsets, signature_offset) == 48);
static_assert(offsetof(SubmissionEntry, columns) + offsetof(ColumnOffsets, correlate_offset) == 56);
static_assert(std::is_standard_layout_v<SubmissionEntry>);
static_assert(std::is_trivially_copyable_v<SubmissionEntry>);

// The column offsets of an entry (bytes 40..63), read bytewise.
inline ColumnOffsets column_offsets(const SubmissionEntry& e) {
    ColumnOffsets o;
    std::memcpy(&o, reinterpret_cast<const std::uint8_t*>(&e) + offsetof(SubmissionEntry, columns), sizeof o);
    return o;
}
inline void set_column_offsets(SubmissionEntry& e, const ColumnOffsets& o) {
    std::memcpy(reinterpret_cast<std::uint8_t*>(&e) + offsetof(SubmissionEntry, columns), &o, sizeof o);
}
// True when bytes 40..63 are all zero (what verify and nop require).
inline bool reserved_words_zero(const SubmissionEntry& e) {
    std::uint8_t bytes[sizeof(ColumnOffsets)];
    std::memcpy(bytes, reinterpret_cast<const std::uint8_t*>(&e) + offsetof(SubmissionEntry, columns), sizeof bytes);
    for (std::uint8_t b : bytes)
        if (b != 0) return false;
    return true;
}

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

// Atomic access to a shared 32-bit word.
inline std::atomic_ref<std::uint32_t> word(std::uint32_t& w) { return std::atomic_ref<std::uint32_t>(w); }
inline std::atomic_ref<std::uint32_t> word(CacheLineWord& w) { return word(w.value); }

// ---------------------------------------------------------------------------
// Layout computation (both sides compute it; the client checks the header
// against it and against the real size of the descriptor it received)
// ---------------------------------------------------------------------------
struct Layout {
    std::uint32_t sq_entries = 0;
    std::uint32_t cq_entries = 0;
    std::uint64_t sq_entries_offset = 0;
    std::uint64_t cq_entries_offset = 0;
    std::uint64_t arena_offset = 0;
    std::uint64_t arena_size = 0;
    std::uint64_t segment_size = 0;
};

constexpr bool is_pow2(std::uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

constexpr std::uint64_t align_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

// Returns false on out-of-range parameters. arena_size is rounded up to a page.
constexpr bool compute_layout(std::uint32_t sq_entries, std::uint32_t cq_entries,
                              std::uint64_t arena_size, Layout& out) {
    if (!is_pow2(sq_entries) || !is_pow2(cq_entries)) return false;
    if (sq_entries < kMinRingEntries || sq_entries > kMaxRingEntries) return false;
    if (cq_entries < sq_entries || cq_entries > kMaxRingEntries) return false;
    if (arena_size < kMinArenaSize || arena_size > kMaxArenaSize) return false;
    Layout l;
    l.sq_entries = sq_entries;
    l.cq_entries = cq_entries;
    l.sq_entries_offset = kHeaderSize;
    l.cq_entries_offset = l.sq_entries_offset + std::uint64_t(sq_entries) * sizeof(SubmissionEntry);
    l.arena_offset =
        align_up(l.cq_entries_offset + std::uint64_t(cq_entries) * sizeof(CompletionEntry), kPageSize);
    l.arena_size = align_up(arena_size, kPageSize);
    l.segment_size = l.arena_offset + l.arena_size;
    out = l;
    return true;
}

// Checks a mapped header (copied out first) against what this side expects.
// segment_bytes is the real size of the mapping (fstat of the descriptor).
// Returns nullptr when valid, else a short reason.
inline const char* check_header(const SegmentHeader& h, std::uint64_t segment_bytes) {
    if (h.magic != kSegmentMagic) return "bad magic";
    if (h.abi_major != kAbiMajor) return "ABI major version mismatch";
    if (h.header_size != kHeaderSize) return "bad header size";
    if (h.sqe_size != sizeof(SubmissionEntry) || h.cqe_size != sizeof(CompletionEntry))
        return "bad entry size";
    Layout l;
    if (!compute_layout(h.sq_entries, h.cq_entries, h.arena_size, l)) return "bad ring or arena size";
    if (l.arena_size != h.arena_size) return "arena size not page aligned";
    if (h.sq_entries_offset != l.sq_entries_offset || h.cq_entries_offset != l.cq_entries_offset ||
        h.arena_offset != l.arena_offset)
        return "bad offsets";
    if (h.segment_size != l.segment_size) return "bad segment size";
    if (segment_bytes < h.segment_size) return "segment smaller than its header says";
    if (h.sq_mask != h.sq_entries - 1 || h.cq_mask != h.cq_entries - 1) return "bad ring masks";
    return nullptr;
}

// Validation of one submission (a copy, never the shared slot itself).
// On success fills the checked values. All arithmetic is overflow-safe.
struct CheckedSubmission {
    Opcode opcode = Opcode::invalid;
    wire::RecordKind kind = wire::RecordKind::ecdsa;
    wire::SigEncoding encoding = wire::SigEncoding::opaque;
    wire::Mode mode = wire::Mode::results;
    std::uint8_t table = kTableUnspecified;
    std::size_t key_size = 0;        // verify: row tail bytes; verify_columns: tail_size
    std::uint64_t rows_offset = 0;   // verify: row 0; verify_columns: the message column
    std::uint64_t results_offset = 0;
    std::uint64_t row_count = 0;
    std::uint64_t stride = 0;        // record + key_size (verify_columns: bytes per row over all columns)
    std::uint64_t rows_bytes = 0;    // row_count * stride
    // verify_columns only.
    std::uint64_t key_offset = 0;
    std::uint64_t signature_offset = 0;
    std::uint64_t correlate_offset = 0;  // 0 when key_size (tail_size) is 0
};

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
};

// Column widths of verify_columns (bytes per row).
constexpr std::uint64_t kColumnMessageWidth = 32;
constexpr std::uint64_t kColumnSignatureWidth = 64;
constexpr std::uint64_t column_key_width(wire::RecordKind kind) { return kind == wire::RecordKind::ecdsa ? 33 : 32; }

namespace detail {
// [offset, offset + count * width) inside [0, arena_size), without overflow;
// count * width must be known not to overflow (count <= arena_size / width).
constexpr bool range_in_arena(std::uint64_t offset, std::uint64_t count, std::uint64_t width,
                              std::uint64_t arena_size) {
    const std::uint64_t bytes = count * width;
    return offset <= arena_size && bytes <= arena_size - offset;
}
// Two ranges already known to lie inside the arena (so the ends do not
// overflow) overlap; empty ranges overlap nothing.
constexpr bool ranges_overlap(std::uint64_t a, std::uint64_t a_bytes, std::uint64_t b, std::uint64_t b_bytes) {
    return a_bytes != 0 && b_bytes != 0 && a < b + b_bytes && b < a + a_bytes;
}
}  // namespace detail

inline Status check_submission(const SubmissionEntry& e, std::uint64_t arena_size, CheckedSubmission& out,
                               std::uint32_t* detail_out = nullptr) {
    CheckedSubmission c;
    if (detail_out != nullptr) *detail_out = 0;
    if (e.flags != 0) return Status::bad_entry;
    const bool columns = e.opcode == static_cast<std::uint8_t>(Opcode::verify_columns);
    if (!columns && !reserved_words_zero(e)) return Status::bad_entry;
    if (e.opcode == static_cast<std::uint8_t>(Opcode::nop)) {
        if (e.row_count != 0 || e.rows_offset != 0 || e.results_offset != 0) return Status::bad_entry;
        c.opcode = Opcode::nop;
        out = c;
        return Status::ok;
    }
    if (e.opcode != static_cast<std::uint8_t>(Opcode::verify) && !columns) return Status::bad_entry;
    c.opcode = columns ? Opcode::verify_columns : Opcode::verify;
    if (e.record_kind > static_cast<std::uint8_t>(wire::RecordKind::schnorr)) return Status::bad_entry;
    c.kind = static_cast<wire::RecordKind>(e.record_kind);
    if (e.encoding > static_cast<std::uint8_t>(wire::SigEncoding::compact)) return Status::bad_entry;
    if (c.kind == wire::RecordKind::schnorr && e.encoding != 0) return Status::bad_entry;
    c.encoding = static_cast<wire::SigEncoding>(e.encoding);
    if (e.mode > static_cast<std::uint8_t>(wire::Mode::collect)) return Status::bad_entry;
    c.mode = static_cast<wire::Mode>(e.mode);
    if (e.table != kTableUnspecified && e.table > static_cast<std::uint8_t>(wire::Table::threshold))
        return Status::bad_entry;
    if (e.table != kTableUnspecified &&
        wire::record_kind(static_cast<wire::Table>(e.table)) != c.kind)
        return Status::bad_entry;
    c.table = e.table;
    c.key_size = e.key_size;
    c.stride = wire::stride(c.kind, c.key_size);
    c.row_count = e.row_count;
    c.rows_offset = e.rows_offset;
    c.results_offset = e.results_offset;
    if (columns) {
        if (c.mode == wire::Mode::collect && c.results_offset != 0) return Status::bad_entry;
        const ColumnOffsets o = column_offsets(e);
        c.key_offset = o.key_offset;
        c.signature_offset = o.signature_offset;
        c.correlate_offset = o.correlate_offset;
        const std::uint64_t tail = c.key_size;
        if (tail == 0 && c.correlate_offset != 0) return Status::bad_entry;
        auto range_error = [&](ColumnDetail d) {
            if (detail_out != nullptr) *detail_out = static_cast<std::uint32_t>(d);
            return Status::bad_range;
        };
        // The bound also keeps every count * width below (see range_in_arena):
        // each width is at most record + tail_size = stride.
        if (c.row_count > arena_size / c.stride) return range_error(ColumnDetail::row_count);
        c.rows_bytes = c.row_count * c.stride;
        const std::uint64_t n = c.row_count;
        const std::uint64_t key_width = column_key_width(c.kind);
        if (!detail::range_in_arena(c.rows_offset, n, kColumnMessageWidth, arena_size))
            return range_error(ColumnDetail::message);
        if (!detail::range_in_arena(c.key_offset, n, key_width, arena_size)) return range_error(ColumnDetail::key);
        if (!detail::range_in_arena(c.signature_offset, n, kColumnSignatureWidth, arena_size))
            return range_error(ColumnDetail::signature);
        if (tail != 0 && !detail::range_in_arena(c.correlate_offset, n, tail, arena_size))
            return range_error(ColumnDetail::correlate);
        struct Range {
            std::uint64_t offset, bytes;
        };
        const Range read[3] = {{c.rows_offset, n * kColumnMessageWidth},
                               {c.key_offset, n * key_width},
                               {c.signature_offset, n * kColumnSignatureWidth}};
        const Range correlate{c.correlate_offset, n * tail};
        if (c.mode == wire::Mode::results) {
            if (!detail::range_in_arena(c.results_offset, n, 1, arena_size)) return range_error(ColumnDetail::results);
            const Range results{c.results_offset, n};
            for (const Range& r : read)
                if (detail::ranges_overlap(results.offset, results.bytes, r.offset, r.bytes))
                    return range_error(ColumnDetail::overlap);
            if (detail::ranges_overlap(results.offset, results.bytes, correlate.offset, correlate.bytes))
                return range_error(ColumnDetail::overlap);
        } else {
            for (const Range& r : read)
                if (detail::ranges_overlap(correlate.offset, correlate.bytes, r.offset, r.bytes))
                    return range_error(ColumnDetail::overlap);
        }
        out = c;
        return Status::ok;
    }
    // rows: [rows_offset, rows_offset + row_count * stride) inside the arena
    if (c.row_count > arena_size / c.stride) return Status::bad_range;
    c.rows_bytes = c.row_count * c.stride;  // <= arena_size, no overflow
    if (c.rows_offset > arena_size || c.rows_bytes > arena_size - c.rows_offset) return Status::bad_range;
    if (c.mode == wire::Mode::results) {
        // results: [results_offset, results_offset + row_count) inside the arena,
        // not overlapping the rows
        if (c.results_offset > arena_size || c.row_count > arena_size - c.results_offset)
            return Status::bad_range;
        if (c.row_count != 0) {
            const std::uint64_t r0 = c.results_offset, r1 = c.results_offset + c.row_count;
            const std::uint64_t w0 = c.rows_offset, w1 = c.rows_offset + c.rows_bytes;
            if (r0 < w1 && w0 < r1) return Status::bad_range;
        }
    } else if (c.results_offset != 0) {
        return Status::bad_entry;
    }
    out = c;
    return Status::ok;
}

// Number of entries between a consumer's private head and a producer's shared
// tail; anything above ring_entries is a protocol violation by the producer.
constexpr bool ring_count_ok(std::uint32_t head, std::uint32_t tail, std::uint32_t entries) {
    return std::uint32_t(tail - head) <= entries;
}

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

// Copies a string into a fixed NUL-terminated buffer (truncating).
template <std::size_t N>
inline void copy_text(char (&dst)[N], std::string_view src) {
    const std::size_t n = src.size() < N - 1 ? src.size() : N - 1;
    std::memcpy(dst, src.data(), n);
    std::memset(dst + n, 0, N - n);
}

// Reads a fixed buffer that may lack its NUL (hostile peer).
template <std::size_t N>
inline std::string_view read_text(const char (&src)[N]) {
    std::size_t n = 0;
    while (n < N && src[n] != '\0') ++n;
    return std::string_view(src, n);
}

}  // namespace sigverify::shm
