// SPDX-License-Identifier: MIT
// Consensus safety for a backend whose verdicts are not trusted on their own.
//
// The GPU is fast but is not the consensus reference. CheckedBackend wraps such
// a primary backend and never hands back one of its verdicts unchecked:
//   * the primary verifies the chunk's records (in pieces of at most
//     max_chunk_rows) into this worker's private verdicts;
//   * libsecp256k1 confirms the INVALID verdicts the confirmation rule asks
//     for (daemon/confirm/confirmation.hpp): all of them (verify, the strict rule), or
//     under the groups rule (verify_grouped, multisig tables) those of the
//     groups that fail plus a sample of the others (1 in
//     invalid_sample_every); and it re-verifies a random sample of the VALID
//     verdicts (1 in valid_sample_every);
//   * chunks below cpu_below_rows rows skip the primary: libsecp256k1
//     verifies them in the worker (latency, not trust);
//   * only when the whole chunk is checked are its verdicts copied to the
//     caller's buffer; the scheduler publishes them to the client
//     (verdict_publish.hpp).
// Any disagreement, or any error of the primary, disables the primary for good
// and fails the chunk with backend_error; the scheduler then re-runs the chunk
// on its CPU fallback, so the client still gets libsecp256k1's verdicts.
//
// Rows verified in place. A primary that verifies_in_place() reads the
// client's own rows (no staging copy), which the client could rewrite while
// they are verified, so the primary and the libsecp256k1 re-check may see
// different bytes. A disagreement on such rows is therefore re-checked on a
// private copy of the row, by the primary and by libsecp256k1: if they agree
// there, the row changed underneath (counted in rows_rewritten; the verdict is
// libsecp256k1's on the copy, the chunk reports rows_rewritten so the
// scheduler stages that session's later batches) and the primary is not
// blamed; if they disagree, the primary is wrong and is switched off. Staged
// (private) records cannot change, so any disagreement on them switches the
// primary off at once. Either way a client that rewrites its rows changes only
// its own verdicts and can never make the primary look faulty for everyone.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "daemon/backends/backend.hpp"
#include "kernels/host_ranges.hpp"

namespace sigverify::daemon {

struct CrossCheckPolicy {
    // Re-verify one VALID row in this many (0 = none, 1 = all).
    std::uint32_t valid_sample_every = 1024;
    // Pieces of fewer rows are verified by libsecp256k1 in the worker, not
    // sent to the primary: a GPU round trip costs milliseconds (a launch, and
    // one GPU thread verifying serially), a few rows on one core microseconds.
    std::size_t cpu_below_rows = 0;
    // Groups rule: re-verify one INVALID row in this many of the groups that
    // pass (0 = none, 1 = all); those of failing groups always are.
    std::uint32_t invalid_sample_every = 64;
};

struct CrossCheckCounters {
    std::atomic<std::uint64_t> rows_rechecked{0};   // rows libsecp256k1 re-verified
    std::atomic<std::uint64_t> mismatches{0};       // rows where the primary was wrong
    std::atomic<std::uint64_t> primary_errors{0};   // chunks the primary failed
    std::atomic<std::uint64_t> refused_chunks{0};   // chunks refused after the primary was disabled
    std::atomic<std::uint64_t> rows_small{0};       // rows of chunks below cpu_below_rows, verified on the CPU
    std::atomic<std::uint64_t> invalid_unconfirmed{0};  // groups rule: INVALID verdicts of passing groups not re-verified
    std::atomic<std::uint64_t> chunks_strict{0};    // chunks checked under each rule
    std::atomic<std::uint64_t> chunks_groups{0};
    std::atomic<std::uint64_t> rows_rewritten{0};   // in-place disagreements explained by a rewrite
};

class CheckedBackend final : public Backend {
public:
    // Called once, from a worker thread, when the primary is switched off.
    using DisableHook = std::function<void(const std::string& reason)>;

    // max_chunk_rows bounds what the primary gets in one call; larger chunks
    // are sent in pieces of that size (and checked as one chunk).
    CheckedBackend(std::unique_ptr<Backend> primary, std::size_t max_chunk_rows, CrossCheckPolicy policy,
                   DisableHook on_disable = {});
    ~CheckedBackend() override;

    std::string name() const override;
    unsigned concurrency() const override;
    // Its own confirmations count, and so do the primary's pieces.
    void set_progress(std::atomic<std::uint64_t>* progress) override;
    std::size_t preferred_chunk_rows() const override;
    bool verifies_in_place() const override { return primary_->verifies_in_place(); }
    bool map_client_memory(const void* base, std::size_t bytes) noexcept override;
    void unmap_client_memory(const void* base) noexcept override;
    // The primary's lane slot (Backend::set_lane_workers); the confirmation
    // rule is the same for every worker.
    void set_lane_workers(unsigned first) override { primary_->set_lane_workers(first); }
    // The strict rule: every INVALID verdict confirmed.
    ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override;
    // The groups rule (daemon/confirm/confirmation.hpp) for a multisig chunk.
    bool confirms_by_group() const override { return true; }
    ChunkResult verify_grouped(unsigned worker, const wire::RowSpan& records, const ChunkGroups& groups,
                               std::uint8_t* verdicts) noexcept override;

    bool primary_enabled() const { return enabled_.load(std::memory_order_acquire); }
    const std::string& disable_reason() const { return disable_reason_; }
    const CrossCheckCounters& counters() const { return counters_; }
    // New sample rates (CrossCheckPolicy's valid_sample_every and
    // invalid_sample_every) for the chunks that start from now on: SIGHUP
    // applies a changed --cross-check-sample without a restart.
    void set_sampling(std::uint32_t valid_every, std::uint32_t invalid_every);
    Backend& primary() { return *primary_; }

private:
    struct Worker;
    // Both rules; groups null = strict.
    ChunkResult check(unsigned worker, const wire::RowSpan& records, const ChunkGroups* groups,
                      std::uint8_t* verdicts) noexcept;
    // The primary's verdicts of the chunk, in pieces, into w.verdicts.
    ChunkResult run_primary(Worker& w, unsigned worker, const wire::RowSpan& records);
    // Row i of in-place records, re-verified on a private copy by both sides:
    // libsecp256k1's verdict when they agree there (the row was rewritten), or
    // nullopt (the primary is wrong).
    std::optional<bool> recheck_private(Worker& w, unsigned worker, const wire::RowSpan& records, std::size_t i);
    // check's step 3 (the confirmations) and its path for chunks too small for the GPU.
    bool confirm(Worker& w, unsigned worker, const wire::RowSpan& records, std::uint32_t valid_sample,
                 std::uint32_t invalid_sample, ChunkResult& result);
    ChunkResult verify_here(Worker& w, const wire::RowSpan& records, std::uint8_t* verdicts);
    void disable(const std::string& reason);

    std::unique_ptr<Backend> primary_;
    gpu::HostRanges client_memory_;  // where in-place records may lie (announced segments)
    std::size_t max_chunk_rows_;
    CrossCheckPolicy policy_;  // cpu_below_rows; the two rates below replace its sample fields
    std::atomic<std::uint32_t> valid_sample_every_;
    std::atomic<std::uint32_t> invalid_sample_every_;
    DisableHook on_disable_;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::atomic<bool> enabled_{true};
    std::atomic<bool> disabling_{false};
    std::string disable_reason_;  // written once, before enabled_ turns false
    CrossCheckCounters counters_;
};

}  // namespace sigverify::daemon
