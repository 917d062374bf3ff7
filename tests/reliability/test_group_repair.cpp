// SPDX-License-Identifier: MIT
// Issue 29.3: the groups rule's job-end repair against a real host-kernel
// daemon (the GPU path, CheckedBackend, groups confirmation), with batches
// whose multisig groups all span chunks. The repair used to rescan the first
// chunk once per repaired group (131,072 rows at 65,536-row chunks: 24.9 s on
// the red-team machine) while holding a worker; two such batches held both,
// and an honest 1-row batch waited for them. The bounds below are generous
// (a loaded 2-core machine): the linear repair takes well under a second.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "ops/ops_helpers.hpp"
#include "sigverify/client.hpp"
#include "spanning_groups.hpp"
#include "support/seconds_since.hpp"

using namespace sigverify;
using namespace sigverify::test;
using Clock = std::chrono::steady_clock;

namespace {

// The rows as ONE batch (zero-copy: the copy API would cut them into
// pieces of a quarter of the arena, each its own job); the daemon's answer.
BatchResult one_job(const DaemonProcess& d, const char* name, const std::vector<wire::MultisigRow>& rows) {
    auto c = Client::connect(options_for(d, name));
    RowBatch b;
    const std::size_t tail = wire::canonical_tail_size(wire::Table::multisig);
    if (const Status s = c->reserve(wire::RecordKind::ecdsa, tail, rows.size(), b); s != Status::ok)
        return BatchResult{s};
    std::memcpy(b.rows, rows.data(), rows.size() * sizeof(wire::MultisigRow));
    if (const Status s = c->submit(b, wire::Mode::results, wire::SigEncoding::opaque,
                                   static_cast<std::uint8_t>(wire::Table::multisig));
        s != Status::ok)
        return BatchResult{s};
    const BatchResult r = c->wait(b);
    c->release(b);
    return r;
}

}  // namespace

TEST_CASE("groups spanning chunks: two hostile batches are repaired in linear time, an honest row is answered",
          "[reliability][repair]") {
    constexpr std::size_t kRows = 131072, kChunk = 65536;
    // --gpu-split off: every row goes through the "GPU" and the groups rule.
    DaemonProcess d({"--backend", "host-kernel", "--gpus", "0", "--cpu-threads", "2", "--gpu-split", "off",
                     "--gpu-chunk-rows", std::to_string(kChunk), "--chunk-rows", std::to_string(kChunk)});
    const std::vector<wire::MultisigRow> hostile = interleaved_invalid_groups(kRows);

    // Two clients, one hostile batch each: both workers end up repairing.
    const auto t0 = Clock::now();
    std::vector<std::future<std::pair<BatchResult, double>>> attacks;
    for (const char* name : {"hostile-1", "hostile-2"}) {
        attacks.push_back(std::async(std::launch::async, [&, name] {
            const BatchResult r = one_job(d, name, hostile);
            return std::make_pair(r, seconds_since(t0));
        }));
    }
    // An honest node's 1-row batch while they run (or after they finished).
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const KnownRows one = make_known_rows(wire::Table::multisig, 1, wire::SigEncoding::opaque, 2903);
    auto honest = Client::connect(options_for(d, "honest"));
    std::vector<std::uint8_t> got(1, 0xAA);
    const auto t1 = Clock::now();
    const BatchResult h = honest->run(
        wire::RowSpan{wire::RecordKind::ecdsa, wire::canonical_tail_size(wire::Table::multisig),
                      wire::SigEncoding::opaque, const_cast<std::uint8_t*>(one.rows.data()), 1},
        wire::Mode::results, got.data(), static_cast<std::uint8_t>(wire::Table::multisig));
    const double honest_s = seconds_since(t1);
    INFO("honest 1-row batch answered in " << honest_s << " s");
    CHECK(h.ok());
    CHECK(got == one.expected);
    CHECK(honest_s < 10.0);
    std::printf("honest 1-row batch: %.3f s\n", honest_s);

    for (auto& a : attacks) {
        const auto [r, s] = a.get();
        INFO("hostile batch done after " << s << " s");
        std::printf("hostile batch done after %.3f s\n", s);
        CHECK(r.ok());
        CHECK(r.invalid == kRows);
        CHECK(s < 20.0);
    }
    // Each batch was one job whose first chunk held a row of every group.
    CHECK(stats_counter(d.dir(), "confirm_batches_groups") >= 2);
    CHECK(stats_counter(d.dir(), "confirm_repaired_rows") == 2 * kChunk);
    CHECK(stats_counter(d.dir(), "gpu_crosscheck_mismatches") == 0);
}
