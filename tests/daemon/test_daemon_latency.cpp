// SPDX-License-Identifier: MIT
// Small batches keep their latency on a GPU daemon beside bulk verifiers
// (issue 29.6): a real daemon whose GPU sleeps for a GPU's time
// (sigverifyd_sleeping_gpu, sleeping_gpu.hpp: ~3 ms a launch, 25 M rows/s),
// real client processes (latency_load.hpp): four bulk clients, one of them
// all invalid rows (a libsecp256k1 confirmation each), beside a node sending
// 1-row batches and one sending 4,096-row batches. Every verdict is checked.
//
// The bounds are generous for a loaded 2-core CI machine and fail when a
// small batch waits for a bulk chunk's worker, as before the lane workers
// (daemon/schedule/scheduler.hpp): a worker holding a chunk of invalid rows confirms
// them for ~2.6 s of a core. The daemon keeps its defaults (batch split on)
// with eight workers, as GpuBackend gives one GPU of four slots.
// A second case turns the batch split off, so that a block goes to the GPU
// whole, and checks that it does not wait behind the bulk launches there (the
// lane workers' GPU slot, daemon/backends/gpu_backend.hpp).
// The goal figures are measured by sigverify_latency_bench (BENCHMARKS.md).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "latency_load.hpp"

using namespace sigverify;
using namespace sigverify::test;

namespace {

cli::DaemonProcessOptions sleeping_daemon(std::vector<std::string> extra = {}) {
    cli::DaemonProcessOptions o;
    o.binary = SIGVERIFYD_SLEEPING_BIN;
    // Eight workers: what GpuBackend::open_all gives one GPU of four slots.
    o.args = {"--backend", "host-kernel", "--gpus", "0", "--cpu-threads", "8"};
    o.args.insert(o.args.end(), extra.begin(), extra.end());
    o.temp_template = "/tmp/sigverifyd-test-XXXXXX";
    o.own_session = true;  // its own CPU group, as under its unit: bulk workers SCHED_IDLE
    return o;
}

void print(const char* what, const latency::Figures& f) {
    std::printf("%s: 1-row n=%zu p50=%.2f p99=%.2f max=%.2f ms; block n=%zu p50=%.1f p90=%.1f p99=%.1f ms; bulk %.0f rows/s\n",
                what, f.one_row_ms.size(), latency::percentile(f.one_row_ms, 0.5),
                latency::percentile(f.one_row_ms, 0.99), latency::percentile(f.one_row_ms, 1.0), f.block_ms.size(),
                latency::percentile(f.block_ms, 0.5), latency::percentile(f.block_ms, 0.9),
                latency::percentile(f.block_ms, 0.99), f.bulk_rows_per_s);
    std::fflush(stdout);
}

struct Measured {
    latency::Figures alone, loaded;
};

// The node's batches alone, then beside the bulk clients, both printed, and
// what every run must hold: no wrong verdict, no failed batch.
Measured measure(latency::Load& load, std::size_t one_row_batches, std::size_t block_batches,
                 const char* loaded_label) {
    Measured m{load.measure_alone(one_row_batches, block_batches), {}};
    print("alone", m.alone);
    m.loaded = load.run_load();
    print(loaded_label, m.loaded);
    CHECK(m.alone.wrong_verdicts == 0);
    CHECK(m.loaded.wrong_verdicts == 0);
    CHECK(m.alone.failed_batches == 0);
    CHECK(m.loaded.failed_batches == 0);
    return m;
}

}  // namespace

