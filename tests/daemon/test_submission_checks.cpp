// SPDX-License-Identifier: MIT
// The ring ABI's validation units: the segment layout and header check, and
// check_submission / check_registered_columns on hostile entries (every
// range overflow-safe, nothing written over what is read), then what a Job
// points at once an entry is accepted (fill_job). No daemon runs here; the
// live answers to the same entries are in test_daemon_ring.cpp.
#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "daemon/schedule/job.hpp"
#include "daemon/serve/job_from_submission.hpp"
#include "daemon/memory/submission_checks.hpp"
#include "ring_entries.hpp"
#include "sigverify/shm_protocol/segment_access.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"

using namespace sigverify;
using namespace sigverify::test;
using shm::Status;

namespace {

Status check(const shm::SubmissionEntry& e, std::uint64_t arena = 1 << 20) {
    shm::CheckedSubmission c;
    return shm::check_submission(e, arena, c);
}

// Each spoil, applied alone to a copy of good, makes an entry check_submission
// refuses as bad_entry (an unknown or contradictory field).
using Spoil = void (*)(shm::SubmissionEntry&);
void require_bad_entries(const shm::SubmissionEntry& good, std::initializer_list<Spoil> spoils) {
    for (Spoil spoil : spoils) {
        shm::SubmissionEntry e = good;
        spoil(e);
        CHECK(check(e) == Status::bad_entry);
    }
}

Status check_detail(const shm::SubmissionEntry& e, shm::ColumnDetail& detail, std::uint64_t arena = 1 << 20) {
    shm::CheckedSubmission c;
    std::uint32_t d = 0;
    const Status st = shm::check_submission(e, arena, c, &d);
    detail = static_cast<shm::ColumnDetail>(d);
    return st;
}

}  // namespace

TEST_CASE("segment layout is computed and checked", "[daemon][ring]") {
    shm::Layout l;
    REQUIRE(shm::compute_layout(64, 64, 1 << 20, l));
    CHECK(l.sq_entries_offset == shm::kHeaderSize);
    CHECK(l.cq_entries_offset == shm::kHeaderSize + 64 * sizeof(shm::SubmissionEntry));
    CHECK(l.arena_offset % shm::kPageSize == 0);
    CHECK(l.segment_size == l.arena_offset + (1 << 20));
    CHECK_FALSE(shm::compute_layout(63, 64, 1 << 20, l));            // not a power of two
    CHECK_FALSE(shm::compute_layout(64, 32, 1 << 20, l));            // cq smaller than sq
    CHECK_FALSE(shm::compute_layout(8192, 8192, 1 << 20, l));        // too many entries
    CHECK_FALSE(shm::compute_layout(64, 64, 1024, l));               // arena too small
    CHECK_FALSE(shm::compute_layout(64, 64, std::uint64_t(1) << 40, l));  // arena too large

    REQUIRE(shm::compute_layout(16, 16, 1 << 16, l));
    shm::SegmentHeader h{};
    h.magic = shm::kSegmentMagic;
    h.abi_major = shm::kAbiMajor;
    h.header_size = shm::kHeaderSize;
    h.sqe_size = sizeof(shm::SubmissionEntry);
    h.cqe_size = sizeof(shm::CompletionEntry);
    h.sq_entries = h.cq_entries = 16;
    h.sq_mask = h.cq_mask = 15;
    h.sq_entries_offset = l.sq_entries_offset;
    h.cq_entries_offset = l.cq_entries_offset;
    h.arena_offset = l.arena_offset;
    h.arena_size = l.arena_size;
    h.segment_size = l.segment_size;
    CHECK(shm::check_header(h, l.segment_size) == nullptr);
    CHECK(shm::check_header(h, l.segment_size - 1) != nullptr);  // mapping smaller than announced
    auto bad = h;
    bad.magic ^= 1;
    CHECK(shm::check_header(bad, l.segment_size) != nullptr);
    bad = h;
    bad.abi_major = shm::kAbiMajor + 1;
    CHECK(shm::check_header(bad, l.segment_size) != nullptr);
    bad = h;
    bad.arena_offset += 64;
    CHECK(shm::check_header(bad, l.segment_size) != nullptr);
    bad = h;
    bad.cq_mask = 31;
    CHECK(shm::check_header(bad, l.segment_size) != nullptr);
}

