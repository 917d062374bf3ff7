// SPDX-License-Identifier: MIT
// libFuzzer target: the daemon's validation of everything a client controls in
// its segment, checked against an independent oracle written with 128-bit
// arithmetic (no shared code with sigverify/shm_protocol/segment_layout.hpp):
//   - check_submission(): accepted row entries lie inside the arena, results do not
//     overlap rows; accepted column entries (verify_columns) have every column
//     inside the arena and a written range (results, or the correlate in collect
//     mode) that overlaps no column; accepted registered column entries
//     (verify_registered_columns) are results-only with the results in the
//     arena, and check_registered_columns accepts exactly the columns inside
//     the buffer; enums and reserved fields are honoured; and
//     every entry the oracle finds in range with valid fields is accepted (no
//     false refusals)
//   - check_header() (the client's check of a daemon segment): an accepted
//     header describes rings and an arena inside the mapping, in order
//   - ring_count_ok() on hostile indices, read_text() on unterminated text
// Input: tag byte, then raw bytes for the structure chosen by the tag.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "daemon/memory/submission_checks.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace sigverify;
using u128 = unsigned __int128;

namespace {

struct Range {
    u128 offset, bytes;
    u128 end() const { return offset + bytes; }
};
bool overlap(const Range& a, const Range& b) {
    return a.bytes != 0 && b.bytes != 0 && a.offset < b.end() && b.offset < a.end();
}

// A verify_columns entry whose fields are valid: in range exactly when every
// column lies in the arena, the rows fit the arena at their full stride, and
// the written range (results, or the correlate in collect mode) overlaps no
// column read.
void check_columns(const shm::SubmissionEntry& e, std::uint64_t arena, shm::Status st,
                   const shm::CheckedSubmission& c, u128 stride, const std::uint64_t col[3]) {
    const u128 n = e.row_count, tail = e.key_size;
    const Range message{e.rows_offset, n * 32}, key{col[0], n * (e.record_kind == 0 ? 33 : 32)},
        signature{col[1], n * 64}, correlate{col[2], n * tail}, results{e.results_offset, n};
    const Range read[3] = {message, key, signature};
    bool in_range = n * stride <= arena;
    for (const Range& r : read) in_range = in_range && r.end() <= arena;
    if (tail != 0) in_range = in_range && correlate.end() <= arena;
    if (e.mode == 0) {
        in_range = in_range && results.end() <= arena;
        for (const Range& r : read) in_range = in_range && !overlap(results, r);
        in_range = in_range && !overlap(results, correlate);
    } else {
        for (const Range& r : read) in_range = in_range && !overlap(correlate, r);
    }
    if (!in_range) {
        FUZZ_CHECK(st == shm::Status::bad_range);
        return;
    }
    FUZZ_CHECK(st == shm::Status::ok);
    FUZZ_CHECK(c.opcode == shm::Opcode::verify_columns);
    FUZZ_CHECK(c.row_count == e.row_count && c.rows_offset == e.rows_offset && c.tail_size == e.key_size);
    FUZZ_CHECK(c.key_offset == col[0] && c.signature_offset == col[1] && c.correlate_offset == col[2]);
    FUZZ_CHECK(c.stride == stride && c.rows_bytes == n * stride);
    FUZZ_CHECK(static_cast<std::uint8_t>(c.mode) == e.mode);
    FUZZ_CHECK(c.mode != wire::Mode::results || c.results_offset == e.results_offset);
}

// verify_registered_columns (ABI 1.4): results mode, no tail, the results in
// the arena; then the columns against a buffer of `buffer` bytes (taken from
// the arena bound: any 64-bit value).
void check_registered(const shm::SubmissionEntry& e, std::uint64_t arena, shm::Status st,
                      const shm::CheckedSubmission& c, const std::uint64_t col[3], std::uint64_t buffer) {
    bool fields_ok = (e.flags & ~std::uint16_t(1)) == 0 && e.record_kind <= 1 && e.encoding <= 1 &&
                     !(e.record_kind == 1 && e.encoding != 0) && e.mode == 0 && e.key_size == 0;
    if (e.table != 0xFF) fields_ok = fields_ok && e.table <= 3 && ((e.table >= 2) == (e.record_kind == 1));
    if (!fields_ok) {
        FUZZ_CHECK(st == shm::Status::bad_entry);
        return;
    }
    if (u128(e.results_offset) + e.row_count > arena) {
        FUZZ_CHECK(st == shm::Status::bad_range);
        return;
    }
    FUZZ_CHECK(st == shm::Status::ok && c.opcode == shm::Opcode::verify_registered_columns);
    FUZZ_CHECK(c.buffer_id == col[2] && c.key_offset == col[0] && c.signature_offset == col[1]);
    shm::CheckedSubmission checked = c;
    const shm::Status in_buffer = shm::check_registered_columns(checked, buffer);
    const u128 n = e.row_count;
    // The rows must fit the buffer as a whole too (row_count <= size / record).
    const bool fits = n * (e.record_kind == 0 ? 129 : 128) <= buffer && u128(e.rows_offset) + n * 32 <= buffer &&
                      u128(col[0]) + n * (e.record_kind == 0 ? 33 : 32) <= buffer && u128(col[1]) + n * 64 <= buffer;
    FUZZ_CHECK((in_buffer == shm::Status::ok) == fits);
    if (!fits) FUZZ_CHECK(in_buffer == shm::Status::bad_range);
}

// verify_registered_column_set (ABI 1.6): as above, with bytes 40..63
// reserved and the RegisteredColumnSet (64 bytes, 8-aligned) in the arena;
// then the set (its words from `words`) against three buffer sizes.
void check_registered_set(const shm::SubmissionEntry& e, std::uint64_t arena, shm::Status st,
                          const shm::CheckedSubmission& c, const std::uint64_t col[3], std::uint64_t raw) {
    bool fields_ok = (e.flags & ~std::uint16_t(1)) == 0 && e.record_kind <= 1 && e.encoding <= 1 &&
                     !(e.record_kind == 1 && e.encoding != 0) && e.mode == 0 && e.key_size == 0 &&
                     (col[0] | col[1] | col[2]) == 0;
    if (e.table != 0xFF) fields_ok = fields_ok && e.table <= 3 && ((e.table >= 2) == (e.record_kind == 1));
    if (!fields_ok) {
        FUZZ_CHECK(st == shm::Status::bad_entry);
        return;
    }
    if (u128(e.results_offset) + e.row_count > arena || e.rows_offset % 8 != 0 || u128(e.rows_offset) + 64 > arena) {
        FUZZ_CHECK(st == shm::Status::bad_range);
        return;
    }
    FUZZ_CHECK(st == shm::Status::ok && c.opcode == shm::Opcode::verify_registered_column_set);
    FUZZ_CHECK(c.column_set_offset == e.rows_offset && c.results_offset == e.results_offset);
    // A set and three sizes from the raw word: anything, overflowing included.
    shm::RegisteredColumnSet set{{1, raw}, {2, raw >> 3}, {3, ~raw}, {0, 0}};
    const std::uint64_t sizes[3] = {raw, raw / 2 + 77, raw ^ 0x5555};
    shm::CheckedSubmission checked = c;
    const shm::Status in_buffers = shm::check_registered_column_set(checked, set, sizes);
    const u128 n = e.row_count;
    const bool fits = u128(set.message.offset) + n * 32 <= sizes[0] &&
                      u128(set.key.offset) + n * (e.record_kind == 0 ? 33 : 32) <= sizes[1] &&
                      u128(set.signature.offset) + n * 64 <= sizes[2];
    FUZZ_CHECK((in_buffers == shm::Status::ok) == fits);
    if (!fits) FUZZ_CHECK(in_buffers == shm::Status::bad_range);
    set.reserved[0] = 1;
    checked = c;
    FUZZ_CHECK(shm::check_registered_column_set(checked, set, sizes) == shm::Status::bad_entry);
}

void fuzz_submission(const std::uint8_t* data, std::size_t size) {
    shm::SubmissionEntry e{};
    std::uint64_t arena = 0;
    if (size < sizeof e + 1) return;
    std::memcpy(&e, data, sizeof e);
    // Arena: the bounds the daemon really uses, or anything.
    const std::uint8_t sel = data[sizeof e];
    std::uint64_t raw = 0;
    std::memcpy(&raw, data + sizeof e + 1, std::min<std::size_t>(8, size - sizeof e - 1));
    switch (sel % 4) {
    case 0: arena = shm::kMinArenaSize; break;
    case 1: arena = shm::align_up(shm::kMinArenaSize + raw % (shm::kMaxArenaSize - shm::kMinArenaSize), 4096); break;
    case 2: arena = shm::kMaxArenaSize; break;
    default: arena = raw; break;
    }
    // Steer half the inputs towards structurally valid entries so that the
    // range arithmetic is what gets explored.
    if (sel & 0x80) {
        e.flags = 0;
        if (sel & 0x20) {
            // a column entry: offsets somewhere in (or just past) the arena
            e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify_columns);
            std::uint64_t o[3];
            std::memcpy(o, reinterpret_cast<const std::uint8_t*>(&e) + 40, sizeof o);
            const std::uint64_t span = arena + 1 == 0 ? arena : arena + 1;
            for (auto& v : o) v = span != 0 ? v % span : 0;
            if (e.key_size == 0) o[2] = 0;
            std::memcpy(reinterpret_cast<std::uint8_t*>(&e) + 40, o, sizeof o);
            e.row_count %= 4096;
        } else {
            std::memset(reinterpret_cast<std::uint8_t*>(&e) + 40, 0, 24);
            e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify);
        }
        e.record_kind &= 1;
        e.encoding = e.record_kind == 1 ? 0 : (e.encoding & 1);
        e.mode &= 1;
        if (e.mode == 1 && (sel & 0x40)) e.results_offset = 0;
        e.table = shm::kTableUnspecified;
        if ((sel & 0x30) == 0x30) {
            // a registered column entry (ABI 1.4): results in the arena, the
            // offsets checked against the buffer size taken from `raw`
            e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify_registered_columns);
            e.mode = 0;
            e.key_size = 0;
            const std::uint64_t span = arena + 1 == 0 ? arena : arena + 1;
            e.results_offset = span != 0 ? e.results_offset % span : 0;
            if (sel & 0x08) {
                // a registered buffer per column (ABI 1.6): the set in the arena
                e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify_registered_column_set);
                std::memset(reinterpret_cast<std::uint8_t*>(&e) + 40, 0, 24);
                e.rows_offset = span != 0 ? (e.rows_offset % span) & ~std::uint64_t(7) : 0;
            }
        }
    }

    shm::CheckedSubmission c;
    const shm::Status st = shm::check_submission(e, arena, c);

    // Oracle. The last 24 bytes: zero for verify/nop, the column offsets
    // (key, signature, correlate) for verify_columns.
    std::uint64_t col[3];
    std::memcpy(col, reinterpret_cast<const std::uint8_t*>(&e) + 40, sizeof col);
    if (e.opcode == 5) {
        check_registered(e, arena, st, c, col, raw);
        return;
    }
    if (e.opcode == 6) {
        check_registered_set(e, arena, st, c, col, raw);
        return;
    }
    const bool is_nop = e.opcode == 2, is_verify = e.opcode == 1, is_columns = e.opcode == 3, is_cancel = e.opcode == 4;
    bool fields_ok = (e.flags & ~std::uint16_t(1)) == 0;  // bit 0: kSubmitStrictConfirm (ABI 1.2)
    if (!is_columns) fields_ok = fields_ok && (col[0] | col[1] | col[2]) == 0;
    fields_ok = fields_ok && (is_nop || is_verify || is_columns || is_cancel);
    if (is_nop) fields_ok = fields_ok && e.row_count == 0 && e.rows_offset == 0 && e.results_offset == 0;
    // cancel (ABI 1.3): the target tag in rows_offset, every other field zero.
    if (is_cancel)
        fields_ok = fields_ok && e.flags == 0 && e.row_count == 0 && e.results_offset == 0 && e.record_kind == 0 &&
                    e.key_size == 0 && e.encoding == 0 && e.mode == 0 && e.table == 0;
    if (is_columns && e.key_size == 0) fields_ok = fields_ok && col[2] == 0;
    if (is_verify || is_columns) {
        fields_ok = fields_ok && e.record_kind <= 1 && e.encoding <= 1 && !(e.record_kind == 1 && e.encoding != 0) &&
                    e.mode <= 1;
        if (e.table != 0xFF) {
            const bool schnorr_table = e.table == 2 || e.table == 3;
            fields_ok = fields_ok && e.table <= 3 && (schnorr_table == (e.record_kind == 1));
        }
        if (e.mode == 1) fields_ok = fields_ok && e.results_offset == 0;
    }
    if (!fields_ok) {
        FUZZ_CHECK(st == shm::Status::bad_entry || st == shm::Status::bad_range);
        return;
    }
    if (is_nop) {
        FUZZ_CHECK(st == shm::Status::ok);
        FUZZ_CHECK(c.opcode == shm::Opcode::nop);
        return;
    }
    if (is_cancel) {
        FUZZ_CHECK(st == shm::Status::ok);
        FUZZ_CHECK(c.opcode == shm::Opcode::cancel && c.cancel_tag == e.rows_offset);
        return;
    }
    const u128 stride = (e.record_kind == 0 ? 129 : 128) + u128(e.key_size);
    if (is_columns) {
        check_columns(e, arena, st, c, stride, col);
        return;
    }
    const u128 rows0 = e.rows_offset, rows1 = rows0 + u128(e.row_count) * stride;
    bool in_range = rows1 <= arena;
    if (e.mode == 0) {
        const u128 r0 = e.results_offset, r1 = r0 + e.row_count;
        in_range = in_range && r1 <= arena;
        if (e.row_count != 0) in_range = in_range && !(r0 < rows1 && rows0 < r1);
    }
    if (in_range) {
        FUZZ_CHECK(st == shm::Status::ok);
        FUZZ_CHECK(c.opcode == shm::Opcode::verify);
        FUZZ_CHECK(c.stride == stride);
        FUZZ_CHECK(c.rows_bytes == rows1 - rows0);
        FUZZ_CHECK(c.row_count == e.row_count && c.rows_offset == e.rows_offset);
        FUZZ_CHECK(c.strict_confirm == ((e.flags & 1) != 0));
        FUZZ_CHECK(static_cast<std::uint8_t>(c.mode) == e.mode);
        FUZZ_CHECK(c.mode != wire::Mode::results || c.results_offset == e.results_offset);
    } else {
        FUZZ_CHECK(st == shm::Status::bad_range);
    }
}

