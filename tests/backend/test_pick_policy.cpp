// SPDX-License-Identifier: MIT
// The scheduler's pick policy (daemon/schedule/pick_policy.hpp) as a pure
// function: the latency lane first, its burst limit, the round-robin line,
// whole chunks where the burst forced a bulk pick, lane workers' debt order.
#include <vector>

#include <catch2/catch.hpp>

#include "daemon/schedule/pick_policy.hpp"

using namespace sigverify::daemon;

namespace {
QueueFacts small_batch() { return QueueFacts{true, false, true, false}; }
QueueFacts bulk_batch() { return QueueFacts{false, false, false, true}; }
constexpr unsigned kBurst = 4;
}  // namespace

TEST_CASE("pick: nothing runnable is nothing for anyone", "[scheduler][pick]") {
    const std::vector<QueueFacts> none;
    CHECK(pick_queue(none, false, 0, kBurst).queue == PickDecision::kNone);
    CHECK(pick_queue(none, true, 2, kBurst).queue == PickDecision::kNone);
    CHECK(pick_queue(none, true, 2, kBurst).lane_streak == 2);
}

TEST_CASE("pick: a small batch goes before the bulk line, at most burst times in a row", "[scheduler][pick]") {
    const std::vector<QueueFacts> q = {bulk_batch(), bulk_batch(), small_batch()};
    unsigned streak = 0;
    for (unsigned i = 0; i < kBurst; ++i) {
        const PickDecision d = pick_queue(q, false, streak, kBurst);
        CHECK(d.queue == 2);
        CHECK(d.may_yield);
        streak = d.lane_streak;
        CHECK(streak == i + 1);
    }
    // The burst is spent: the front of the bulk line runs, whole.
    const PickDecision d = pick_queue(q, false, streak, kBurst);
    CHECK(d.queue == 0);
    CHECK_FALSE(d.may_yield);
    CHECK(d.lane_streak == 0);
    // Then the lane again.
    CHECK(pick_queue(q, false, d.lane_streak, kBurst).queue == 2);
}

TEST_CASE("pick: small batches alone are served past the burst; bulk alone may yield", "[scheduler][pick]") {
    const std::vector<QueueFacts> smalls = {small_batch(), small_batch()};
    const PickDecision d = pick_queue(smalls, false, kBurst, kBurst);
    CHECK(d.queue == 0);
    CHECK(d.lane_streak == kBurst);  // stays at the limit
    const std::vector<QueueFacts> bulks = {bulk_batch(), bulk_batch()};
    const PickDecision b = pick_queue(bulks, false, 3, kBurst);
    CHECK(b.queue == 0);
    CHECK(b.may_yield);  // no small batch waits: it may still be cut for one that comes
    CHECK(b.lane_streak == 0);
}

TEST_CASE("pick: a bulk worker leaves what only a lane worker may take", "[scheduler][pick]") {
    // A small batch an idle lane worker will take: neither small nor bulk for a bulk worker.
    const std::vector<QueueFacts> q = {QueueFacts{true, false, false, false}};
    CHECK(pick_queue(q, false, 0, kBurst).queue == PickDecision::kNone);
    const PickDecision lane = pick_queue(q, true, 1, kBurst);
    CHECK(lane.queue == 0);
    CHECK_FALSE(lane.may_yield);
    CHECK(lane.lane_streak == 1);  // lane workers leave the bulk workers' streak alone
}

TEST_CASE("pick: lane workers serve accounts that owe nothing first", "[scheduler][pick]") {
    const QueueFacts owes{true, true, true, false};
    const std::vector<QueueFacts> q = {owes, bulk_batch(), small_batch()};
    CHECK(pick_queue(q, true, 0, kBurst).queue == 2);
    const std::vector<QueueFacts> only_debt = {bulk_batch(), owes};
    CHECK(pick_queue(only_debt, true, 0, kBurst).queue == 1);
    // A lane worker never takes bulk work.
    const std::vector<QueueFacts> bulk_only = {bulk_batch()};
    CHECK(pick_queue(bulk_only, true, 0, kBurst).queue == PickDecision::kNone);
}
