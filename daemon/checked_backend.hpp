// Consensus safety for a backend whose verdicts are not trusted on their own.
//
// The GPU is fast but is not the consensus reference. CheckedBackend wraps such
// a primary backend and never hands back one of its verdicts unchecked:
//   * the primary verifies the records into this worker's private verdicts;
//   * every row it calls INVALID is re-verified by libsecp256k1, and a random
//     sample of the VALID ones (1 in valid_sample_every);
//   * pieces below cpu_below_rows rows skip the primary: libsecp256k1
//     verifies them in the worker (latency, not trust);
//   * only then are a piece's verdicts copied to the caller's buffer; the
//     scheduler publishes them to the client (verdict_publish.hpp).
// Any disagreement, or any error of the primary, disables the primary for good
// and fails the chunk with backend_error; the scheduler then re-runs the chunk
// on its CPU fallback, so the client still gets libsecp256k1's verdicts.
//
// Invariant relied on: the records are PRIVATE memory that nobody else writes
// while verify() runs (the scheduler's staging rows, never the client's
// arena). The primary and the libsecp256k1 re-check therefore read the same
// bytes, so a client that rewrites its rows while they are verified can change
// only its own verdicts and can never make the primary look faulty (which
// would switch the GPU off for everyone).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon/backend.hpp"

namespace sigverify::daemon {

struct CrossCheckPolicy {
    // Re-verify one VALID row in this many (0 = none, 1 = all). Every INVALID
    // row is always re-verified.
    std::uint32_t valid_sample_every = 1024;
    // Pieces of fewer rows are verified by libsecp256k1 in the worker, not
    // sent to the primary: a GPU round trip costs milliseconds (a launch, and
    // one GPU thread verifying serially), a few rows on one core microseconds.
    std::size_t cpu_below_rows = 0;
};

struct CrossCheckCounters {
    std::atomic<std::uint64_t> rows_rechecked{0};   // rows libsecp256k1 re-verified
    std::atomic<std::uint64_t> mismatches{0};       // rows where the primary was wrong
    std::atomic<std::uint64_t> primary_errors{0};   // chunks the primary failed
    std::atomic<std::uint64_t> refused_chunks{0};   // chunks refused after the primary was disabled
    std::atomic<std::uint64_t> rows_small{0};       // rows of pieces below cpu_below_rows, verified on the CPU
};

class CheckedBackend final : public Backend {
public:
    // Called once, from a worker thread, when the primary is switched off.
    using DisableHook = std::function<void(const std::string& reason)>;

    // max_chunk_rows bounds what the primary gets in one call and the private
    // verdicts per worker (allocated here, once); larger chunks are processed
    // in pieces of that size.
    CheckedBackend(std::unique_ptr<Backend> primary, std::size_t max_chunk_rows, CrossCheckPolicy policy,
                   DisableHook on_disable = {});
    ~CheckedBackend() override;

    std::string name() const override;
    unsigned concurrency() const override;
    std::size_t preferred_chunk_rows() const override;
    ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override;

    bool primary_enabled() const { return enabled_.load(std::memory_order_acquire); }
    const std::string& disable_reason() const { return disable_reason_; }
    const CrossCheckCounters& counters() const { return counters_; }
    Backend& primary() { return *primary_; }

private:
    struct Worker;
    // One piece (at most max_chunk_rows_ records); on success its checked
    // verdicts are in w.verdicts[0, piece.count).
    ChunkResult verify_piece(Worker& w, unsigned worker, const wire::RowSpan& piece);
    void disable(const std::string& reason);

    std::unique_ptr<Backend> primary_;
    std::size_t max_chunk_rows_;
    CrossCheckPolicy policy_;
    DisableHook on_disable_;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::atomic<bool> enabled_{true};
    std::atomic<bool> disabling_{false};
    std::string disable_reason_;  // written once, before enabled_ turns false
    CrossCheckCounters counters_;
};

}  // namespace sigverify::daemon