void fuzz_header(const std::uint8_t* data, std::size_t size) {
    shm::SegmentHeader h{};
    if (size < 128 + 8) return;
    std::memcpy(&h, data, 128);  // identity and layout lines
    std::uint64_t seg_bytes = 0;
    std::memcpy(&seg_bytes, data + 128, 8);
    if (size > 136 && (data[136] & 1)) {
        // Start from a real layout and let the rest of the input perturb it.
        shm::Layout l;
        const std::uint32_t sq = 1u << (1 + data[136] % 12), cq = sq << (data[136] >> 7);
        if (shm::compute_layout(sq, cq, shm::kMinArenaSize << (data[136] >> 4 & 7), l)) {
            h.magic = shm::kSegmentMagic;
            h.abi_major = shm::kAbiMajor;
            h.header_size = shm::kHeaderSize;
            h.sqe_size = sizeof(shm::SubmissionEntry);
            h.cqe_size = sizeof(shm::CompletionEntry);
            h.sq_entries = l.sq_entries;
            h.cq_entries = l.cq_entries;
            h.sq_mask = l.sq_entries - 1;
            h.cq_mask = l.cq_entries - 1;
            h.sq_entries_offset = l.sq_entries_offset;
            h.cq_entries_offset = l.cq_entries_offset;
            h.arena_offset = l.arena_offset;
            h.arena_size = l.arena_size;
            h.segment_size = l.segment_size;
            if (data[136] & 2) seg_bytes = l.segment_size + (seg_bytes & 0xFFFF);
        }
    }
    const char* why = shm::check_header(h, seg_bytes);
    if (why != nullptr) return;
    // Accepted: the rings and the arena are inside the mapping, in order, and
    // the masks make every slot index land inside its ring.
    FUZZ_CHECK(h.magic == shm::kSegmentMagic && h.abi_major == shm::kAbiMajor);
    FUZZ_CHECK(h.sq_entries >= shm::kMinRingEntries && h.sq_entries <= shm::kMaxRingEntries);
    FUZZ_CHECK((h.sq_entries & (h.sq_entries - 1)) == 0 && (h.cq_entries & (h.cq_entries - 1)) == 0);
    FUZZ_CHECK(h.cq_entries >= h.sq_entries && h.cq_entries <= shm::kMaxRingEntries);
    FUZZ_CHECK(h.sq_mask < h.sq_entries && h.cq_mask < h.cq_entries);
    const u128 sq_end = u128(h.sq_entries_offset) + u128(h.sq_entries) * 64;
    const u128 cq_end = u128(h.cq_entries_offset) + u128(h.cq_entries) * 64;
    FUZZ_CHECK(h.sq_entries_offset >= shm::kHeaderSize);
    FUZZ_CHECK(sq_end <= h.cq_entries_offset);
    FUZZ_CHECK(cq_end <= h.arena_offset);
    FUZZ_CHECK(u128(h.arena_offset) + h.arena_size == h.segment_size);
    FUZZ_CHECK(h.segment_size <= seg_bytes);
    FUZZ_CHECK(h.arena_size >= shm::kMinArenaSize && h.arena_size <= shm::kMaxArenaSize);
    FUZZ_CHECK(h.arena_offset % shm::kPageSize == 0 && h.arena_size % shm::kPageSize == 0);
}

