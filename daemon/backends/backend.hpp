// SPDX-License-Identifier: MIT
// The verification backend interface of sigverifyd.
//
// A backend turns records into verdict bytes, nothing else: it never sees the
// batch's mode and never writes client memory. The scheduler stages a chunk's
// records into a worker's private memory (or, for a GPU that verifies in
// place, hands it the client's rows behind a CheckedBackend), calls verify()
// with a private verdict buffer, and only then publishes the verdicts to the
// client (shm_protocol/verdict_publish.hpp). So whatever a backend does, the
// client's memory changes only through the one publish rule, and only with
// verdicts of a chunk that succeeded.
//
// Contract of verify(worker, records, verdicts):
//   * records: rows [0, records.count), tail-less (tail_size 0) staged
//     copies, or for a backend that verifies_in_place() possibly the client's
//     own rows with their tails;
//   * on success, verdicts[i] is 1 (valid) or 0 (invalid) for each record;
//     on failure (status != ok) the verdict bytes are unspecified and the
//     caller must not publish them;
//   * called from up to concurrency() threads at once, each with its own
//     worker index (worker < concurrency()); never throws.
// A failure makes the scheduler re-run the chunk on its CPU fallback.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "daemon/confirm/confirmation.hpp"
#include "reference/reference_verifier.hpp"
#include "sigverify/shm_protocol/segment_access.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::daemon {

struct ChunkResult {
    shm::Status status = shm::Status::ok;
    reference::Tally tally;
    // Rows verified in place changed while they were verified (a client
    // rewriting a submitted batch): their verdicts come from a private copy,
    // and the submitter's later batches should be staged (Job::stage_rows).
    bool rows_rewritten = false;
    // What the split planner may learn from this chunk (daemon/backends/split_planner.hpp).
    // launched: false when no GPU launch verified it (a checked backend verified a
    // small chunk on the CPU itself). primary_seconds: the untrusted primary's own
    // time, set by a checked backend, without the CPU confirmations a client can
    // make as slow as it likes with invalid rows; unset, the caller's wall time
    // stands in.
    bool launched = true;
    std::optional<double> primary_seconds{};
};

// Rows [begin, end) of rows as a span of their own (row 0 = rows.row(begin)).
inline wire::RowSpan subspan(const wire::RowSpan& rows, std::size_t begin, std::size_t end) {
    return wire::RowSpan{rows.kind, rows.tail_size, rows.encoding, end > begin ? rows.row(begin) : rows.data,
                         end - begin};
}

// The argument check every backend starts with.
inline bool chunk_args_ok(unsigned worker, unsigned concurrency, const wire::RowSpan& records,
                          const std::uint8_t* verdicts) {
    return worker < concurrency && records.valid() && (records.count == 0 || verdicts != nullptr);
}

// The frame of a backend's verify(): the arguments checked, then body(r)
// fills r. A malformed call and an exception out of body are a backend_error
// with no tally: never a verdict (the scheduler re-runs or fails the chunk).
template <class Body>
ChunkResult verify_chunk(unsigned worker, unsigned concurrency, const wire::RowSpan& records,
                         const std::uint8_t* verdicts, Body&& body) noexcept {
    ChunkResult r;
    if (!chunk_args_ok(worker, concurrency, records, verdicts)) {
        r.status = shm::Status::backend_error;
        return r;
    }
    try {
        body(r);
    } catch (...) {
        r.status = shm::Status::backend_error;
        r.tally = {};
    }
    return r;
}

