// SPDX-License-Identifier: MIT
// The CPU lanes through the daemon against the lanes alone and against the
// CPU backend, on the same ECDSA rows in the same run (issue 42,
// BENCHMARKS.md "CPU lanes through the daemon"):
//   libsecp256k1 xN   reference::Verifier in this process, N threads
//   lanes alone xN    the rows code the lanes backend runs
//                     (daemon::verify_lanes_range), N threads, no daemon
//   sigverifyd lanes  a private `sigverifyd --backend lanes`
//   sigverifyd cpu    a private `sigverifyd --backend cpu`
// Rounds interleave the four; the best of each is printed with its ratio to
// libsecp256k1 xN and to the lanes alone. Every verdict of every round is
// compared with libsecp256k1's first verdicts (a difference exits 1).
// Usage: sigverify_lanes_daemon_bench [--invalid-rate R] [rounds] [sizes...]
//        (default 0.05, 3, 4096 65536). The invalid rows are what the
//        daemon's confirmation rule spends libsecp256k1 on, so the rate moves
//        the daemon's ratio to the lanes alone.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "client/cli/daemon_process.hpp"
#include "daemon/backends/lanes_rows.hpp"
#include "reference/parallel_for.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"
#include "sigverify/client.hpp"

using namespace sigverify;
using Clock = std::chrono::steady_clock;

namespace {

std::unique_ptr<cli::DaemonProcess> start_daemon(const char* backend) {
    cli::DaemonProcessOptions o;
    o.binary = SIGVERIFYD_BIN;
    o.args = {"--backend", backend, "--arena-size", "256M"};
    o.temp_template = "/tmp/sigverify-lanes-bench-XXXXXX";
    o.start_timeout = std::chrono::seconds(30);
    return std::make_unique<cli::DaemonProcess>(o);
}

std::unique_ptr<Client> connect(const cli::DaemonProcess& d) {
    ClientOptions o;
    o.runtime_dir = d.dir();
    o.name = "lanes-bench";
    o.arena_size = 256ull << 20;
    Status st;
    std::string msg;
    auto c = Client::connect(o, st, msg);
    if (!c) {
        std::fprintf(stderr, "connect: %s\n", msg.c_str());
        std::exit(1);
    }
    return c;
}

struct Series {
    std::string name;
    std::function<void(std::uint8_t*)> run;  // verdicts of the batch into out
    double best = 0;
};

}  // namespace

int main(int argc, char** argv) {
    double invalid_rate = 0.05;
    int first = 1;
    if (argc > 2 && std::string(argv[1]) == "--invalid-rate") {
        invalid_rate = std::strtod(argv[2], nullptr);
        if (!(invalid_rate >= 0 && invalid_rate <= 1)) {
            std::fprintf(stderr, "--invalid-rate takes a fraction from 0 to 1\n");
            return 2;
        }
        first = 3;
    }
    const int rounds = argc > first ? std::max(1, std::atoi(argv[first])) : 3;
    std::vector<std::size_t> sizes;
    for (int i = first + 1; i < argc; ++i) sizes.push_back(std::strtoull(argv[i], nullptr, 10));
    if (sizes.empty()) sizes = {4096, 65536};
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    const auto width = kernels::lanes::chosen_width();
    auto lanes_daemon = start_daemon("lanes");
    auto cpu_daemon = start_daemon("cpu");
    auto lanes_client = connect(*lanes_daemon);
    auto cpu_client = connect(*cpu_daemon);
    reference::Verifier secp(threads);
    reference::WorkerPool pool(threads);
    std::printf("ECDSA rows (opaque, %.1f%% invalid, 10%% high-S), %u threads, lane width %s, best of %d interleaved rounds\n",
                invalid_rate * 100, threads, std::string(kernels::lanes::width_name(width)).c_str(), rounds);
    std::printf("%-8s %-22s %14s %12s %12s\n", "rows", "verifier", "rows/s", "x libsecp", "x lanes");
    for (std::size_t n : sizes) {
        reference::GenOptions g;
        g.count = n;
        g.invalid_rate = invalid_rate;
        g.high_s_rate = 0.10;
        g.seed = 4242 + n;
        std::vector<std::uint8_t> rows = reference::generate_rows(g);
        const std::size_t tail = wire::canonical_tail_size(wire::Table::ecdsa);
        const wire::RowSpan span{wire::RecordKind::ecdsa, tail, wire::SigEncoding::opaque, rows.data(), n};
        std::vector<std::uint8_t> want(n), got(n);
        secp.verify(span, want.data());
        auto through = [&](Client& c) {
            return [&c, &rows, n, tail](std::uint8_t* out) {
                if (!c.verify_ecdsa(rows.data(), n, tail, out, wire::SigEncoding::opaque).ok()) {
                    std::fprintf(stderr, "a daemon batch failed\n");
                    std::exit(1);
                }
            };
        };
        std::vector<Series> series = {
            {"libsecp256k1 x" + std::to_string(threads),
             [&](std::uint8_t* out) { secp.verify(span, out); }},
            {"lanes alone x" + std::to_string(threads),
             [&](std::uint8_t* out) {
                 pool.run([&](unsigned w) {
                     const std::size_t per = (n / threads + 7) / 8 * 8;
                     const std::size_t b = std::min(n, per * w), e = std::min(n, b + per);
                     daemon::verify_lanes_range(width, span, b, w + 1 == threads ? n : e, out);
                 });
             }},
            {"sigverifyd lanes", through(*lanes_client)},
            {"sigverifyd cpu", through(*cpu_client)},
        };
        for (auto& s : series) s.run(got.data());  // warm: tables, sessions, pools
        for (int r = 0; r < rounds; ++r)
            for (auto& s : series) {
                std::fill(got.begin(), got.end(), 0xAA);
                const auto t0 = Clock::now();
                s.run(got.data());
                const double rate = double(n) / std::chrono::duration<double>(Clock::now() - t0).count();
                if (got != want) {
                    std::fprintf(stderr, "%s: verdicts differ from libsecp256k1's at %zu rows\n", s.name.c_str(), n);
                    return 1;
                }
                s.best = std::max(s.best, rate);
            }
        for (const auto& s : series)
            std::printf("%-8zu %-22s %14.0f %12.2f %12.2f\n", n, s.name.c_str(), s.best, s.best / series[0].best,
                        s.best / series[1].best);
    }
    return 0;
}
