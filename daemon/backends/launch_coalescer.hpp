// SPDX-License-Identifier: MIT
// Joins the pieces that several worker threads hand one GPU slot at the same
// time into one launch (group commit).
//
// Workers call verify() with a piece of rows. If no launch is running, the
// caller becomes the leader: it takes the pending pieces in arrival order that
// can share a launch with the first one (same record kind and encoding, at
// most max_rows rows in all), copies their records (without tails) back to
// back into the staging rows, runs ONE launch, and hands every piece its
// verdicts. A piece that runs alone is launched as it is, without a copy. Callers
// that arrive while a launch runs wait and are taken by the next leader, so
// under load many small chunks (several clients' batches, or the tail chunks of
// big ones) become few large launches, and an idle GPU sees a piece at once:
// nothing waits for a timer. A piece of more than max_rows rows runs alone.
//
// Invariants: at most one launch at a time per coalescer; a piece's verdicts
// are written only into its own buffer, only by the launch that took it; every
// waiter is woken when its launch ends; FIFO: the oldest pending piece is in
// the next launch, so none starves. If a launch fails, every piece in it fails.
// A waiter cannot give up early: the leader writes into its verdict buffer
// until the launch ends. So a wait lasts as long as one launch, which the
// device verifier bounds by its own checks; a GPU that hangs outright stops
// chunks from completing, and the daemon's systemd watchdog (no WATCHDOG=1
// while batches are queued and no chunk finishes) restarts it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::daemon {

class LaunchCoalescer {
public:
    // Verifies rows (results mode: one verdict byte per row, 1 = valid) and
    // returns false on failure. Called by one leader at a time.
    using Launch = std::function<bool(const wire::RowSpan& rows, std::uint8_t* verdicts)>;

    LaunchCoalescer(std::size_t max_rows, Launch launch);
    LaunchCoalescer(const LaunchCoalescer&) = delete;
    LaunchCoalescer& operator=(const LaunchCoalescer&) = delete;

    // Writes rows.count verdicts to verdicts; blocks until the launch that
    // took this piece ends. Thread-safe.
    bool verify(const wire::RowSpan& rows, std::uint8_t* verdicts);

    std::uint64_t launches() const { return launches_.load(std::memory_order_relaxed); }
    std::uint64_t pieces() const { return pieces_.load(std::memory_order_relaxed); }
    std::uint64_t merged_pieces() const { return merged_.load(std::memory_order_relaxed); }

private:
    struct Piece {
        wire::RowSpan rows;
        std::uint8_t* verdicts;
        bool done = false;
        bool ok = false;
    };
    bool mergeable(const Piece& p) const;
    bool run(std::vector<Piece*>& batch);

    const std::size_t max_rows_;
    const Launch launch_;
    std::vector<std::uint8_t> staging_rows_;      // max_rows records, leader only
    std::vector<std::uint8_t> staging_verdicts_;  // max_rows verdicts, leader only
    std::mutex mutex_;
    std::condition_variable done_cv_;
    std::deque<Piece*> pending_;
    bool leading_ = false;
    std::atomic<std::uint64_t> launches_{0}, pieces_{0}, merged_{0};
};

}  // namespace sigverify::daemon
