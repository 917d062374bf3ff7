// SPDX-License-Identifier: MIT
// The ring ABI under hostile input: layout and validation units, then a raw
// client that speaks the protocol by hand against a real daemon and writes
// malformed entries, out-of-range indices and a truncated segment.
#include <poll.h>
#include <sys/mman.h>

#include <algorithm>
#include <limits>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "raw_session.hpp"
#include "ops/ops_helpers.hpp"
#include "reference/columns.hpp"
#include "shm_protocol/doorbell.hpp"
#include "shm_protocol/fd_passing.hpp"
#include "shm_protocol/segment_access.hpp"
#include "daemon/submission_checks.hpp"
#include "shm_protocol/segment_layout.hpp"

using namespace sigverify;
using namespace sigverify::test;
using shm::Status;

namespace {

shm::SubmissionEntry verify_entry(std::uint64_t rows_offset, std::uint64_t results_offset, std::uint64_t count) {
    shm::SubmissionEntry e{};
    e.user_tag = 42;
    e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify);
    e.record_kind = static_cast<std::uint8_t>(wire::RecordKind::ecdsa);
    e.key_size = 3;
    e.mode = static_cast<std::uint8_t>(wire::Mode::results);
    e.table = shm::kTableUnspecified;
    e.rows_offset = rows_offset;
    e.results_offset = results_offset;
    e.row_count = count;
    return e;
}

Status check(const shm::SubmissionEntry& e, std::uint64_t arena = 1 << 20) {
    shm::CheckedSubmission c;
    return shm::check_submission(e, arena, c);
}

// A verify_columns entry (ECDSA unless changed): message, key, signature and
// correlate columns at the given offsets.
shm::SubmissionEntry column_entry(std::uint64_t message, std::uint64_t key, std::uint64_t signature,
                                  std::uint64_t correlate, std::uint64_t results, std::uint64_t count,
                                  std::uint8_t tail_size = 6, wire::Mode mode = wire::Mode::results) {
    shm::SubmissionEntry e{};
    e.user_tag = 43;
    e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify_columns);
    e.record_kind = static_cast<std::uint8_t>(wire::RecordKind::ecdsa);
    e.key_size = tail_size;
    e.mode = static_cast<std::uint8_t>(mode);
    e.table = shm::kTableUnspecified;
    e.rows_offset = message;
    e.results_offset = results;
    e.row_count = count;
    shm::set_column_offsets(e, shm::ColumnOffsets{key, signature, correlate});
    return e;
}

// Column layout used by the live tests: n rows, each column 64-aligned after the previous one.
struct Placed {
    std::uint64_t message, key, signature, correlate, results, end;
};
Placed place(std::uint64_t n, std::uint64_t key_width, std::uint64_t tail) {
    auto up = [](std::uint64_t v) { return (v + 63) / 64 * 64; };
    Placed p;
    p.message = 0;
    p.key = up(n * 32);
    p.signature = p.key + up(n * key_width);
    p.correlate = p.signature + up(n * 64);
    p.results = p.correlate + up(n * tail);
    p.end = p.results + up(n);
    return p;
}

Status check_detail(const shm::SubmissionEntry& e, shm::ColumnDetail& detail, std::uint64_t arena = 1 << 20) {
    shm::CheckedSubmission c;
    std::uint32_t d = 0;
    const Status st = shm::check_submission(e, arena, c, &d);
    detail = static_cast<shm::ColumnDetail>(d);
    return st;
}