void fuzz_indices(const std::uint8_t* data, std::size_t size) {
    if (size < 12) return;
    std::uint32_t head, tail, entries;
    std::memcpy(&head, data, 4);
    std::memcpy(&tail, data + 4, 4);
    std::memcpy(&entries, data + 8, 4);
    entries = 1u << (entries % 13);
    const bool ok = shm::ring_count_ok(head, tail, entries);
    // Oracle: the producer is at most `entries` ahead, modulo 2^32.
    const std::uint64_t ahead = (std::uint64_t(tail) + (std::uint64_t(1) << 32) - head) & 0xFFFFFFFFull;
    FUZZ_CHECK(ok == (ahead <= entries));
    if (ok) {
        // Every consumed slot index is inside the ring.
        for (std::uint32_t i = head, n = 0; i != tail && n < 8; ++i, ++n) FUZZ_CHECK((i & (entries - 1)) < entries);
    }
}

void fuzz_text(const std::uint8_t* data, std::size_t size) {
    char name[shm::kClientNameSize];
    std::memset(name, 'A', sizeof name);
    std::memcpy(name, data, std::min(size, sizeof name));
    const std::string_view v = shm::read_text(name);
    FUZZ_CHECK(v.size() <= sizeof name);
    FUZZ_CHECK(v.find('\0') == std::string_view::npos);
    char copy[shm::kErrorTextSize];
    shm::copy_text(copy, v);
    FUZZ_CHECK(shm::read_text(copy) == v.substr(0, sizeof copy - 1));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    switch (data[0] % 4) {
    case 0: fuzz_submission(data + 1, size - 1); break;
    case 1: fuzz_header(data + 1, size - 1); break;
    case 2: fuzz_indices(data + 1, size - 1); break;
    default: fuzz_text(data + 1, size - 1); break;
    }
    return 0;
}