TEST_CASE("hostile submission entries are rejected with overflow-safe checks", "[daemon][ring]") {
    const std::uint64_t arena = 1 << 20;
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    CHECK(check(verify_entry(0, 132 * 10, 10)) == Status::ok);
    // exactly at the end of the arena
    CHECK(check(verify_entry(arena - 132, 0, 1)) == Status::ok);
    CHECK(check(verify_entry(0, arena - 7, 7)) == Status::ok);
    CHECK(check(verify_entry(arena, 0, 0)) == Status::ok);  // empty range at the end

    CHECK(check(verify_entry(arena - 131, 0, 1)) == Status::bad_range);
    CHECK(check(verify_entry(arena + 1, 0, 0)) == Status::bad_range);
    CHECK(check(verify_entry(max - 10, 0, 1)) == Status::bad_range);
    CHECK(check(verify_entry(0, 200, max)) == Status::bad_range);
    CHECK(check(verify_entry(0, 200, max / 132 + 1)) == Status::bad_range);  // count * stride overflows
    CHECK(check(verify_entry(0, max, 1)) == Status::bad_range);
    CHECK(check(verify_entry(0, arena - 6, 7)) == Status::bad_range);
    CHECK(check(verify_entry(0, 100, 10)) == Status::bad_range);  // results overlap the rows
    CHECK(check(verify_entry(1320, 0, 10)) == Status::ok);        // adjacent, not overlapping

    require_bad_entries(verify_entry(0, 2000, 1), {
        [](shm::SubmissionEntry& e) { e.opcode = 0; },
        [](shm::SubmissionEntry& e) { e.opcode = 77; },
        [](shm::SubmissionEntry& e) { e.record_kind = 2; },
        [](shm::SubmissionEntry& e) { e.encoding = 2; },
        [](shm::SubmissionEntry& e) {
            e.record_kind = static_cast<std::uint8_t>(wire::RecordKind::schnorr);
            e.encoding = 1;  // Schnorr has no encoding choice
        },
        [](shm::SubmissionEntry& e) { e.mode = 2; },
        [](shm::SubmissionEntry& e) { e.table = 4; },
        // A Schnorr table on an ECDSA record.
        [](shm::SubmissionEntry& e) { e.table = static_cast<std::uint8_t>(wire::Table::threshold); },
    });
    auto e = verify_entry(0, 2000, 1);
    e.flags = 2;  // not a known kSubmit* bit
    CHECK(check(e) == Status::bad_entry);
    e = verify_entry(0, 2000, 1);
    e.flags = shm::kSubmitStrictConfirm;
    {
        shm::CheckedSubmission c;
        REQUIRE(shm::check_submission(e, 1 << 20, c) == Status::ok);
        CHECK(c.strict_confirm);
        e.flags = 0;
        REQUIRE(shm::check_submission(e, 1 << 20, c) == Status::ok);
        CHECK_FALSE(c.strict_confirm);
    }
    e = verify_entry(0, 2000, 1);
    e.reserved[5] = 1;
    CHECK(check(e) == Status::bad_entry);
    e = verify_entry(0, 2000, 1);
    e.mode = static_cast<std::uint8_t>(wire::Mode::collect);  // collect must not name results
    CHECK(check(e) == Status::bad_entry);
    e.results_offset = 0;
    CHECK(check(e) == Status::ok);
    shm::SubmissionEntry nop{};
    nop.opcode = static_cast<std::uint8_t>(shm::Opcode::nop);
    CHECK(check(nop) == Status::ok);
    nop.row_count = 1;
    CHECK(check(nop) == Status::bad_entry);
    // tail_size 255 at the largest stride
    e = verify_entry(0, 0, 1);
    e.mode = static_cast<std::uint8_t>(wire::Mode::collect);
    e.key_size = 255;
    CHECK(check(e, 384) == Status::ok);
    CHECK(check(e, 383) == Status::bad_range);
}