TEST_CASE("GPU daemon: 1-row and block batches keep their latency beside bulk clients, one of invalid rows",
          "[daemon][latency]") {
    cli::DaemonProcess d(sleeping_daemon());
    latency::LoadSpec spec;
    spec.runtime_dir = d.dir();
    latency::Load load(spec);
    const auto [alone, loaded] = measure(load, 200, 20, "beside 4 bulk clients");
    // The goals (1-row p99 <= 5 ms, a block <= 2x its time alone) are the
    // benchmark's; these bounds leave room for a CI machine's stalls (two
    // cores shared with the bulk clients' confirmations and the batch split's
    // CPU share) and were missed here before the lane workers, where a small
    // batch waited for a worker holding a bulk chunk: 1-row p50 108-146 ms,
    // p99 280-292 ms; block p50 24x alone, p99 1.0-1.2 s; 26-35 1-row and
    // 5-6 block batches in the window. After: 1-row p50 0.06-9.6 ms (the
    // worst beside five other agents' builds on the same two cores).
    const double block_alone = latency::percentile(alone.block_ms, 0.5);
    CHECK(latency::percentile(loaded.one_row_ms, 0.5) <= 40.0);
    CHECK(latency::percentile(loaded.one_row_ms, 0.99) <= 250.0);
    CHECK(latency::percentile(loaded.block_ms, 0.5) <= std::max(250.0, 4 * block_alone));
    CHECK(latency::percentile(loaded.block_ms, 0.99) <= std::max(500.0, 8 * block_alone));
    // Enough samples that p99 means something (a batch still waiting at the
    // window's end counts with its wait so far).
    CHECK(loaded.one_row_ms.size() >= 100);
    CHECK(loaded.block_ms.size() >= 10);
}

// The lane slot (daemon/backends/backend.hpp set_lane_workers; issue 29.6): with the
// batch split off a block-sized batch goes to the GPU whole, and its lane
// worker's launch must not queue behind the bulk launch on a GPU slot. Four
// bulk clients of valid rows keep every bulk slot busy (~24 ms a launch of
// two merged chunks here, 3 ms + 131,072 rows at a quarter of 25 M rows/s);
// the node's 4,096-row batch alone takes ~4 ms (3 ms + 4,096 rows at a
// slot's rate). No invalid client: the CPU confirmations are the other
// test's concern; this one is about the GPU slot a block waits for.
TEST_CASE("GPU daemon, batch split off: a block's launch does not wait behind bulk launches",
          "[daemon][latency][lane_slot]") {
    cli::DaemonProcess d(sleeping_daemon({"--gpu-split", "off"}));
    latency::LoadSpec spec;
    spec.runtime_dir = d.dir();
    spec.bulk_valid = 4;
    spec.bulk_invalid = 0;
    spec.warmup = std::chrono::milliseconds(1500);
    spec.window = std::chrono::milliseconds(3000);
    latency::Load load(spec);
    const auto [alone, loaded] = measure(load, 50, 20, "split off, beside 4 bulk clients");
    // Behind a bulk launch a block waits for the launch running on its slot
    // and then shares the next one with bulk chunks (a merged launch of up to
    // 131,072 rows): 24-48 ms, 6-12x alone. On a slot of its own it waits for
    // SMs at most about one wave (modelled as 3 ms while bulk launches run,
    // sleeping_gpu.hpp), then runs at a slot's rate: about 2x alone. The
    // bounds leave a loaded CI machine's stalls room at the median and fail
    // when the median block waits behind a bulk launch.
    // A second window when the first misses: beside two busy processes on
    // this machine's two cores one window of the fixed daemon came to p50
    // 11.4 ms, p90 20.9 ms (alone 4.2); a block behind the bulk launches
    // misses in every window.
    const double block_alone = latency::percentile(alone.block_ms, 0.5);
    const auto within = [block_alone](const latency::Figures& f) {
        return latency::percentile(f.block_ms, 0.5) <= 2.5 * block_alone + 2.0 &&
               latency::percentile(f.block_ms, 0.9) <= 3 * block_alone + 8.0;
    };
    latency::Figures window = loaded;
    if (!within(window)) {
        window = load.run_load();
        print("split off, beside 4 bulk clients, second window", window);
        CHECK(window.wrong_verdicts == 0);
        CHECK(window.failed_batches == 0);
    }
    CHECK(latency::percentile(window.block_ms, 0.5) <= 2.5 * block_alone + 2.0);
    CHECK(latency::percentile(window.block_ms, 0.9) <= 3 * block_alone + 8.0);
    CHECK(window.block_ms.size() >= 20);
}
