// SPDX-License-Identifier: MIT
// The daemon's validation of one submission entry from a client's ring.
//
// Every field of an entry is hostile: the reader copies the entry out of
// shared memory and calls check_submission on the copy, which accepts it only
// when every opcode/enum value is known, reserved bits are zero and every range
// it names (rows, columns, results) lies inside the arena without overflow and
// without a written range overlapping a read one. Daemon-only: not installed.
//
// The layout: one checker per opcode (kEntryCheckers, the table
// check_submission dispatches on), the fields every verifying opcode shares
// checked once (detail::check_verify_fields), and every range through the two
// helpers range_in_arena and ranges_overlap.
#pragma once

#include <cstddef>
#include <cstdint>

#include "sigverify/shm_protocol/segment_access.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::shm {

// Validation of one submission (a copy, never the shared slot itself).
// On success fills the checked values. All arithmetic is overflow-safe.
struct CheckedSubmission {
    Opcode opcode = Opcode::invalid;
    wire::RecordKind kind = wire::RecordKind::ecdsa;
    wire::SigEncoding encoding = wire::SigEncoding::opaque;
    wire::Mode mode = wire::Mode::results;
    std::uint8_t table = kTableUnspecified;
    bool strict_confirm = false;      // kSubmitStrictConfirm
    std::uint64_t cancel_tag = 0;     // cancel: the user_tag of the batch to cancel
    std::size_t tail_size = 0;        // verify: row tail bytes; verify_columns: tail_size
    std::uint64_t rows_offset = 0;   // verify: row 0; verify_columns: the message column
    std::uint64_t results_offset = 0;
    std::uint64_t row_count = 0;
    std::uint64_t stride = 0;        // record + tail_size (verify_columns: bytes per row over all columns)
    std::uint64_t rows_bytes = 0;    // row_count * stride
    // verify_columns only.
    std::uint64_t key_offset = 0;
    std::uint64_t signature_offset = 0;
    std::uint64_t correlate_offset = 0;  // 0 when tail_size (tail_size) is 0
    // verify_registered_columns: the buffer the columns are in (rows_offset,
    // key_offset and signature_offset are relative to it; checked against its
    // size by check_registered_columns once the session has looked it up).
    std::uint64_t buffer_id = 0;
    // verify_registered_column_set: the arena offset of its
    // RegisteredColumnSet (rows_offset is 0 until the session copied the set
    // out and check_registered_column_set filled the offsets from it).
    std::uint64_t column_set_offset = 0;
};

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

// The fields every verifying opcode shares, in this order: a known record
// kind; a known encoding, 0 for Schnorr rows (they have none); a known mode;
// no table or one whose rows are of that kind. Fills kind, encoding, mode,
// table and strict_confirm; false: bad_entry. (The flags were checked
// before any opcode's checker runs.)
inline bool check_verify_fields(const SubmissionEntry& e, CheckedSubmission& c) {
    if (e.record_kind > static_cast<std::uint8_t>(wire::RecordKind::schnorr)) return false;
    c.kind = static_cast<wire::RecordKind>(e.record_kind);
    if (!wire::encoding_on_wire_ok(c.kind, e.encoding)) return false;
    c.encoding = static_cast<wire::SigEncoding>(e.encoding);
    if (e.mode > static_cast<std::uint8_t>(wire::Mode::collect)) return false;
    c.mode = static_cast<wire::Mode>(e.mode);
    if (e.table != kTableUnspecified && (e.table > static_cast<std::uint8_t>(wire::Table::threshold) ||
                                         wire::record_kind(static_cast<wire::Table>(e.table)) != c.kind))
        return false;
    c.table = e.table;
    c.strict_confirm = (e.flags & kSubmitStrictConfirm) != 0;
    return true;
}
}  // namespace detail