TEST_CASE("verify_columns keeps the 64-byte entry and every old offset", "[daemon][ring][columns]") {
    CHECK(shm::kAbiMajor == 1);
    CHECK(shm::kAbiMinor >= shm::kAbiMinorColumns);
    CHECK(static_cast<int>(shm::Opcode::verify_columns) == 3);
    shm::SubmissionEntry e{};
    shm::set_column_offsets(e, shm::ColumnOffsets{0x1111, 0x2222, 0x3333});
    std::uint64_t at40, at48, at56;
    std::memcpy(&at40, reinterpret_cast<const std::uint8_t*>(&e) + 40, 8);
    std::memcpy(&at48, reinterpret_cast<const std::uint8_t*>(&e) + 48, 8);
    std::memcpy(&at56, reinterpret_cast<const std::uint8_t*>(&e) + 56, 8);
    CHECK(at40 == 0x1111);
    CHECK(at48 == 0x2222);
    CHECK(at56 == 0x3333);
    CHECK(shm::column_offsets(e).signature_offset == 0x2222);
    CHECK_FALSE(shm::reserved_words_zero(e));
    // The same bytes make a verify or nop entry malformed, as before.
    e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify);
    e.row_count = 0;
    CHECK(check(e) == Status::bad_entry);
    e.opcode = static_cast<std::uint8_t>(shm::Opcode::nop);
    CHECK(check(e) == Status::bad_entry);
}

