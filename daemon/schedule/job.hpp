// SPDX-License-Identifier: MIT
// One accepted submission as the scheduler sees it, and the interface through
// which the scheduler reports a finished job to whoever submitted it.
//
// Kept apart from session.hpp and scheduler.hpp so that neither includes the
// other: the session fills Jobs and implements JobSink; the scheduler runs
// Jobs and calls JobSink, knowing nothing else about sessions.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "daemon/confirm/confirmation.hpp"
#include "daemon/memory/registered_buffers.hpp"
#include "reference/columns.hpp"
#include "reference/reference_verifier.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::daemon {

struct Job {
    // --- set by the submitter before Scheduler::submit, then read-only -------
    std::uint64_t user_tag = 0;
    // Opcode::verify: the rows, in the client's arena. Opcode::verify_columns:
    // only rows.count (and kind/encoding) are set, so the scheduler chunks the
    // job by row range exactly like rows; rows.data is null.
    wire::RowSpan rows;
    // Opcode::verify_columns: the checked columns, in the client's arena
    // (columns.count == rows.count).
    bool is_columns = false;
    wire::ColumnSpan columns;
    // Opcode::verify_registered_columns: the registered files the columns
    // are read from with pread (is_columns is set too, columns has only its
    // kind, encoding and count, no pointers), held until the job finishes so
    // an unregister or the session's end cannot close one under a chunk.
    RegisteredColumnSource registered;
    std::uint8_t* results = nullptr;  // results mode: rows.count bytes in the arena, zeroed (fail closed)
    wire::Mode mode = wire::Mode::results;
    std::uint8_t table = shm::kTableUnspecified;
    // groups: the scheduler may use the groups rule when the table allows it
    // (daemon/confirm/confirmation.hpp); strict: the client wants every INVALID confirmed.
    ConfirmRule confirm = ConfirmRule::groups;
    std::chrono::steady_clock::time_point submitted{};  // batch latency metric
    // Stage every chunk even for a backend that verifies in place: set for the
    // batches of a session that rewrote rows while they were verified.
    bool stage_rows = false;

    // --- scheduling state: the scheduler's, guarded by its mutex --------------
    std::uint64_t next_row = 0;   // first row not yet handed to a worker
    // Row ranges a worker handed back unverified when it paused its chunk for
    // the latency lane (Scheduler::set_yield_rows); they are handed out again
    // before next_row. returned_rows is their total.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> returned;
    std::uint64_t returned_rows = 0;
    std::uint32_t running = 0;    // chunks being verified
    reference::Tally tally;
    shm::Status status = shm::Status::ok;
    bool rows_rewritten = false;  // a chunk's rows changed while verified in place (ChunkResult)
    // Set when the first chunk is handed out if the job runs under the groups
    // rule (null: strict); the groups its chunks have met.
    std::shared_ptr<GroupLedger> ledger;
    // Set with the first chunk: rows [0, gpu_rows) go to the scheduler's
    // backend in chunks of backend_chunk_rows, the rest to the CPU fallback
    // in chunks of cpu_chunk_rows (daemon/backends/split_planner.hpp).
    std::uint64_t gpu_rows = 0;
    std::uint64_t backend_chunk_rows = 0;
    std::uint64_t cpu_chunk_rows = 0;

    // The groups rule's job-end repair (Scheduler::start_repair), once every
    // chunk is done: the rows of the ledger's repair ranges, handed out in
    // pieces like chunks, to any worker. Set for the rest of the job once the
    // repair starts; repair_rows_left is what no worker has taken yet.
    std::shared_ptr<const GroupLedger::Repairs> repairs;
    std::size_t repair_range = 0;    // the range the next piece is cut from
    std::uint64_t repair_next = 0;   // that piece's first row
    std::uint64_t repair_rows_left = 0;

    // Rows no worker holds or has verified: the job is in its queue's pending line while this is not 0.
    std::uint64_t unassigned() const { return rows.count - next_row + returned_rows + repair_rows_left; }
};

// Implemented by the owner of a JobQueue (a Session). Called by the scheduler,
// from a worker or from cancel(), exactly once per submitted job, without the
// scheduler's lock held; after the call the job slot is the owner's again.
class JobSink {
public:
    virtual void finish_job(std::uint32_t index, shm::Status status, const reference::Tally& tally) = 0;

protected:
    ~JobSink() = default;
};

}  // namespace sigverify::daemon
