// SPDX-License-Identifier: MIT
// libsigverify internals: the pipeline of the copy APIs (copy_api.cpp) and of
// registered column batches (registered.cpp), a template of Client::Impl
// shared by both: pieces reserved and filled, submitted, up to
// detail::kPipelineDepth in flight, waited for and copied back, with the local
// fallback and cancel handled alike for all of them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <stop_token>

#include "client_impl.hpp"

namespace sigverify {

// ---------------------------------------------------------------------------
// The pipeline shared by rows and columns
// ---------------------------------------------------------------------------
// The pipeline of both copy APIs: pieces of at most `chunk` of the n rows,
// up to kPipelineDepth in flight. fill(begin, count, batch, wait) reserves a
// piece and copies the caller's input into it (reserve's status);
// copy_back(begin, count, batch) copies a verified piece's output to the
// caller; local_run(begin, count) verifies rows here, used with
// fallback=local when the daemon fails a piece or `falls_back`(reserve's
// status) says so. The caller has zeroed its results (fail closed).
// PieceBatch is RowBatch or ColumnBatch.
template <class PieceBatch, class Fill, class CopyBack, class Local, class FallsBack>
BatchResult Client::Impl::pipeline(std::size_t n, std::size_t chunk, wire::Mode mode, wire::SigEncoding enc,
                                   std::uint8_t table, const detail::CancelCheck& stop, Fill&& fill, CopyBack&& copy_back,
                                   Local&& local_run, FallsBack&& falls_back) {
    struct InFlight {
        PieceBatch batch;
        std::size_t begin = 0, count = 0;
    };
    InFlight q[detail::kPipelineDepth];
    std::size_t qh = 0, qn = 0, next = 0;
    Status fail = Status::ok;
    BatchResult total;
    bool stopping = false;  // a stop was requested: the pieces in flight are cancelled
    auto stop_all = [&] {
        stopping = true;
        if (fail == Status::ok) fail = Status::cancelled;
        for (std::size_t i = 0; i < qn; ++i) cancel(detail::ref(q[(qh + i) % detail::kPipelineDepth].batch));
    };
    auto run_locally = [&](std::size_t begin, std::size_t count) {
        for (std::size_t end = begin + count; begin < end;) {
            if (stop.stop_requested()) {
                if (fail == Status::ok) fail = Status::cancelled;
                return;
            }
            const std::size_t piece = std::min(end - begin, detail::kMaxChunkRows);
            const BatchResult lr = local_run(begin, piece);
            if (lr.status != Status::ok && fail == Status::ok) fail = lr.status;
            total.valid += lr.valid;
            total.invalid += lr.invalid;
            total.local_rows += lr.local_rows;
            begin += piece;
        }
    };
    auto finish_front = [&] {
        InFlight& f = q[qh];
        // Once a piece timed out the call fails with timeout whatever the
        // others answer, so they are not waited for: a daemon that stopped
        // answering costs the call one batch_timeout, not one per piece.
        const bool timed_out = fail == Status::timeout;
        BatchResult r = wait_raw(detail::ref(f.batch), !timed_out, stopping ? nullptr : &stop);
        if (timed_out && r.status == Status::pending) r.status = Status::timeout;
        if (r.status == Status::pending) {  // a stop was requested while waiting
            stop_all();
            return;
        }
        if (r.ok() || (stopping && r.status == Status::cancelled)) {
            // A cancelled piece holds the verdicts of the chunks that ran.
            copy_back(f.begin, f.count, f.batch);
            total.valid += r.valid;
            total.invalid += r.invalid;
        } else if (stopping) {
            // Whatever else ended a cancelled piece, it is not verified here.
        } else if (r.status == Status::timeout) {
            if (fail == Status::ok) fail = r.status;
        } else if (opt.fallback == Fallback::local && detail::is_daemon_failure(r.status)) {
            run_locally(f.begin, f.count);
        } else if (fail == Status::ok) {
            fail = r.status;
        }
        release(detail::ref(f.batch));
        f.batch.generation = 0;
        qh = (qh + 1) % detail::kPipelineDepth;
        --qn;
    };
    while ((next < n && fail == Status::ok) || qn > 0) {
        if (!stopping && stop.stop_requested()) {
            stop_all();
            continue;
        }
        if (next < n && qn < detail::kPipelineDepth && fail == Status::ok) {
            const std::size_t count = std::min(chunk, n - next);
            InFlight& f = q[(qh + qn) % detail::kPipelineDepth];
            const Status st = fill(next, count, f.batch, qn == 0);
            if (st == Status::ok) {
                f.begin = next;
                f.count = count;
                submit(detail::ref(f.batch), shm::Opcode::verify, mode, enc, table, &f.batch.encoding);
                // A failed submit marked the slot done with its status: wait_raw() sees it.
                ++qn;
                next += count;
                continue;
            }
            if (st != Status::ring_full) {
                if (opt.fallback == Fallback::local && falls_back(st)) {
                    run_locally(next, n - next);
                } else if (fail == Status::ok) {
                    fail = st;
                }
                next = n;
                continue;
            }
        }
        if (qn > 0) finish_front();
    }
    if (fail != Status::ok) total.status = fail;
    return total;
}

}  // namespace sigverify