class Backend {
public:
    virtual ~Backend() = default;
    virtual std::string name() const = 0;
    // Worker threads that may call verify() concurrently (worker < concurrency()).
    virtual unsigned concurrency() const = 0;
    // Rows per chunk that keep this backend efficient while keeping chunks short.
    virtual std::size_t preferred_chunk_rows() const = 0;
    // False once the backend can only fail (every GPU switched off): the
    // scheduler then sends whole batches to its CPU fallback.
    virtual bool available() const { return true; }
    // True when a chunk of a few rows costs no more per row than a large one
    // (a CPU, unlike a GPU launch): the scheduler then cuts a small batch into
    // chunks for every worker.
    virtual bool cheap_small_chunks() const { return false; }
    // True when verify() may be handed packed rows that still live in the
    // client's shared memory (records.tail_size may be non-zero) instead of a
    // staged private copy: a GPU then copies them to the device straight from
    // the client's pinned segment. Such verdicts are only used behind a
    // CheckedBackend, which re-checks any disagreement on a private copy
    // before it blames the backend (a client may rewrite its rows meanwhile).
    virtual bool verifies_in_place() const { return false; }
    // The client memory verify() may read in place: [base, base + bytes), from
    // map_client_memory until unmap_client_memory, which is called only once
    // no chunk of it is in flight (a GPU pins it with the driver meanwhile).
    // Returns false when rows in it must not be handed in place (then stage).
    virtual bool map_client_memory(const void* base, std::size_t bytes) noexcept {
        (void)base;
        (void)bytes;
        return true;
    }
    virtual void unmap_client_memory(const void* base) noexcept { (void)base; }
    // Workers [first, concurrency()) are the scheduler's lane workers: they
    // verify only small batches, a 1-row or a block-sized one, and must not
    // wait behind bulk work (daemon/schedule/scheduler.hpp "Lane workers"). A backend
    // whose workers share launch slots (a GPU) gives them a slot of their own,
    // which bulk workers never use (GpuBackend: its lane slot). Called by the
    // scheduler before its workers start, never while a chunk runs (first >=
    // concurrency(): no lane workers); a backend that wraps others passes it
    // on. Default: nothing changes.
    virtual void set_lane_workers(unsigned first) { (void)first; }
    // verdicts[i] = verdict of records row i (see the contract above).
    virtual ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept = 0;

    // The groups confirmation rule (daemon/confirm/confirmation.hpp). A backend whose
    // INVALID verdicts are confirmed (CheckedBackend) may leave those of
    // passing multisig groups unconfirmed when it says confirms_by_group();
    // groups holds the chunk's grouping fields (groups.count == records.count).
    // Every other backend's verdicts are libsecp256k1's: it just verifies.
    virtual bool confirms_by_group() const { return false; }

    // Where the backend counts the pieces of a chunk it has verified
    // (Metrics::progress, the systemd watchdog's sign of life, notify.hpp),
    // so that a worker on a long chunk is not taken for a hung one; null:
    // nowhere. A backend that wraps others passes it on. Set before start.
    virtual void set_progress(std::atomic<std::uint64_t>* progress) { progress_ = progress; }
    virtual ChunkResult verify_grouped(unsigned worker, const wire::RowSpan& records, const ChunkGroups& groups,
                                       std::uint8_t* verdicts) noexcept {
        (void)groups;
        return verify(worker, records, verdicts);
    }

protected:
    // Rows a backend verifies between two progress marks (~50 ms of a core).
    static constexpr std::size_t kProgressRows = 1024;
    void note_progress() const noexcept {
        if (progress_ != nullptr) progress_->fetch_add(1, std::memory_order_relaxed);
    }

private:
    std::atomic<std::uint64_t>* progress_ = nullptr;
};

// The CPU backend: one reference::RowVerifier (libsecp256k1) per worker thread.
class CpuBackend final : public Backend {
public:
    explicit CpuBackend(unsigned threads);
    ~CpuBackend() override;
    std::string name() const override { return "cpu"; }
    unsigned concurrency() const override;
    // Short chunks keep a quiet client's wait for a free worker short (a
    // 64-row chunk is ~2 ms on one core); their overhead does not show in bulk rates.
    std::size_t preferred_chunk_rows() const override { return 64; }
    bool cheap_small_chunks() const override { return true; }
    ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override;

private:
    std::unique_ptr<std::unique_ptr<reference::RowVerifier>[]> verifiers_;
    unsigned threads_;
};

}  // namespace sigverify::daemon