TEST_CASE("hostile column entries are rejected with overflow-safe checks", "[daemon][ring][columns]") {
    const std::uint64_t arena = 1 << 20;
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    using D = shm::ColumnDetail;
    D d = D::none;
    const std::uint64_t n = 10;
    const Placed p = place(n, 33, 6);
    auto good = [&] { return column_entry(p.message, p.key, p.signature, p.correlate, p.results, n); };
    CHECK(check_detail(good(), d) == Status::ok);
    CHECK(d == D::none);
    shm::CheckedSubmission c;
    REQUIRE(shm::check_submission(good(), arena, c) == Status::ok);
    CHECK(c.opcode == shm::Opcode::verify_columns);
    CHECK(c.key_offset == p.key);
    CHECK(c.signature_offset == p.signature);
    CHECK(c.correlate_offset == p.correlate);
    CHECK(c.tail_size == 6);
    CHECK(c.rows_bytes == n * (129 + 6));

    // Every column exactly at the end of the arena is fine; one byte more is not.
    auto e = good();
    e.rows_offset = arena - n * 32;
    CHECK(check_detail(e, d) == Status::ok);
    e.rows_offset = arena - n * 32 + 1;
    CHECK(check_detail(e, d) == Status::bad_range);
    CHECK(d == D::message);
    e = good();
    shm::set_column_offsets(e, {arena - n * 33 + 1, p.signature, p.correlate});
    CHECK(check_detail(e, d) == Status::bad_range);
    CHECK(d == D::key);
    e = good();
    shm::set_column_offsets(e, {p.key, arena - n * 64 + 1, p.correlate});
    CHECK(check_detail(e, d) == Status::bad_range);
    CHECK(d == D::signature);
    e = good();
    shm::set_column_offsets(e, {p.key, p.signature, arena - n * 6 + 1});
    CHECK(check_detail(e, d) == Status::bad_range);
    CHECK(d == D::correlate);
    e = good();
    e.results_offset = arena - n + 1;
    CHECK(check_detail(e, d) == Status::bad_range);
    CHECK(d == D::results);

    // Offsets whose sums overflow 64 bits.
    for (int column = 0; column < 5; ++column) {
        e = good();
        shm::ColumnOffsets o = shm::column_offsets(e);
        switch (column) {
        case 0: e.rows_offset = max - 10; break;
        case 1: o.key_offset = max - 10; break;
        case 2: o.signature_offset = max; break;
        case 3: o.correlate_offset = max - 5; break;
        case 4: e.results_offset = max - 2; break;
        }
        shm::set_column_offsets(e, o);
        INFO("column " << column);
        CHECK(check_detail(e, d) == Status::bad_range);
    }
    // Counts whose products overflow, or that cannot fit the arena at all.
    e = good();
    e.row_count = max;
    CHECK(check_detail(e, d) == Status::bad_range);
    CHECK(d == D::row_count);
    e.row_count = max / 32 + 1;
    CHECK(check_detail(e, d) == Status::bad_range);
    e.row_count = arena / (129 + 6) + 1;
    CHECK(check_detail(e, d) == Status::bad_range);
    CHECK(d == D::row_count);
    // tail_size too large for the arena: 255-byte correlate entries.
    e = column_entry(0, 0, 0, 0, 0, 4000, 255, wire::Mode::collect);
    CHECK(check_detail(e, d) == Status::bad_range);  // 4000 x 384 > 1 MiB
    e = column_entry(0, 0, 0, arena - 255 * 100 + 1, 0, 100, 255, wire::Mode::collect);
    CHECK(check_detail(e, d) == Status::bad_range);
    CHECK(d == D::correlate);

    // The written range must not overlap a column that is read.
    e = good();
    e.results_offset = p.key + 5;
    CHECK(check_detail(e, d) == Status::bad_range);
    CHECK(d == D::overlap);
    e = good();
    e.results_offset = p.message;
    CHECK(check_detail(e, d) == Status::bad_range);
    CHECK(d == D::overlap);
    e = good();
    e.results_offset = p.signature + n * 64 - 1;  // last byte of the signatures
    CHECK(check_detail(e, d) == Status::bad_range);
    e = good();
    e.results_offset = p.correlate;  // results over the correlate
    CHECK(check_detail(e, d) == Status::bad_range);
    CHECK(d == D::overlap);
    e = good();
    e.results_offset = p.signature + n * 64;  // adjacent: fine
    shm::set_column_offsets(e, {p.key, p.signature, p.results});
    CHECK(check_detail(e, d) == Status::ok);
    // Collect: the correlate is written and must not overlap message, key or signature.
    e = column_entry(p.message, p.key, p.signature, p.signature + 64, 0, n, 6, wire::Mode::collect);
    CHECK(check_detail(e, d) == Status::bad_range);
    CHECK(d == D::overlap);
    e = column_entry(p.message, p.key, p.signature, p.message + 3, 0, n, 6, wire::Mode::collect);
    CHECK(check_detail(e, d) == Status::bad_range);
    e = column_entry(p.message, p.key, p.signature, p.correlate, 0, n, 6, wire::Mode::collect);
    CHECK(check_detail(e, d) == Status::ok);
    // Columns that are only read may share bytes (nothing is written there).
    e = column_entry(0, 0, 0, p.correlate, p.results, n);
    CHECK(check_detail(e, d) == Status::ok);
    // Empty batches: empty ranges anywhere inside the arena, overlap nothing.
    e = column_entry(arena, arena, arena, arena, arena, 0);
    CHECK(check_detail(e, d) == Status::ok);
    e = column_entry(arena + 1, 0, 0, 0, 0, 0);
    CHECK(check_detail(e, d) == Status::bad_range);

    // Malformed fields.
    require_bad_entries(good(), {
        [](shm::SubmissionEntry& e) { e.flags = 2; },
        [](shm::SubmissionEntry& e) { e.flags = 0x8000; },
        [](shm::SubmissionEntry& e) { e.mode = 2; },
        [](shm::SubmissionEntry& e) { e.record_kind = 2; },
    });
    e = column_entry(p.message, p.key, p.signature, p.correlate, p.results, n, 0);  // no correlate, offset given
    CHECK(check(e) == Status::bad_entry);
    shm::set_column_offsets(e, {p.key, p.signature, 0});
    CHECK(check(e) == Status::ok);
    e = column_entry(p.message, p.key, p.signature, p.correlate, p.results, n, 6, wire::Mode::collect);
    CHECK(check(e) == Status::bad_entry);  // collect names no results
    e = good();
    e.record_kind = static_cast<std::uint8_t>(wire::RecordKind::schnorr);
    e.encoding = 1;
    CHECK(check(e) == Status::bad_entry);
    e.encoding = 0;
    CHECK(check(e) == Status::ok);
    e.table = static_cast<std::uint8_t>(wire::Table::multisig);  // an ECDSA table on Schnorr columns
    CHECK(check(e) == Status::bad_entry);
}


