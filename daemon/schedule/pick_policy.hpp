// SPDX-License-Identifier: MIT
// Which runnable queue a worker serves next: the latency lane, its burst
// limit, the round-robin bulk line and the lane workers' debt order, as one
// pure function of what the scheduler knows about each queue (scheduler.hpp
// says why each rule exists). No threads, no locks: the scheduler reads the
// facts under its lock and applies the decision; tests call it directly.
#pragma once

#include <cstddef>
#include <span>

namespace sigverify::daemon {

// What the scheduler's predicates say about one runnable queue, in line order.
struct QueueFacts {
    bool lane_worker_work = false;  // a lane worker may take its next chunk
    bool indebted = false;          // its account owes the lane more than the limit
    bool small = false;             // latency-lane work a bulk worker may take
    bool bulk = false;              // round-robin work a bulk worker may take
};

struct PickDecision {
    static constexpr std::size_t kNone = ~std::size_t(0);
    std::size_t queue = kNone;  // index into the facts; kNone: nothing for this worker
    bool may_yield = true;      // the chunk may be cut for a small batch that waits
    unsigned lane_streak = 0;   // lane picks in a row after this one
};

// Invariants of the decision:
//   * a lane worker takes only lane-worker work, accounts that owe nothing
//     first, and never cuts its chunk; it leaves the streak as it was;
//   * a bulk worker takes the first small batch while fewer than lane_burst
//     lane picks ran in a row (or no bulk work waits), else the first bulk
//     queue, whose chunk may be cut only when no small batch waits (a chunk
//     the burst limit forced runs whole); a bulk pick resets the streak.
PickDecision pick_queue(std::span<const QueueFacts> queues, bool lane_worker, unsigned lane_streak,
                        unsigned lane_burst);

}  // namespace sigverify::daemon
