// SPDX-License-Identifier: MIT
#include "daemon/schedule/pick_policy.hpp"

#include <algorithm>

namespace sigverify::daemon {

namespace {

template <class Pred>
std::size_t first(std::span<const QueueFacts> queues, Pred pred) {
    const auto it = std::find_if(queues.begin(), queues.end(), pred);
    return it == queues.end() ? PickDecision::kNone : static_cast<std::size_t>(it - queues.begin());
}

}  // namespace

PickDecision pick_queue(std::span<const QueueFacts> queues, bool lane_worker, unsigned lane_streak,
                        unsigned lane_burst) {
    PickDecision d;
    d.lane_streak = lane_streak;
    if (lane_worker) {
        d.may_yield = false;
        d.queue = first(queues, [](const QueueFacts& q) { return q.lane_worker_work && !q.indebted; });
        if (d.queue == PickDecision::kNone) d.queue = first(queues, [](const QueueFacts& q) { return q.lane_worker_work; });
        return d;
    }
    const std::size_t small = first(queues, [](const QueueFacts& q) { return q.small; });
    const std::size_t bulk = first(queues, [](const QueueFacts& q) { return q.bulk; });
    if (small != PickDecision::kNone && (lane_streak < lane_burst || bulk == PickDecision::kNone)) {
        d.queue = small;
        d.lane_streak = std::min(lane_streak + 1, lane_burst);
    } else if (bulk != PickDecision::kNone) {
        d.queue = bulk;
        d.may_yield = small == PickDecision::kNone;
        d.lane_streak = 0;
    }
    return d;
}

}  // namespace sigverify::daemon