// ---------------------------------------------------------------------------
// From a checked entry to a Job: fill_job (daemon/serve/job_from_submission.hpp)
// ---------------------------------------------------------------------------
namespace {

constexpr std::uint64_t kArenaBytes = 1 << 16;

// A Job as a finished batch leaves its slot: stale pointers and state.
daemon::Job used_job() {
    daemon::Job j;
    static std::uint8_t stale[64];
    j.rows = wire::RowSpan{wire::RecordKind::schnorr, 9, wire::SigEncoding::opaque, stale, 7};
    j.is_columns = true;
    j.columns = wire::ColumnSpan{wire::RecordKind::schnorr, wire::SigEncoding::opaque, 7, 9, stale, stale, stale,
                                 stale};
    j.results = stale;
    j.next_row = 5;
    j.running = 2;
    j.tally.valid = 3;
    j.status = Status::cancelled;
    j.rows_rewritten = true;
    return j;
}

shm::CheckedSubmission checked(const shm::SubmissionEntry& e, std::uint64_t arena = kArenaBytes) {
    shm::CheckedSubmission c;
    REQUIRE(shm::check_submission(e, arena, c) == Status::ok);
    return c;
}

void require_fresh_state(const daemon::Job& j) {
    CHECK(j.next_row == 0);
    CHECK(j.running == 0);
    CHECK(j.tally.valid == 0);
    CHECK(j.tally.invalid == 0);
    CHECK(j.status == Status::ok);
    CHECK_FALSE(j.rows_rewritten);
}

}  // namespace

TEST_CASE("fill_job: packed rows and their results in the arena", "[daemon][ring][job]") {
    std::vector<std::uint8_t> arena(kArenaBytes);
    shm::SubmissionEntry e = verify_entry(1000, 9000, 20);
    e.record_kind = static_cast<std::uint8_t>(wire::RecordKind::schnorr);
    e.table = static_cast<std::uint8_t>(wire::Table::schnorr);
    daemon::Job j = used_job();
    daemon::fill_job(j, checked(e), daemon::SubmissionMemory{arena.data(), false}, daemon::ConfirmRule::groups);
    CHECK_FALSE(j.is_columns);
    CHECK(j.rows.kind == wire::RecordKind::schnorr);
    CHECK(j.rows.tail_size == 3);
    CHECK(j.rows.count == 20);
    CHECK(j.rows.data == arena.data() + 1000);
    CHECK(j.columns.count == 0);
    CHECK(j.columns.message == nullptr);
    CHECK(j.results == arena.data() + 9000);
    CHECK(j.mode == wire::Mode::results);
    CHECK(j.table == static_cast<std::uint8_t>(wire::Table::schnorr));
    CHECK(j.confirm == daemon::ConfirmRule::groups);
    require_fresh_state(j);

    // Collect mode writes no results; the client's strict flag overrides the daemon's rule.
    e.mode = static_cast<std::uint8_t>(wire::Mode::collect);
    e.results_offset = 0;
    e.flags = shm::kSubmitStrictConfirm;
    daemon::fill_job(j, checked(e), daemon::SubmissionMemory{arena.data(), false}, daemon::ConfirmRule::groups);
    CHECK(j.mode == wire::Mode::collect);
    CHECK(j.results == nullptr);
    CHECK(j.confirm == daemon::ConfirmRule::strict);
}

TEST_CASE("fill_job: columns and the correlate in the arena", "[daemon][ring][job][columns]") {
    std::vector<std::uint8_t> arena(kArenaBytes);
    const std::uint64_t n = 30;
    const Placed p = place(n, 33, 6);
    for (wire::Mode mode : {wire::Mode::results, wire::Mode::collect}) {
        INFO(wire::to_string(mode));
        shm::SubmissionEntry e = column_entry(p.message, p.key, p.signature, p.correlate,
                                              mode == wire::Mode::results ? p.results : 0, n, 6, mode);
        e.encoding = static_cast<std::uint8_t>(wire::SigEncoding::compact);
        e.table = static_cast<std::uint8_t>(wire::Table::multisig);
        daemon::Job j = used_job();
        daemon::fill_job(j, checked(e), daemon::SubmissionMemory{arena.data(), false}, daemon::ConfirmRule::strict);
        CHECK(j.is_columns);
        // The scheduler chunks by rows.count; a column job has no row memory.
        CHECK(j.rows.count == n);
        CHECK(j.rows.data == nullptr);
        CHECK(j.rows.tail_size == 0);
        CHECK(j.rows.encoding == wire::SigEncoding::compact);
        const wire::ColumnSpan& c = j.columns;
        CHECK(c.check() == wire::ColumnError::none);
        CHECK(c.kind == wire::RecordKind::ecdsa);
        CHECK(c.encoding == wire::SigEncoding::compact);
        CHECK(c.count == n);
        CHECK(c.message == arena.data() + p.message);
        CHECK(c.key == arena.data() + p.key);
        CHECK(c.signature == arena.data() + p.signature);
        CHECK(c.tail_size == 6);
        CHECK(c.correlate == arena.data() + p.correlate);
        CHECK(j.results == (mode == wire::Mode::results ? arena.data() + p.results : nullptr));
        CHECK(j.confirm == daemon::ConfirmRule::strict);
        require_fresh_state(j);
    }
}