// The parts of a verify_registered_columns entry that do not depend on the
// buffer: known enums, results mode, no tail, the results inside the arena.
inline Status check_registered_entry(const SubmissionEntry& e, std::uint64_t arena_size, CheckedSubmission& out,
                                     std::uint32_t* detail_out) {
    CheckedSubmission c;
    const bool column_set = e.opcode == static_cast<std::uint8_t>(Opcode::verify_registered_column_set);
    c.opcode = column_set ? Opcode::verify_registered_column_set : Opcode::verify_registered_columns;
    // The set form names its columns in the arena: bytes 40..63 are reserved.
    if (column_set && !reserved_words_zero(e)) return Status::bad_entry;
    if (!detail::check_verify_fields(e, c)) return Status::bad_entry;
    // Collect mode would write into the buffer, which the daemon maps read-only.
    if (c.mode != wire::Mode::results || e.key_size != 0) return Status::bad_entry;
    c.stride = wire::record_size(c.kind);
    c.row_count = e.row_count;
    c.results_offset = e.results_offset;
    if (column_set) {
        c.column_set_offset = e.rows_offset;
    } else {
        c.rows_offset = e.rows_offset;
        const RegisteredColumnOffsets o = registered_offsets(e);
        c.key_offset = o.key_offset;
        c.signature_offset = o.signature_offset;
        c.buffer_id = o.buffer_id;
    }
    if (c.row_count > arena_size || !detail::range_in_arena(c.results_offset, c.row_count, 1, arena_size)) {
        if (detail_out != nullptr) *detail_out = static_cast<std::uint32_t>(ColumnDetail::results);
        return Status::bad_range;
    }
    if (column_set && (c.column_set_offset % 8 != 0 ||
                       !detail::range_in_arena(c.column_set_offset, 1, sizeof(RegisteredColumnSet), arena_size))) {
        if (detail_out != nullptr) *detail_out = static_cast<std::uint32_t>(ColumnDetail::column_set);
        return Status::bad_range;
    }
    out = c;
    return Status::ok;
}

// One column of a verify_registered_column_set entry, [offset, offset +
// row_count * width) inside its buffer of `size` bytes, without overflow.
constexpr bool registered_column_fits(std::uint64_t offset, std::uint64_t row_count, std::uint64_t width,
                                      std::uint64_t size) {
    return row_count <= size / width && detail::range_in_arena(offset, row_count, width, size);
}

namespace detail {
// A range check's one way out: bad_range, with which range in *detail_out.
inline Status range_error(std::uint32_t* detail_out, ColumnDetail d) {
    if (detail_out != nullptr) *detail_out = static_cast<std::uint32_t>(d);
    return Status::bad_range;
}

// c's message, key and signature columns (row_count rows each) at offsets[i]
// inside a buffer of sizes[i] bytes, in that order: the first that is not
// answers bad_range with its detail.
inline Status check_registered_ranges(const CheckedSubmission& c, const std::uint64_t (&offsets)[3],
                                      const std::uint64_t (&sizes)[3], std::uint32_t* detail_out) {
    const std::uint64_t widths[3] = {wire::kColumnMessageWidth, wire::column_key_width(c.kind),
                                     wire::kColumnSignatureWidth};
    constexpr ColumnDetail details[3] = {ColumnDetail::message, ColumnDetail::key, ColumnDetail::signature};
    for (int i = 0; i < 3; ++i)
        if (!registered_column_fits(offsets[i], c.row_count, widths[i], sizes[i]))
            return range_error(detail_out, details[i]);
    return Status::ok;
}
}  // namespace detail

// The columns of a checked verify_registered_column_set entry, each inside
// its own buffer (sizes in message, key, signature order), from the set the
// session copied out of the arena; fills rows_offset, key_offset and
// signature_offset (each relative to its own buffer) and rows_bytes.
// bad_entry when the set's reserved words are not 0; bad_range with the
// column's detail when one passes its buffer's end.
inline Status check_registered_column_set(CheckedSubmission& c, const RegisteredColumnSet& set,
                                          const std::uint64_t (&sizes)[3], std::uint32_t* detail_out = nullptr) {
    if (set.reserved[0] != 0 || set.reserved[1] != 0) return Status::bad_entry;
    const std::uint64_t offsets[3] = {set.message.offset, set.key.offset, set.signature.offset};
    if (const Status st = detail::check_registered_ranges(c, offsets, sizes, detail_out); st != Status::ok) return st;
    const std::uint64_t n = c.row_count;
    c.rows_offset = set.message.offset;
    c.key_offset = set.key.offset;
    c.signature_offset = set.signature.offset;
    c.rows_bytes = n * c.stride;  // n <= sizes[2] / 64 <= 2^58: no overflow
    return Status::ok;
}

