// SPDX-License-Identifier: MIT
// The one way a submission entry that check_submission (and, for a
// registered buffer, check_registered_columns) accepted becomes a Job: which
// memory the job's rows or columns, results and correlate entries are in.
//
// Kept apart from the session so that what a Job points at is read in one
// place, next to the checks that made every offset safe: each range below was
// checked inside the memory it is added to (the arena, or the registered
// buffer), so no pointer here can leave it. Daemon-only: not installed.
#pragma once

#include <cstdint>

#include "daemon/confirmation.hpp"
#include "daemon/job.hpp"
#include "daemon/submission_checks.hpp"
#include "shm_protocol/wire_format.hpp"

namespace sigverify::daemon {

// Where the offsets of a checked submission point.
struct SubmissionMemory {
    // The client's arena: rows, results and the correlate column.
    std::uint8_t* arena = nullptr;
    // verify_registered_columns: the data of the registered buffer the entry
    // names, which holds its message, key and signature columns (read-only,
    // never a correlate); null for every other opcode.
    const std::uint8_t* registered = nullptr;
};

// Sets what job j verifies and where its verdicts go from checked entry c
// (opcode verify, verify_columns or verify_registered_columns, row_count > 0),
// and resets the job's scheduling state. The confirmation rule is the
// client's strict flag, else default_rule. The submitter's own fields
// (user_tag, buffer, stage_rows, submitted) are left to the caller, and so is
// zeroing the results (it writes the client's memory).
inline void fill_job(Job& j, const shm::CheckedSubmission& c, const SubmissionMemory& m, ConfirmRule default_rule) {
    const std::size_t count = static_cast<std::size_t>(c.row_count);
    j.rows.kind = c.kind;
    j.rows.encoding = c.encoding;
    j.rows.count = count;
    j.is_columns = c.opcode == shm::Opcode::verify_columns || c.opcode == shm::Opcode::verify_registered_columns;
    j.buffer_id = c.buffer_id;
    if (j.is_columns) {
        // The scheduler chunks a column job by rows.count and stages each
        // row (copies it out before verifying it); it never writes a buffer.
        j.rows.tail_size = 0;
        j.rows.data = nullptr;
        const std::uint8_t* base = m.registered != nullptr ? m.registered : m.arena;
        // A registered batch has no correlate (check_registered_entry admits none).
        const bool correlated = m.registered == nullptr && c.tail_size != 0;
        j.columns = wire::ColumnSpan{c.kind,
                                     c.encoding,
                                     count,
                                     correlated ? c.tail_size : 0,
                                     base + c.rows_offset,
                                     base + c.key_offset,
                                     base + c.signature_offset,
                                     correlated ? m.arena + c.correlate_offset : nullptr};  // written by collect
    } else {
        j.rows.tail_size = c.tail_size;
        j.rows.data = m.arena + c.rows_offset;
        j.columns = wire::ColumnSpan{};
    }
    j.mode = c.mode;
    j.table = c.table;
    j.confirm = c.strict_confirm ? ConfirmRule::strict : default_rule;
    j.results = c.mode == wire::Mode::results ? m.arena + c.results_offset : nullptr;
    j.next_row = 0;
    j.running = 0;
    j.tally = {};
    j.status = shm::Status::ok;
    j.rows_rewritten = false;
}

}  // namespace sigverify::daemon