TEST_CASE("fill_job: registered columns are no pointers (read with pread), verdicts go to the arena",
          "[daemon][ring][job][registered]") {
    std::vector<std::uint8_t> arena(kArenaBytes);
    const std::uint64_t buffer_size = 1 << 16;
    const std::uint64_t n = 40;
    shm::SubmissionEntry e = verify_entry(128, 4096, n);  // rows_offset: the message column, in the buffer
    e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify_registered_columns);
    e.record_kind = static_cast<std::uint8_t>(wire::RecordKind::schnorr);
    e.key_size = 0;  // no correlate in a registered batch
    shm::set_registered_offsets(e, shm::RegisteredColumnOffsets{8192, 16384, 7});
    shm::CheckedSubmission c;
    REQUIRE(shm::check_submission(e, kArenaBytes, c) == Status::ok);
    REQUIRE(shm::check_registered_columns(c, buffer_size) == Status::ok);
    daemon::Job j = used_job();
    daemon::fill_job(j, c, daemon::SubmissionMemory{arena.data(), true}, daemon::ConfirmRule::groups);
    CHECK(j.is_columns);
    CHECK(j.rows.count == n);
    CHECK(j.rows.data == nullptr);
    CHECK(j.columns.kind == wire::RecordKind::schnorr);
    CHECK(j.columns.count == n);
    // The scheduler reads the files (the job's RegisteredColumnSource): no pointer into any memory.
    CHECK(j.columns.message == nullptr);
    CHECK(j.columns.key == nullptr);
    CHECK(j.columns.signature == nullptr);
    // A registered batch has no correlate: nothing of the buffer is ever written.
    CHECK(j.columns.tail_size == 0);
    CHECK(j.columns.correlate == nullptr);
    CHECK(j.results == arena.data() + 4096);
    require_fresh_state(j);
}

namespace {

constexpr std::uint64_t kBoundaryArena = 1 << 16;

// A registered entry of n rows of `kind`, results at results_offset: the
// one-buffer form (columns at offsets of buffer 7) or the set form (the set
// at set_offset in the arena).
shm::SubmissionEntry registered_entry(bool set_form, wire::RecordKind kind, std::uint64_t n,
                                      std::uint64_t results_offset, std::uint64_t set_offset = 0) {
    shm::SubmissionEntry e = verify_entry(set_offset, results_offset, n);
    e.opcode = static_cast<std::uint8_t>(set_form ? shm::Opcode::verify_registered_column_set
                                                  : shm::Opcode::verify_registered_columns);
    e.record_kind = static_cast<std::uint8_t>(kind);
    e.key_size = 0;
    if (!set_form) shm::set_registered_offsets(e, shm::RegisteredColumnOffsets{0, 0, 7});
    return e;
}

// The whole check of a registered entry: the entry's own part, then its
// columns against buffers of sizes[] (message, key, signature; the
// one-buffer form uses sizes[0]). detail: which range failed.
Status check_registered(bool set_form, shm::SubmissionEntry e, const std::uint64_t (&offsets)[3],
                        const std::uint64_t (&sizes)[3], shm::ColumnDetail& detail) {
    if (!set_form) {
        e.rows_offset = offsets[0];
        shm::set_registered_offsets(e, shm::RegisteredColumnOffsets{offsets[1], offsets[2], 7});
    }
    shm::CheckedSubmission c;
    std::uint32_t d = 0;
    Status st = shm::check_submission(e, kBoundaryArena, c, &d);
    if (st == Status::ok) {
        if (set_form) {
            shm::RegisteredColumnSet set{};
            set.message = {1, offsets[0]};
            set.key = {2, offsets[1]};
            set.signature = {3, offsets[2]};
            st = shm::check_registered_column_set(c, set, sizes, &d);
        } else {
            st = shm::check_registered_columns(c, sizes[0], &d);
        }
    }
    detail = static_cast<shm::ColumnDetail>(d);
    return st;
}

}  // namespace

