// SPDX-License-Identifier: MIT
// sigverify_latency_bench: what a node's small batches wait for on a GPU
// daemon beside bulk verifiers (issue 29.6; docs/benchmarks-history.md §13,
// "Small batches on a GPU daemon"). Not a test: it prints figures.
//
//   sigverify_latency_bench [--gpu sleeping|host-kernel|real] [--window-ms 6000]
//                           [--bulk-rows N] [--invalid-rows N] [--bulk N] [--bulk-invalid N]
//                           [--block-rows 4096] [--daemon PATH] [--same-session]
//                           [-- SIGVERIFYD-ARGS...]
//
// --daemon: another build of the daemon executable (an earlier commit's, to
// compare), in place of the one built next to this program.
// --same-session: the daemon stays in this program's session, and so in the
// clients' CPU group (daemon/ops/cpu_group.hpp: its bulk workers take nice 10
// instead of SCHED_IDLE); by default it gets a session of its own, as the
// systemd unit gives it a cgroup of its own.
// --gpu sleeping runs sigverifyd_sleeping_gpu (a GPU's time, asleep:
// tests/daemon/sleeping_gpu.hpp); host-kernel runs sigverifyd --backend
// host-kernel (the kernel math on this machine's cores); real runs sigverifyd
// --backend gpu on this machine's GPUs (scripts/gpu-check.sh). Without
// SIGVERIFYD-ARGS the sleeping GPU's daemon gets --cpu-threads 8. The load is
// tests/daemon/latency_load.hpp: bulk clients (one of invalid rows) beside a
// node's 1-row and block-sized batches, every verdict checked. Printed:
// libsecp256k1 in this process on one core (the same rows), the honest
// batches alone through the daemon, then beside the bulk clients, and the
// bulk clients' rows/s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "latency_load.hpp"
#include "ops_helpers.hpp"

using namespace sigverify;
using namespace sigverify::test;

namespace {

int usage() {
    std::fprintf(stderr,
                 "usage: sigverify_latency_bench [--gpu sleeping|host-kernel|real] [--window-ms MS] [--bulk-rows N] "
                 "[--invalid-rows N] "
                 "[--bulk N] [--bulk-invalid N] [--block-rows N] [--daemon PATH] [--same-session] [-- SIGVERIFYD-ARGS...]\n");
    return 2;
}

// libsecp256k1 on one core in this process: milliseconds for the rows, best of 5.
double reference_ms(const latency::Rows& r) {
    reference::RowVerifier v;
    // Read only: RowSpan holds a mutable pointer for collect mode, not used here.
    const wire::RowSpan span{wire::RecordKind::ecdsa, 3, wire::SigEncoding::opaque,
                             const_cast<std::uint8_t*>(r.bytes.data()), r.count};
    std::vector<std::uint8_t> out(r.count);
    double best = 1e300;
    for (int k = 0; k < 5; ++k) {
        const auto t0 = latency::Clock::now();
        (void)v.run(span, 0, r.count, wire::Mode::results, out.data());
        best = std::min(best, latency::ms_since(t0));
    }
    return best;
}

void row(const char* what, const std::vector<double>& ms) {
    std::printf("  %-34s n=%-6zu p50 %9.2f  p99 %9.2f  max %9.2f ms\n", what, ms.size(), latency::percentile(ms, 0.5),
                latency::percentile(ms, 0.99), latency::percentile(ms, 1.0));
}

}  // namespace