// A client that speaks the protocol by hand.
bool client_works(const DaemonProcess& d) {
    ClientOptions o;
    o.runtime_dir = d.dir();
    o.name = "bystander";
    auto c = Client::connect(o);
    return check_batch(*c, wire::Table::schnorr, wire::Mode::results, wire::SigEncoding::opaque, 50, 5);
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

    auto e = verify_entry(0, 2000, 1);
    e.opcode = 0;
    CHECK(check(e) == Status::bad_entry);
    e.opcode = 77;
    CHECK(check(e) == Status::bad_entry);
    e = verify_entry(0, 2000, 1);
    e.record_kind = 2;
    CHECK(check(e) == Status::bad_entry);
    e = verify_entry(0, 2000, 1);
    e.encoding = 2;
    CHECK(check(e) == Status::bad_entry);
    e = verify_entry(0, 2000, 1);
    e.record_kind = static_cast<std::uint8_t>(wire::RecordKind::schnorr);
    e.encoding = 1;  // Schnorr has no encoding choice
    CHECK(check(e) == Status::bad_entry);
    e = verify_entry(0, 2000, 1);
    e.mode = 2;
    CHECK(check(e) == Status::bad_entry);
    e = verify_entry(0, 2000, 1);
    e.table = 4;
    CHECK(check(e) == Status::bad_entry);
    e.table = static_cast<std::uint8_t>(wire::Table::threshold);  // Schnorr table on an ECDSA record
    CHECK(check(e) == Status::bad_entry);
    e = verify_entry(0, 2000, 1);
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
    e = good();
    e.flags = 2;
    CHECK(check(e) == Status::bad_entry);
    e = good();
    e.flags = 0x8000;
    CHECK(check(e) == Status::bad_entry);
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
    e = good();
    e.mode = 2;
    CHECK(check(e) == Status::bad_entry);
    e = good();
    e.record_kind = 2;
    CHECK(check(e) == Status::bad_entry);
}

