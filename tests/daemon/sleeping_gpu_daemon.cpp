// SPDX-License-Identifier: MIT
// sigverifyd_sleeping_gpu: a TEST executable, never installed. It is
// sigverifyd (the same sigverifyd_core, the same Server) whose host-kernel
// "GPUs" are SleepingGpuBackends (sleeping_gpu.hpp): a launch takes a GPU's
// time, asleep, and its verdicts are libsecp256k1's. The latency test and
// benchmark (test_daemon_latency, sigverify_latency_bench) run it to see
// what a small batch waits for on a GPU daemon.
//
//   sigverifyd_sleeping_gpu [--sleep-latency-ms 3] [--sleep-rows-per-s 25e6]
//                           [--sleep-slots 4]  SIGVERIFYD-ARGS...
//
// Its own options come first and are removed before sigverifyd's parser sees
// the rest; SIGVERIFYD-ARGS must include --backend host-kernel and
// --foreground. Chunks are --gpu-chunk-rows rows; the workers are the ones the
// daemon asks the host-kernel factory for (--cpu-threads, and the latency
// lane's): give --cpu-threads 8 to have the two workers per slot that
// GpuBackend::open_all gives a real GPU on a small host.
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "daemon/ops/config.hpp"
#include "daemon/ops/exit_codes.hpp"
#include "daemon/serve/server.hpp"
#include "sleeping_gpu.hpp"
#include "stand_in_daemon.hpp"

namespace {

int usage(const std::string& why) {
    std::cerr << "sigverifyd_sleeping_gpu: " << why
              << "\nusage: sigverifyd_sleeping_gpu [--sleep-latency-ms MS] [--sleep-rows-per-s R] [--sleep-slots N] "
                 "--backend host-kernel --foreground SIGVERIFYD-ARGS...\n";
    return sigverify::daemon::exit_status::usage_error;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace sigverify;
    test::SleepSpec spec;
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--sleep-latency-ms" && has_value) {
            spec.latency_s = std::strtod(argv[++i], nullptr) * 1e-3;
            if (!(spec.latency_s >= 0 && spec.latency_s <= 1)) return usage("--sleep-latency-ms: 0..1000");
        } else if (a == "--sleep-rows-per-s" && has_value) {
            spec.rows_per_s = std::strtod(argv[++i], nullptr);
            if (!(spec.rows_per_s >= 1e3 && spec.rows_per_s <= 1e10)) return usage("--sleep-rows-per-s: 1e3..1e10");
        } else if (a == "--sleep-slots" && has_value) {
            const long n = std::strtol(argv[++i], nullptr, 10);
            if (n < 1 || n > 64) return usage("--sleep-slots: 1..64");
            spec.slots = unsigned(n);
        } else {
            rest.push_back(argv[i]);
        }
    }
    return test::run_stand_in_daemon("sigverifyd_sleeping_gpu", rest, usage, [&spec](const daemon::Config& cfg) {
        spec.chunk_rows = std::max<std::size_t>(1, cfg.gpu_chunk_rows);
        auto memo = std::make_shared<test::VerdictMemo>();
        return daemon::HostKernelFactory([spec, memo](int index, unsigned workers, gpu::Status&) -> std::unique_ptr<daemon::Backend> {
            return std::make_unique<test::SleepingGpuBackend>(index, workers, spec, memo);
        });
    });
}