int main(int argc, char** argv) {
    std::string gpu = "sleeping";
    latency::LoadSpec spec;
    spec.window = std::chrono::milliseconds(6000);
    std::vector<std::string> daemon_args;
    std::string daemon_bin;
    bool same_session = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has = i + 1 < argc;
        if (a == "--gpu" && has) gpu = argv[++i];
        else if (a == "--window-ms" && has) spec.window = std::chrono::milliseconds(std::atol(argv[++i]));
        else if (a == "--bulk-rows" && has) spec.bulk_rows = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--invalid-rows" && has) spec.invalid_rows = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--bulk" && has) spec.bulk_valid = unsigned(std::atoi(argv[++i]));
        else if (a == "--bulk-invalid" && has) spec.bulk_invalid = unsigned(std::atoi(argv[++i]));
        else if (a == "--block-rows" && has) spec.block_rows = std::strtoull(argv[++i], nullptr, 10);
        else if (a == "--daemon" && has) daemon_bin = argv[++i];
        else if (a == "--same-session") same_session = true;
        else if (a == "--") {
            for (++i; i < argc; ++i) daemon_args.push_back(argv[i]);
        } else return usage();
    }
    if (gpu != "sleeping" && gpu != "host-kernel" && gpu != "real") return usage();
    spec.distinct_rows = std::min(spec.distinct_rows, spec.bulk_rows);
    // The sleeping GPU's workers: two per slot, as GpuBackend::open_all gives a GPU.
    if (gpu == "sleeping" && daemon_args.empty()) daemon_args = {"--cpu-threads", "8"};

    cli::DaemonProcessOptions o;
    o.binary = !daemon_bin.empty() ? daemon_bin : gpu == "sleeping" ? SIGVERIFYD_SLEEPING_BIN : SIGVERIFYD_BIN;
    o.args = gpu == "real" ? std::vector<std::string>{"--backend", "gpu"} : std::vector<std::string>{"--backend", "host-kernel"};
    // One stand-in GPU unless the daemon's arguments name their own (e.g. -- --gpus 0,1).
    if (gpu != "real" && std::find(daemon_args.begin(), daemon_args.end(), "--gpus") == daemon_args.end())
        o.args.insert(o.args.end(), {"--gpus", "0"});
    o.args.insert(o.args.end(), daemon_args.begin(), daemon_args.end());
    o.temp_template = "/tmp/sigverifyd-bench-XXXXXX";
    // A CPU group of its own, as under its systemd unit (daemon/ops/cpu_group.hpp).
    o.own_session = !same_session;
    cli::DaemonProcess d(o);
    spec.runtime_dir = d.dir();
    std::printf("daemon: %s", o.binary.c_str());
    for (const auto& a : o.args) std::printf(" %s", a.c_str());
    std::printf("\nload: %u bulk clients of valid rows (%zu a batch) + %u of invalid rows (%zu a batch); "
                "window %lld ms\n",
                spec.bulk_valid, spec.bulk_rows, spec.bulk_invalid, spec.invalid_rows,
                static_cast<long long>(spec.window.count()));
    // Rows the daemon handed to verification (read in place or staged): the
    // bulk rate is their growth over the window less the honest rows. It
    // counts rows of batches that do not finish in the window too, which
    // the clients' own count (batches done in it) cannot.
    std::uint64_t handed0 = 0, handed1 = 0;
    const auto handed = [&] {
        const auto c = nlohmann::json::parse(test::stats_command(d.dir(), "stats json"))["counters"];
        return c["rows_in_place"].get<std::uint64_t>() + c["rows_staged"].get<std::uint64_t>();
    };
    spec.at_window_start = [&] { handed0 = handed(); };
    spec.at_window_end = [&] { handed1 = handed(); };
    latency::Load load(spec);
    std::printf("libsecp256k1, this process, one core: 1 row %.3f ms, %zu rows %.2f ms\n", reference_ms(load.one_row()),
                spec.block_rows, reference_ms(load.block()));
    const latency::Figures alone = load.measure_alone(500, 30);
    std::printf("alone:\n");
    row("1-row batch", alone.one_row_ms);
    row((std::to_string(spec.block_rows) + "-row batch").c_str(), alone.block_ms);
    const latency::Figures loaded = load.run_load();
    std::printf("beside the bulk clients:\n");
    row("1-row batch", loaded.one_row_ms);
    row((std::to_string(spec.block_rows) + "-row batch").c_str(), loaded.block_ms);
    // The share of 1-row batches that waited at all (a free worker answers one in ~0.1 ms):
    // steadier than a p99 on a shared machine.
    const auto over_1ms = std::count_if(loaded.one_row_ms.begin(), loaded.one_row_ms.end(),
                                        [](double ms) { return ms > 1.0; });
    std::printf("  1-row batches over 1 ms: %lld of %zu (%.1f%%)\n", static_cast<long long>(over_1ms),
                loaded.one_row_ms.size(),
                loaded.one_row_ms.empty() ? 0.0 : 100.0 * double(over_1ms) / double(loaded.one_row_ms.size()));
    const double ratio = latency::percentile(loaded.block_ms, 0.99) / latency::percentile(alone.block_ms, 0.5);
    std::printf("  block p99 / alone p50: %.2fx\n", ratio);
    const double honest_rows = double(loaded.one_row_ms.size()) + double(loaded.block_ms.size() * spec.block_rows);
    std::printf("  bulk rows handed to verification: %.0f rows/s (batches completed in the window: %.0f rows/s)\n",
                (double(handed1 - handed0) - honest_rows) / (double(spec.window.count()) * 1e-3),
                loaded.bulk_rows_per_s);
    const std::uint64_t wrong = alone.wrong_verdicts + loaded.wrong_verdicts;
    const std::uint64_t failed = alone.failed_batches + loaded.failed_batches;
    std::printf("wrong verdicts: %llu, failed batches: %llu\n", static_cast<unsigned long long>(wrong),
                static_cast<unsigned long long>(failed));
    return wrong == 0 && failed == 0 ? 0 : 1;
}