// The columns of a checked verify_registered_columns entry inside its buffer
// of buffer_size bytes, without overflow; sets rows_bytes. The results are in
// the arena and the buffer is never written, so nothing can overlap.
inline Status check_registered_columns(CheckedSubmission& c, std::uint64_t buffer_size,
                                       std::uint32_t* detail_out = nullptr) {
    // More rows than the buffer holds at all, before any column is looked at.
    if (c.row_count > buffer_size / c.stride) return detail::range_error(detail_out, ColumnDetail::row_count);
    c.rows_bytes = c.row_count * c.stride;
    const std::uint64_t offsets[3] = {c.rows_offset, c.key_offset, c.signature_offset};
    const std::uint64_t sizes[3] = {buffer_size, buffer_size, buffer_size};
    return detail::check_registered_ranges(c, offsets, sizes, detail_out);
}

namespace detail {

// nop: nothing named, every field 0 (the reserved words too).
inline Status check_nop(const SubmissionEntry& e, std::uint64_t, CheckedSubmission& out, std::uint32_t*) {
    if (!reserved_words_zero(e) || e.row_count != 0 || e.rows_offset != 0 || e.results_offset != 0)
        return Status::bad_entry;
    out = CheckedSubmission{};
    out.opcode = Opcode::nop;
    return Status::ok;
}

// cancel: the target tag rides in rows_offset; everything else must be zero.
inline Status check_cancel(const SubmissionEntry& e, std::uint64_t, CheckedSubmission& out, std::uint32_t*) {
    if (!reserved_words_zero(e) || e.row_count != 0 || e.results_offset != 0 || e.flags != 0 || e.record_kind != 0 ||
        e.key_size != 0 || e.encoding != 0 || e.mode != 0 || e.table != 0)
        return Status::bad_entry;
    out = CheckedSubmission{};
    out.opcode = Opcode::cancel;
    out.cancel_tag = e.rows_offset;
    return Status::ok;
}

// verify: packed rows [rows_offset, + row_count * stride) in the arena; in
// results mode the results [results_offset, + row_count) too, not
// overlapping the rows; in collect mode no results offset. Range failures
// carry no detail (ColumnDetail names columns).
inline Status check_rows(const SubmissionEntry& e, std::uint64_t arena_size, CheckedSubmission& out, std::uint32_t*) {
    CheckedSubmission c;
    c.opcode = Opcode::verify;
    if (!reserved_words_zero(e) || !check_verify_fields(e, c)) return Status::bad_entry;
    c.tail_size = e.key_size;
    c.stride = wire::stride(c.kind, c.tail_size);
    c.row_count = e.row_count;
    c.rows_offset = e.rows_offset;
    c.results_offset = e.results_offset;
    if (c.row_count > arena_size / c.stride) return Status::bad_range;
    c.rows_bytes = c.row_count * c.stride;  // <= arena_size, no overflow
    if (!range_in_arena(c.rows_offset, 1, c.rows_bytes, arena_size)) return Status::bad_range;
    if (c.mode == wire::Mode::results) {
        if (!range_in_arena(c.results_offset, c.row_count, 1, arena_size) ||
            ranges_overlap(c.results_offset, c.row_count, c.rows_offset, c.rows_bytes))
            return Status::bad_range;
    } else if (c.results_offset != 0) {
        return Status::bad_entry;
    }
    out = c;
    return Status::ok;
}

// verify_columns: the message, key, signature (and, with a tail, correlate)
// columns in the arena; in results mode the results too, overlapping none of
// them; in collect mode no results offset and the correlates (written)
// overlapping no column that is read. Range failures name the column.
inline Status check_columns(const SubmissionEntry& e, std::uint64_t arena_size, CheckedSubmission& out,
                            std::uint32_t* detail_out) {
    CheckedSubmission c;
    c.opcode = Opcode::verify_columns;
    if (!check_verify_fields(e, c)) return Status::bad_entry;
    c.tail_size = e.key_size;
    c.stride = wire::stride(c.kind, c.tail_size);
    c.row_count = e.row_count;
    c.rows_offset = e.rows_offset;
    c.results_offset = e.results_offset;
    if (c.mode == wire::Mode::collect && c.results_offset != 0) return Status::bad_entry;
    const ColumnOffsets o = column_offsets(e);
    c.key_offset = o.key_offset;
    c.signature_offset = o.signature_offset;
    c.correlate_offset = o.correlate_offset;
    const std::uint64_t tail = c.tail_size;
    if (tail == 0 && c.correlate_offset != 0) return Status::bad_entry;
    auto fail = [detail_out](ColumnDetail d) { return range_error(detail_out, d); };
    // The bound also keeps every count * width below (see range_in_arena):
    // each width is at most record + tail_size = stride.
    if (c.row_count > arena_size / c.stride) return fail(ColumnDetail::row_count);
    c.rows_bytes = c.row_count * c.stride;
    const std::uint64_t n = c.row_count;
    struct Column {
        std::uint64_t offset, width;
        ColumnDetail detail;
    };
    const Column read[3] = {{c.rows_offset, wire::kColumnMessageWidth, ColumnDetail::message},
                            {c.key_offset, wire::column_key_width(c.kind), ColumnDetail::key},
                            {c.signature_offset, wire::kColumnSignatureWidth, ColumnDetail::signature}};
    for (const Column& col : read)
        if (!range_in_arena(col.offset, n, col.width, arena_size)) return fail(col.detail);
    if (tail != 0 && !range_in_arena(c.correlate_offset, n, tail, arena_size)) return fail(ColumnDetail::correlate);
    // What this entry writes: the results, or in collect mode the correlates.
    const bool results = c.mode == wire::Mode::results;
    if (results && !range_in_arena(c.results_offset, n, 1, arena_size)) return fail(ColumnDetail::results);
    const std::uint64_t written = results ? c.results_offset : c.correlate_offset;
    const std::uint64_t written_bytes = results ? n : n * tail;
    for (const Column& col : read)
        if (ranges_overlap(written, written_bytes, col.offset, n * col.width)) return fail(ColumnDetail::overlap);
    if (results && ranges_overlap(written, written_bytes, c.correlate_offset, n * tail))
        return fail(ColumnDetail::overlap);
    out = c;
    return Status::ok;
}

using EntryChecker = Status (*)(const SubmissionEntry&, std::uint64_t, CheckedSubmission&, std::uint32_t*);
struct EntryRule {
    Opcode opcode;
    EntryChecker check;
};
// Every opcode a ring entry may carry, and its checker; any other is bad_entry.
inline constexpr EntryRule kEntryCheckers[] = {
    {Opcode::nop, check_nop},
    {Opcode::verify, check_rows},
    {Opcode::verify_columns, check_columns},
    {Opcode::cancel, check_cancel},
    {Opcode::verify_registered_columns, check_registered_entry},
    {Opcode::verify_registered_column_set, check_registered_entry},
};

}  // namespace detail

inline Status check_submission(const SubmissionEntry& e, std::uint64_t arena_size, CheckedSubmission& out,
                               std::uint32_t* detail_out = nullptr) {
    if (detail_out != nullptr) *detail_out = 0;
    if ((e.flags & ~kSubmitKnownFlags) != 0) return Status::bad_entry;
    for (const detail::EntryRule& rule : detail::kEntryCheckers)
        if (e.opcode == static_cast<std::uint8_t>(rule.opcode)) return rule.check(e, arena_size, out, detail_out);
    return Status::bad_entry;
}

}  // namespace sigverify::shm
