// SPDX-License-Identifier: MIT
// Submission entries as a test writes them by hand (verify and verify_columns,
// every field named), and the column placement the live tests use: shared by
// the check units (test_submission_checks.cpp) and the raw clients of
// test_daemon_ring.cpp.
#pragma once

#include <cstdint>

#include "sigverify/shm_protocol/segment_access.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::test {

// A verify entry (results mode): count ECDSA rows with the 3-byte tail at
// rows_offset, their verdicts at results_offset.
inline shm::SubmissionEntry verify_entry(std::uint64_t rows_offset, std::uint64_t results_offset, std::uint64_t count) {
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

// A verify_columns entry (ECDSA unless changed): message, key, signature and
// correlate columns at the given offsets.
inline shm::SubmissionEntry column_entry(std::uint64_t message, std::uint64_t key, std::uint64_t signature,
                                         std::uint64_t correlate, std::uint64_t results, std::uint64_t count,
                                         std::uint8_t tail_size = 6, wire::Mode mode = wire::Mode::results) {
    shm::SubmissionEntry e = verify_entry(message, results, count);  // rows_offset: the message column
    e.user_tag = 43;
    e.opcode = static_cast<std::uint8_t>(shm::Opcode::verify_columns);
    e.key_size = tail_size;
    e.mode = static_cast<std::uint8_t>(mode);
    shm::set_column_offsets(e, shm::ColumnOffsets{key, signature, correlate});
    return e;
}

// Column layout used by the live tests: n rows, each column 64-aligned after the previous one.
struct Placed {
    std::uint64_t message, key, signature, correlate, results, end;
};
inline Placed place(std::uint64_t n, std::uint64_t key_width, std::uint64_t tail) {
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

}  // namespace sigverify::test