TEST_CASE("registered forms: every range check at its exact boundary (in at the last byte, out one byte past)",
          "[daemon][ring][registered][boundary]") {
    constexpr std::uint64_t n = 10;
    constexpr shm::ColumnDetail kColumn[3] = {shm::ColumnDetail::message, shm::ColumnDetail::key,
                                              shm::ColumnDetail::signature};
    for (bool set_form : {false, true})
        for (wire::RecordKind kind : {wire::RecordKind::ecdsa, wire::RecordKind::schnorr}) {
            INFO((set_form ? "verify_registered_column_set" : "verify_registered_columns") << ", "
                 << wire::to_string(kind));
            const std::uint64_t widths[3] = {wire::kColumnMessageWidth, wire::column_key_width(kind),
                                             wire::kColumnSignatureWidth};
            // Buffers just large enough for every column side by side (the one-buffer form) or
            // for its own column (the set form).
            const std::uint64_t total = n * (widths[0] + widths[1] + widths[2]);
            const std::uint64_t sizes[3] = {set_form ? n * widths[0] + 100 : total, set_form ? n * widths[1] + 200 : total,
                                            set_form ? n * widths[2] + 300 : total};
            // The last column ends at its buffer's last byte.
            std::uint64_t at[3];
            if (set_form) {
                for (int i = 0; i < 3; ++i) at[i] = sizes[i] - n * widths[i];
            } else {
                at[0] = 0;
                at[1] = n * widths[0];
                at[2] = total - n * widths[2];
            }
            const shm::SubmissionEntry e = registered_entry(set_form, kind, n, kBoundaryArena - n, 64);
            shm::ColumnDetail d{};
            REQUIRE(check_registered(set_form, e, at, sizes, d) == Status::ok);
            // Each column whose end can move one byte past its buffer.
            for (int i = 0; i < 3; ++i) {
                std::uint64_t moved[3] = {at[0], at[1], at[2]};
                if (!set_form && i < 2) continue;  // side by side: only the last one touches the end
                ++moved[i];
                INFO("column " << i << " one byte past its buffer's end");
                CHECK(check_registered(set_form, e, moved, sizes, d) == Status::bad_range);
                CHECK(d == kColumn[i]);
            }
            if (!set_form) {
                // Every column alone at the buffer's end: in; one byte further: out.
                for (int i = 0; i < 3; ++i) {
                    std::uint64_t alone[3] = {0, 0, 0};
                    alone[i] = total - n * widths[i];
                    CHECK(check_registered(set_form, e, alone, sizes, d) == Status::ok);
                    ++alone[i];
                    CHECK(check_registered(set_form, e, alone, sizes, d) == Status::bad_range);
                    CHECK(d == kColumn[i]);
                }
                // As many rows as the buffer holds records: in; one more: out, before any column.
                const std::uint64_t most = total / wire::record_size(kind);
                const std::uint64_t zero[3] = {0, 0, 0};
                const std::uint64_t one_size[3] = {most * wire::record_size(kind), 0, 0};
                shm::SubmissionEntry full = registered_entry(false, kind, most, 0);
                CHECK(check_registered(false, full, zero, one_size, d) == Status::ok);
                full.row_count = most + 1;
                CHECK(check_registered(false, full, zero, one_size, d) == Status::bad_range);
                CHECK(d == shm::ColumnDetail::row_count);
            } else {
                // The set itself: its last byte at the arena's end is in; 8 bytes later (the
                // next aligned offset) is out, and so is an unaligned one.
                shm::SubmissionEntry last = registered_entry(true, kind, n, 0, kBoundaryArena - 64);
                CHECK(check_registered(true, last, at, sizes, d) == Status::ok);
                last.rows_offset += 8;
                CHECK(check_registered(true, last, at, sizes, d) == Status::bad_range);
                CHECK(d == shm::ColumnDetail::column_set);
                last.rows_offset = 68;
                CHECK(check_registered(true, last, at, sizes, d) == Status::bad_range);
                CHECK(d == shm::ColumnDetail::column_set);
            }
            // The results, in the arena, in either form: ending at its last byte is in.
            shm::SubmissionEntry past = e;
            past.results_offset = kBoundaryArena - n + 1;
            CHECK(check_registered(set_form, past, at, sizes, d) == Status::bad_range);
            CHECK(d == shm::ColumnDetail::results);
        }
}