TEST_CASE("the daemon answers hostile column entries with error completions and keeps serving",
          "[daemon][ring][columns]") {
    DaemonProcess d({"--arena-size", "64K", "--ring-entries", "8"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    CHECK(s.h->abi_major == shm::kAbiMajor);
    CHECK(s.h->abi_minor == shm::kAbiMinor);
    const std::uint64_t arena = s.h->arena_size;
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t n = 40;
    const Placed p = place(n, 33, 6);

    struct Case {
        shm::SubmissionEntry e;
        Status expected;
        shm::ColumnDetail detail;
    };
    std::vector<Case> cases;
    auto add = [&](shm::SubmissionEntry e, Status st, shm::ColumnDetail detail = shm::ColumnDetail::none) {
        e.user_tag = 2000 + cases.size();
        cases.push_back({e, st, detail});
    };
    using D = shm::ColumnDetail;
    add(column_entry(arena - 8, p.key, p.signature, p.correlate, p.results, n), Status::bad_range, D::message);
    add(column_entry(p.message, max - 100, p.signature, p.correlate, p.results, n), Status::bad_range, D::key);
    add(column_entry(p.message, p.key, arena + 64, p.correlate, p.results, n), Status::bad_range, D::signature);
    add(column_entry(p.message, p.key, p.signature, max, p.results, n), Status::bad_range, D::correlate);
    add(column_entry(p.message, p.key, p.signature, p.correlate, max - 1, n), Status::bad_range, D::results);
    add(column_entry(p.message, p.key, p.signature, p.correlate, p.key, n), Status::bad_range, D::overlap);
    add(column_entry(p.message, p.key, p.signature, p.key, 0, n, 6, wire::Mode::collect), Status::bad_range,
        D::overlap);
    add(column_entry(0, 0, 0, 0, 0, max / 16), Status::bad_range, D::row_count);
    add(column_entry(0, 0, 0, 0, 0, 600, 255, wire::Mode::collect), Status::bad_range, D::row_count);  // tail too large
    auto e = column_entry(p.message, p.key, p.signature, p.correlate, p.results, n);
    e.flags = 4;
    add(e, Status::bad_entry);
    add(column_entry(p.message, p.key, p.signature, p.correlate, p.results, n, 0), Status::bad_entry);
    add(column_entry(p.message, p.key, p.signature, p.correlate, p.results, n, 6, wire::Mode::collect),
        Status::bad_entry);
    // Real columns in the arena: verified, and the verdicts are libsecp256k1's.
    KnownRows known = make_known_rows(wire::Table::multisig, n, wire::SigEncoding::opaque, 17);
    const wire::RowSpan span = span_of(wire::Table::multisig, wire::SigEncoding::opaque, known.rows, n);
    reference::ColumnTable cols = reference::rows_to_columns(span, reference::CorrelateLayout::tail);
    std::memcpy(s.arena() + p.message, cols.message.data(), cols.message.size());
    std::memcpy(s.arena() + p.key, cols.key.data(), cols.key.size());
    std::memcpy(s.arena() + p.signature, cols.signature.data(), cols.signature.size());
    std::memcpy(s.arena() + p.correlate, cols.correlate.data(), cols.correlate.size());
    std::memset(s.arena() + p.results, 0xAA, n);
    add(column_entry(p.message, p.key, p.signature, p.correlate, p.results, n), Status::ok);

    std::size_t next = 0;
    while (next < cases.size()) {
        const std::size_t round = std::min<std::size_t>(4, cases.size() - next);
        for (std::size_t i = 0; i < round; ++i) s.submit(cases[next + i].e);
        for (std::size_t i = 0; i < round; ++i) {
            shm::CompletionEntry c;
            REQUIRE(s.next_completion(c));
            REQUIRE(c.user_tag >= 2000);
            REQUIRE(c.user_tag < 2000 + cases.size());
            const Case& k = cases[c.user_tag - 2000];
            INFO("entry " << c.user_tag - 2000);
            CHECK(c.status == static_cast<std::uint32_t>(k.expected));
            CHECK(c.detail == static_cast<std::uint32_t>(k.detail));
            if (k.expected != Status::ok) CHECK(c.valid + c.invalid == 0);
        }
        next += round;
    }
    CHECK(shm::word(s.h->dropped).load() == cases.size() - 1);
    // Known verdicts (make_known_rows), not the daemon's own verifier.
    CHECK(std::memcmp(s.arena() + p.results, known.expected.data(), n) == 0);
    CHECK(known.valid > 0);
    CHECK(known.invalid > 0);
    // The correlate column was not touched in results mode.
    CHECK(std::memcmp(s.arena() + p.correlate, cols.correlate.data(), cols.correlate.size()) == 0);
    CHECK(kill(d.pid(), 0) == 0);
    CHECK(client_works(d));
}

TEST_CASE("a client rewriting its columns while they are verified cannot hurt the daemon", "[daemon][ring][columns]") {
    DaemonProcess d({"--arena-size", "256K", "--ring-entries", "8", "--cpu-threads", "2", "--chunk-rows", "32"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    const std::uint64_t n = 1000;
    const Placed p = place(n, 33, 6);
    REQUIRE(p.end <= s.h->arena_size);
    auto rows = make_rows(wire::Table::multisig, n, wire::SigEncoding::opaque, 23);
    const wire::RowSpan span = span_of(wire::Table::multisig, wire::SigEncoding::opaque, rows, n);
    reference::ColumnTable cols = reference::rows_to_columns(span, reference::CorrelateLayout::tail);
    std::uint64_t x = 0x243F6A8885A308D3ull;
    for (int round = 0; round < 6; ++round) {
        std::memcpy(s.arena() + p.message, cols.message.data(), cols.message.size());
        std::memcpy(s.arena() + p.key, cols.key.data(), cols.key.size());
        std::memcpy(s.arena() + p.signature, cols.signature.data(), cols.signature.size());
        std::memcpy(s.arena() + p.correlate, cols.correlate.data(), cols.correlate.size());
        const wire::Mode mode = round % 2 ? wire::Mode::collect : wire::Mode::results;
        auto e = column_entry(p.message, p.key, p.signature, p.correlate, mode == wire::Mode::results ? p.results : 0,
                              n, 6, mode);
        e.user_tag = 3000 + round;
        s.submit(e);
        // Scribble over every column (and the results) until the answer comes.
        shm::CompletionEntry c{};
        bool answered = false;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!answered && std::chrono::steady_clock::now() < deadline) {
            for (int i = 0; i < 256; ++i) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.arena()[x % p.end] = static_cast<std::uint8_t>(x >> 56);
            }
            answered = s.next_completion(c, std::chrono::milliseconds(1));
        }
        REQUIRE(answered);
        CHECK(c.user_tag == 3000u + round);
        CHECK(c.status == static_cast<std::uint32_t>(Status::ok));
        CHECK(c.valid + c.invalid == n);
    }
    CHECK(kill(d.pid(), 0) == 0);
    CHECK(client_works(d));
}

TEST_CASE("a client rewriting rows a GPU reads in place cannot switch the GPU off", "[daemon][ring][gpu-path]") {
    // The GPU path with the kernel math on the CPU (--backend host-kernel):
    // packed rows are read in place from the client's segment, and every
    // verdict is re-checked by libsecp256k1 (samples 1 in 1). The client
    // scribbles over its rows until each answer comes, so the "GPU" and the
    // re-check see different bytes; the daemon must settle that on private
    // copies and leave the GPU on.
    DaemonProcess d({"--backend", "host-kernel", "--gpus", "0", "--cpu-threads", "2", "--cross-check-sample", "1",
                     "--cross-check-invalid-sample", "1", "--gpu-min-rows", "1", "--gpu-split", "off",
                     "--arena-size", "1M", "--ring-entries", "8"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    const std::uint64_t n = 2000, stride = wire::kEcdsaRecordSize + 3, results = n * stride;
    REQUIRE(results + n <= s.h->arena_size);
    const auto rows = make_rows(wire::Table::ecdsa, n, wire::SigEncoding::opaque, 29);
    std::uint64_t x = 0x13198A2E03707344ull;
    for (int round = 0; round < 4; ++round) {
        std::memcpy(s.arena(), rows.data(), rows.size());
        auto e = verify_entry(0, results, n);
        e.user_tag = 4000 + round;
        s.submit(e);
        shm::CompletionEntry c{};
        bool answered = false;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (!answered && std::chrono::steady_clock::now() < deadline) {
            for (int i = 0; i < 64; ++i) {  // signature bytes of random rows
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.arena()[(x % n) * stride + 65 + (x >> 40) % 64] ^= static_cast<std::uint8_t>(1 + (x >> 56) % 255);
            }
            answered = s.next_completion(c, std::chrono::milliseconds(1));
        }
        REQUIRE(answered);
        CHECK(c.status == static_cast<std::uint32_t>(Status::ok));
        CHECK(c.valid + c.invalid == n);
    }
    const std::string backends = stats_command(d.dir(), "backends");
    INFO(backends);
    CHECK(backends.find("switched off") == std::string::npos);
    CHECK(backends.find("crosscheck_mismatches=0 ") != std::string::npos);
    const std::string metrics = stats_command(d.dir(), "stats");
    CHECK(metrics.find("sigverifyd_rows_in_place_total 0\n") == std::string::npos);  // rows were read in place
    CHECK(metrics.find("sigverifyd_backend_rows_rewritten_total{backend=\"gpu0\"} 0\n") == std::string::npos);
    CHECK(client_works(d));
}

TEST_CASE("ring index bounds survive wrap-around", "[daemon][ring]") {
    CHECK(shm::ring_count_ok(0xFFFFFFF0u, 0x10u, 32));
    CHECK_FALSE(shm::ring_count_ok(0xFFFFFFF0u, 0x11u, 32));
    CHECK_FALSE(shm::ring_count_ok(5, 4, 32));  // tail behind head
    CHECK(shm::ring_count_ok(7, 7, 2));
}

// docs/protocol.md: "sq_tail - sq_head > sq_entries is a protocol violation";
// a ring holding exactly sq_entries entries is full, not a violation. Both
// edges against the real daemon: exactly `entries` entries published in one
// tail store are all consumed and answered, then a tail `entries + 1` past the
// daemon's head ends the session. An off-by-one either way fails one half.
TEST_CASE("a full submission ring is served; one entry past full ends the session", "[daemon][ring]") {
    DaemonProcess d({"--arena-size", "64K", "--ring-entries", "8"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    const std::uint32_t entries = s.h->sq_entries;
    REQUIRE(entries == 8);
    REQUIRE(s.h->cq_entries >= entries);  // so the daemon can take all of them without our reaping
    REQUIRE(shm::word(s.h->sq_head).load() == 0);

    auto publish = [&](std::uint32_t count, std::uint64_t tag_base) {
        // Write all entries first, then store the tail once: the daemon sees
        // either the old tail or head + count, never anything in between.
        for (std::uint32_t i = 0; i < count; ++i) {
            shm::SubmissionEntry nop{};
            nop.opcode = static_cast<std::uint8_t>(shm::Opcode::nop);
            nop.user_tag = tag_base + i;
            std::memcpy(&s.sqes()[(s.sq_tail + i) & s.h->sq_mask], &nop, sizeof nop);
        }
        s.sq_tail += count;
        shm::word(s.h->sq_tail).store(s.sq_tail, std::memory_order_release);
        shm::ring(s.h->daemon_bell);
    };

    // 1. Exactly `entries` entries: a full ring, all answered.
    publish(entries, 5000);
    std::vector<bool> seen(entries, false);
    for (std::uint32_t i = 0; i < entries; ++i) {
        shm::CompletionEntry c{};
        REQUIRE(s.next_completion(c));
        REQUIRE(c.user_tag >= 5000);
        REQUIRE(c.user_tag < 5000 + entries);
        CHECK(c.status == static_cast<std::uint32_t>(Status::ok));
        seen[c.user_tag - 5000] = true;
    }
    CHECK(std::count(seen.begin(), seen.end(), true) == entries);
    CHECK(shm::word(s.h->sq_head).load() == entries);
    CHECK_FALSE(s.closed_by_daemon(std::chrono::milliseconds(300)));
    CHECK(shm::word(s.h->state).load() == static_cast<std::uint32_t>(shm::SegmentState::ready));

    // 2. Full again at a non-zero head (the daemon's head is now `entries`).
    publish(entries, 6000);
    for (std::uint32_t i = 0; i < entries; ++i) {
        shm::CompletionEntry c{};
        REQUIRE(s.next_completion(c));
        CHECK(c.user_tag >= 6000);
        CHECK(c.status == static_cast<std::uint32_t>(Status::ok));
    }
    REQUIRE(shm::word(s.h->sq_head).load() == 2 * entries);
    CHECK_FALSE(s.closed_by_daemon(std::chrono::milliseconds(300)));

    // 3. One past full: tail - head == entries + 1 is a protocol violation.
    publish(entries + 1, 7000);
    CHECK(s.closed_by_daemon(std::chrono::seconds(2)));
    CHECK(shm::word(s.h->state).load() == static_cast<std::uint32_t>(shm::SegmentState::closed));
    shm::CompletionEntry c{};
    CHECK_FALSE(s.next_completion(c, std::chrono::milliseconds(200)));  // none of the 9 was consumed
    CHECK(shm::word(s.h->sq_head).load() == 2 * entries);
    // Only that session ended.
    CHECK(kill(d.pid(), 0) == 0);
    CHECK(client_works(d));
}

TEST_CASE("the daemon answers malformed entries with error completions and keeps serving", "[daemon][ring]") {
    DaemonProcess d({"--arena-size", "64K", "--ring-entries", "8"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    REQUIRE(shm::word(s.h->state).load() == static_cast<std::uint32_t>(shm::SegmentState::ready));
    CHECK(s.h->epoch == s.reply.epoch);
    const std::uint64_t arena = s.h->arena_size;

    struct Case {
        shm::SubmissionEntry e;
        Status expected;
    };
    std::vector<Case> cases;
    auto add = [&](shm::SubmissionEntry e, Status st) {
        e.user_tag = 1000 + cases.size();
        cases.push_back({e, st});
    };
    add(verify_entry(arena - 10, 0, 1), Status::bad_range);
    add(verify_entry(0, 0, 1), Status::bad_range);  // results overlap rows
    add(verify_entry(std::numeric_limits<std::uint64_t>::max() - 3, 0, 2), Status::bad_range);
    auto e = verify_entry(0, 1000, 1);
    e.opcode = 9;
    add(e, Status::bad_entry);
    e = verify_entry(0, 1000, 1);
    e.mode = 5;
    add(e, Status::bad_entry);
    shm::SubmissionEntry nop{};
    nop.opcode = static_cast<std::uint8_t>(shm::Opcode::nop);
    add(nop, Status::ok);
    // Cancel (ABI 1.3): a tag no batch in flight has is answered not_found; a
    // cancel entry with any other field set is malformed.
    shm::SubmissionEntry cancel{};
    cancel.opcode = static_cast<std::uint8_t>(shm::Opcode::cancel);
    cancel.rows_offset = 0xdeadbeef;
    add(cancel, Status::not_found);
    cancel.row_count = 1;
    add(cancel, Status::bad_entry);
    // A real row in the arena: verified.
    const KnownRows known = make_known_rows(wire::Table::ecdsa, 1, wire::SigEncoding::opaque, 3);  // valid
    std::memcpy(s.arena(), known.rows.data(), known.rows.size());
    std::memset(s.arena() + 4096, 0xAA, 1);
    add(verify_entry(0, 4096, 1), Status::ok);

    // More entries than the ring holds: submit in rounds.
    std::size_t next = 0;
    while (next < cases.size()) {
        const std::size_t round = std::min<std::size_t>(4, cases.size() - next);
        for (std::size_t i = 0; i < round; ++i) s.submit(cases[next + i].e);
        for (std::size_t i = 0; i < round; ++i) {
            shm::CompletionEntry c;
            REQUIRE(s.next_completion(c));
            REQUIRE(c.user_tag >= 1000);
            const Case& k = cases[c.user_tag - 1000];
            INFO("entry " << c.user_tag - 1000);
            CHECK(c.status == static_cast<std::uint32_t>(k.expected));
            CHECK(c.epoch == s.reply.epoch);
            if (k.expected == Status::ok && k.e.row_count == 1) {
                CHECK(c.valid + c.invalid == 1);
                CHECK(s.arena()[4096] == known.expected[0]);
            }
        }
        next += round;
    }
    // Five malformed verify entries and the malformed cancel (not_found is an answer, not a drop).
    CHECK(shm::word(s.h->dropped).load() == 6);
    CHECK(client_works(d));
}

TEST_CASE("an out-of-range ring index ends only that session", "[daemon][ring]") {
    DaemonProcess d({"--arena-size", "64K", "--ring-entries", "8"});
    RawSession s;
    REQUIRE(s.handshake(d.socket_path()));
    shm::word(s.h->sq_tail).store(1000, std::memory_order_release);  // 1000 entries in an 8-entry ring
    shm::ring_force(s.h->daemon_bell);
    CHECK(s.closed_by_daemon(std::chrono::seconds(2)));
    CHECK(shm::word(s.h->state).load() == static_cast<std::uint32_t>(shm::SegmentState::closed));
    CHECK(client_works(d));

    RawSession t;  // a completion head beyond the tail
    REQUIRE(t.handshake(d.socket_path()));
    shm::word(t.h->cq_head).store(0x80000000u, std::memory_order_release);
    t.submit(verify_entry(0, 4096, 0));
    CHECK(t.closed_by_daemon(std::chrono::seconds(2)));
    CHECK(client_works(d));
    CHECK(d.log().find("out of bounds") != std::string::npos);
}

TEST_CASE("a client truncating its segment cannot crash the daemon", "[daemon][ring]") {
    DaemonProcess d({"--arena-size", "64K"});
    {
        RawSession s;
        REQUIRE(s.handshake(d.socket_path()));
        munmap(s.base, s.size);  // we must not touch it either
        s.base = nullptr;
        REQUIRE(ftruncate(s.seg_fd, 0) == 0);
        // The daemon looks at the header at least every 50 ms.
        CHECK(s.closed_by_daemon(std::chrono::seconds(3)));
    }
    CHECK(kill(d.pid(), 0) == 0);
    CHECK(client_works(d));
}

TEST_CASE("malformed handshakes get a clear refusal", "[daemon][ring]") {
    DaemonProcess d;
    {
        RawSession s;
        REQUIRE(s.open(d.socket_path()));
        s.send_raw("hello", 5);
        REQUIRE(s.recv_reply());
        CHECK(s.reply.status == static_cast<std::uint32_t>(Status::handshake));
        CHECK(std::string(shm::read_text(s.reply.error)).find("malformed") != std::string::npos);
        CHECK(s.seg_fd < 0);
    }
    {
        RawSession s;
        REQUIRE(s.open(d.socket_path()));
        shm::HelloRequest hello{};
        hello.magic = 0x12345678;
        hello.protocol_version = shm::kProtocolVersion;
        s.send_raw(&hello, sizeof hello);
        REQUIRE(s.recv_reply());
        CHECK(s.reply.status == static_cast<std::uint32_t>(Status::handshake));
    }
    {
        RawSession s;  // requested ring entries not a power of two
        REQUIRE(s.open(d.socket_path()));
        shm::HelloRequest hello{};
        hello.magic = shm::kHelloMagic;
        hello.protocol_version = shm::kProtocolVersion;
        hello.requested_ring_entries = 3;
        s.send_raw(&hello, sizeof hello);
        REQUIRE(s.recv_reply());
        CHECK(s.reply.status == static_cast<std::uint32_t>(Status::handshake));
    }
    {
        RawSession s;  // an oversized arena request is bounded by the daemon
        REQUIRE(s.open(d.socket_path()));
        shm::HelloRequest hello{};
        hello.magic = shm::kHelloMagic;
        hello.protocol_version = shm::kProtocolVersion;
        hello.requested_arena_size = std::numeric_limits<std::uint64_t>::max();
        s.send_raw(&hello, sizeof hello);
        REQUIRE(s.recv_reply());
        CHECK(s.reply.status == 0);
        CHECK(s.reply.segment_size <= (64ull << 20) + 1024 * 1024);
    }
    CHECK(client_works(d));
    CHECK(leftover_segments(d).empty());
}

TEST_CASE("a client scribbling over its whole segment cannot hurt the daemon or others", "[daemon][ring]") {
    DaemonProcess d({"--arena-size", "64K", "--ring-entries", "8", "--cpu-threads", "2"});
    std::uint64_t x = 0x9E3779B97F4A7C15ull;
    auto rnd = [&] {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return x;
    };
    int sessions = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    while (std::chrono::steady_clock::now() < until) {
        RawSession s;
        if (!s.handshake(d.socket_path())) {
            // One process opening sessions this fast meets the per-process
            // connection rate limit (a clear busy refusal): wait for a token.
            REQUIRE(s.reply.status == static_cast<std::uint32_t>(Status::busy));
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            continue;
        }
        ++sessions;
        const std::uint32_t entries = s.h->sq_entries;
        std::uint8_t* sq = reinterpret_cast<std::uint8_t*>(s.sqes());
        for (int round = 0; round < 200; ++round) {
            // Random entries, random arena bytes, random completion head; the
            // submission tail mostly in bounds so the entries get parsed.
            for (std::uint32_t i = 0; i < entries * sizeof(shm::SubmissionEntry); i += 8) {
                const std::uint64_t v = rnd();
                std::memcpy(sq + i, &v, 8);
            }
            for (std::uint32_t i = 0; i < entries; ++i) {
                auto* e = &s.sqes()[i];
                if (rnd() % 3 == 0) {  // plausible column entries with hostile offsets/counts
                    e->opcode = static_cast<std::uint8_t>(shm::Opcode::verify_columns);
                    e->record_kind = rnd() % 2;
                    e->encoding = 0;
                    e->key_size = rnd() % 2 ? 0 : static_cast<std::uint8_t>(rnd());
                    e->mode = rnd() % 2;
                    e->table = shm::kTableUnspecified;
                    e->flags = 0;
                    e->rows_offset = rnd() % (s.h->arena_size + 2);
                    e->results_offset = e->mode == 0 ? rnd() % (s.h->arena_size + 2) : 0;
                    e->row_count = rnd() % 600;
                    shm::set_column_offsets(*e, {rnd() % (s.h->arena_size + 2), rnd() % (s.h->arena_size + 2),
                                                 e->key_size != 0 ? rnd() % (s.h->arena_size + 2) : 0});
                } else if (rnd() % 2) {  // plausible entries with hostile offsets/counts
                    e->opcode = 1;
                    e->record_kind = rnd() % 2;
                    e->encoding = 0;
                    e->mode = rnd() % 2;
                    e->table = shm::kTableUnspecified;
                    e->flags = 0;
                    std::memset(e->reserved, 0, sizeof e->reserved);
                    e->rows_offset = rnd() % (s.h->arena_size + 2);
                    e->results_offset = e->mode == 0 ? rnd() % (s.h->arena_size + 2) : 0;
                    e->row_count = rnd() % 600;
                }
            }
            for (int i = 0; i < 64; ++i) s.arena()[rnd() % s.h->arena_size] = static_cast<std::uint8_t>(rnd());
            const std::uint32_t head = shm::word(s.h->sq_head).load();
            const std::uint32_t tail = rnd() % 8 == 0 ? static_cast<std::uint32_t>(rnd()) : head + rnd() % (entries + 1);
            shm::word(s.h->sq_tail).store(tail, std::memory_order_release);
            if (rnd() % 4 == 0) shm::word(s.h->cq_head).store(static_cast<std::uint32_t>(rnd()));
            else shm::word(s.h->cq_head).store(shm::word(s.h->cq_tail).load());
            shm::ring(s.h->daemon_bell);
            if (s.closed_by_daemon(std::chrono::milliseconds(1))) break;
        }
    }
    INFO(sessions << " scribbling sessions");
    CHECK(kill(d.pid(), 0) == 0);
    CHECK(client_works(d));
    CHECK(leftover_segments(d).empty());
}

#include <spdlog/sinks/ostream_sink.h>
#include <sstream>

#include "daemon/log_limit.hpp"

TEST_CASE("LogLimit: a burst per key per interval, then one summary with the exact count", "[daemon][log]") {
    std::ostringstream out;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
    spdlog::logger log("t", sink);
    log.set_pattern("%v");
    daemon::LogLimit limit(3, std::chrono::milliseconds(200));
    int written = 0;
    for (int i = 0; i < 50; ++i) written += limit.allow(log, "a");
    CHECK(written == 3);
    CHECK(limit.allow(log, "b"));  // keys are independent
    limit.flush(log);              // the interval has not ended: nothing yet
    CHECK(out.str().find("suppressed") == std::string::npos);
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    limit.flush(log);
    log.flush();
    CHECK(out.str() == "suppressed 47 similar messages (a) in the last 0 s\n");
    // A new interval: the burst again, and nothing left to summarize.
    CHECK(limit.allow(log, "a"));
    limit.flush(log);
    CHECK(DaemonProcess::count(out.str(), "suppressed") == 1);
}
