// SPDX-License-Identifier: MIT
// What the client and the daemon compute over the ring ABI (segment_layout.hpp):
// status texts, atomic access to shared words, the column offsets of an
// entry, the segment layout and the check of a mapped header, the ring count
// rule, and the fixed text buffers of the handshake.
//
// Both sides use these functions, so one definition keeps them agreeing; the
// daemon's validation of hostile submissions is daemon-only
// (daemon/memory/submission_checks.hpp).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "segment_layout.hpp"  // sibling: the same in-tree and installed

namespace sigverify::shm {

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
    case Status::too_large: return "request over a limit (the arena, or the daemon's registered-buffer limits)";
    case Status::handshake: return "malformed handshake";
    case Status::bad_segment: return "invalid shared segment";
    case Status::system_error: return "system error";
    case Status::pending: return "pending";
    case Status::not_found: return "no batch in flight or registered buffer with that id";
    case Status::buffer_lost:
        return "registered buffer unreadable under verification (truncated, or its file system could not supply a "
               "page)";
    }
    return "unknown status";
}

// Atomic access to a shared 32-bit word.
inline std::atomic_ref<std::uint32_t> word(std::uint32_t& w) { return std::atomic_ref<std::uint32_t>(w); }
inline std::atomic_ref<std::uint32_t> word(CacheLineWord& w) { return word(w.value); }


// An entry's words at byte `at` as a T, read and written bytewise (the
// overlaid views of bytes 40..63 are never accessed through a member).
template <class T>
inline T entry_words(const SubmissionEntry& e, std::size_t at) {
    T o;
    std::memcpy(&o, reinterpret_cast<const std::uint8_t*>(&e) + at, sizeof o);
    return o;
}
template <class T>
inline void set_entry_words(SubmissionEntry& e, std::size_t at, const T& o) {
    std::memcpy(reinterpret_cast<std::uint8_t*>(&e) + at, &o, sizeof o);
}

// The column offsets of an entry (bytes 40..63), and the registered-buffer
// offsets that share those bytes.
inline ColumnOffsets column_offsets(const SubmissionEntry& e) {
    return entry_words<ColumnOffsets>(e, offsetof(SubmissionEntry, columns));
}
inline void set_column_offsets(SubmissionEntry& e, const ColumnOffsets& o) {
    set_entry_words(e, offsetof(SubmissionEntry, columns), o);
}
inline RegisteredColumnOffsets registered_offsets(const SubmissionEntry& e) {
    return entry_words<RegisteredColumnOffsets>(e, offsetof(SubmissionEntry, registered));
}
inline void set_registered_offsets(SubmissionEntry& e, const RegisteredColumnOffsets& o) {
    set_entry_words(e, offsetof(SubmissionEntry, registered), o);
}
// True when bytes 40..63 are all zero (what verify and nop require).
inline bool reserved_words_zero(const SubmissionEntry& e) {
    struct Bytes {
        std::uint8_t b[sizeof(ColumnOffsets)];
    };
    for (std::uint8_t b : entry_words<Bytes>(e, offsetof(SubmissionEntry, columns)).b)
        if (b != 0) return false;
    return true;
}

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

// Number of entries between a consumer's private head and a producer's shared
// tail; anything above ring_entries is a protocol violation by the producer.
constexpr bool ring_count_ok(std::uint32_t head, std::uint32_t tail, std::uint32_t entries) {
    return std::uint32_t(tail - head) <= entries;
}

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
