// SPDX-License-Identifier: MIT
// The one way a submission entry that check_submission (and, for a
// registered buffer, check_registered_columns) accepted becomes a Job: which
// memory the job's rows or columns, results and correlate entries are in.
//
// Kept apart from the session so that what a Job points at is read in one
// place, next to the checks that made every offset safe: each range below was
// checked inside the memory it is added to (the arena; a registered buffer's
// columns are no pointers at all: the scheduler reads them with pread from
// the job's RegisteredColumnSource), so no pointer here can leave it.
// Daemon-only: not installed.
#pragma once

#include <cstdint>

#include "daemon/confirm/confirmation.hpp"
#include "daemon/schedule/job.hpp"
#include "daemon/memory/submission_checks.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::daemon {

// Where the offsets of a checked submission point.
struct SubmissionMemory {
    // The client's arena: rows, results and the correlate column.
    std::uint8_t* arena = nullptr;
    // verify_registered_columns / _column_set: the columns are in registered
    // files (read with pread, never mapped), so the job's column view carries
    // only kind, encoding and count, and never a correlate.
    bool registered = false;
};

// Sets what job j verifies and where its verdicts go from checked entry c
// (opcode verify, verify_columns or a registered form, row_count > 0), and
// resets the job's scheduling state. The confirmation rule is the client's
// strict flag, else default_rule. The submitter's own fields (user_tag,
// registered, stage_rows, submitted) are left to the caller, and so is
// zeroing the results (it writes the client's memory).
inline void fill_job(Job& j, const shm::CheckedSubmission& c, const SubmissionMemory& m, ConfirmRule default_rule) {
    const std::size_t count = static_cast<std::size_t>(c.row_count);
    j.rows.kind = c.kind;
    j.rows.encoding = c.encoding;
    j.rows.count = count;
    j.is_columns = c.opcode != shm::Opcode::verify;  // verify_columns or a registered form
    if (j.is_columns) {
        // The scheduler chunks a column job by rows.count and stages each
        // row (copies it out before verifying it); it never writes a buffer.
        j.rows.tail_size = 0;
        j.rows.data = nullptr;
        if (m.registered) {
            // No pointers: stage_registered_columns reads the files.
            j.columns = wire::ColumnSpan{c.kind, c.encoding, count, 0, nullptr, nullptr, nullptr, nullptr};
        } else {
            const bool correlated = c.tail_size != 0;
            j.columns = wire::ColumnSpan{c.kind,
                                         c.encoding,
                                         count,
                                         correlated ? c.tail_size : 0,
                                         m.arena + c.rows_offset,
                                         m.arena + c.key_offset,
                                         m.arena + c.signature_offset,
                                         correlated ? m.arena + c.correlate_offset : nullptr};  // written by collect
        }
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
    j.repairs.reset();
    j.repair_rows_left = 0;
    j.running = 0;
    j.tally = {};
    j.status = shm::Status::ok;
    j.rows_rewritten = false;
}

}  // namespace sigverify::daemon
