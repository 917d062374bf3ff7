// SPDX-License-Identifier: MIT
// sigverify_measure: throughput through sigverifyd vs the in-process reference
// verifier (1 and 2 threads) and the round trip of 1-row batches.
//
//   sigverify_measure [rows=40000] [one_row_batches=3000] [rounds=3]
//
// Throughput figures are the best of `rounds` alternating runs (in-process,
// daemon, in-process, ...), since other load can only slow a run down.
//
// Starts its own sigverifyd (the binary built next to it) in a temporary
// runtime directory for each thread count. Not a test: it prints figures.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "tests/support/seconds_since.hpp"

using namespace sigverify;
using test::seconds_since;
using Clock = std::chrono::steady_clock;

namespace {

std::string loadavg() {
    std::string s;
    if (FILE* f = std::fopen("/proc/loadavg", "r")) {
        char buf[128];
        if (std::fgets(buf, sizeof buf, f)) s = buf;
        std::fclose(f);
    }
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
}

double pct(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())));
    return v[i];
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 40000;
    const std::size_t singles = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 3000;
    const int rounds = argc > 3 ? std::atoi(argv[3]) : 3;
    std::printf("load average at start: %s (other processes skew the 2-thread figures)\n", loadavg().c_str());
    std::printf("generating %zu ECDSA and %zu Schnorr rows...\n", n, n);
    auto ecdsa = test::make_rows(wire::Table::ecdsa, n, wire::SigEncoding::opaque, 1);
    auto schnorr = test::make_rows(wire::Table::schnorr, n, wire::SigEncoding::opaque, 2);
    std::vector<std::uint8_t> results(n), expected(n);
    const wire::RowSpan es{wire::RecordKind::ecdsa, 3, wire::SigEncoding::opaque, ecdsa.data(), n};
    const wire::RowSpan ss{wire::RecordKind::schnorr, 3, wire::SigEncoding::opaque, schnorr.data(), n};

    std::printf("\nrows/s, best of %d alternating runs of %zu rows:\n", rounds, n);
    std::printf("%-8s %-8s %14s %14s %8s\n", "table", "threads", "in-process/s", "daemon/s", "ratio");
    for (unsigned threads : {1u, 2u}) {
        test::DaemonProcess d({"--cpu-threads", std::to_string(threads)});
        ClientOptions o;
        o.runtime_dir = d.dir();
        o.name = "measure";
        auto c = Client::connect(o);
        reference::Verifier local(threads);
        for (int t = 0; t < 2; ++t) {
            const wire::RowSpan& span = t == 0 ? es : ss;
            // Alternate in-process and daemon runs and keep the best of each:
            // other load on the machine only ever slows a run down.
            double best_local = 0, best_daemon = 0;
            for (int round = 0; round < rounds; ++round) {
                auto t0 = Clock::now();
                local.verify(span, expected.data());
                best_local = std::max(best_local, static_cast<double>(n) / seconds_since(t0));
                t0 = Clock::now();
                const BatchResult r = c->run(span, wire::Mode::results, results.data());
                best_daemon = std::max(best_daemon, static_cast<double>(n) / seconds_since(t0));
                if (!r.ok() || results != expected) {
                    std::fprintf(stderr, "daemon verdicts differ from the reference (status %s)\n",
                                 shm::to_string(r.status).data());
                    return 1;
                }
            }
            std::printf("%-8s %-8u %14.0f %14.0f %8.3f\n", t == 0 ? "ecdsa" : "schnorr", threads, best_local,
                        best_daemon, best_daemon / best_local);
        }
        if (threads == 2) {
            std::vector<double> ping_lat, one_lat;
            for (std::size_t i = 0; i < singles; ++i) {
                std::uint64_t rtt = 0;
                if (const Status st = c->ping(&rtt); st != Status::ok) {
                    std::fprintf(stderr, "ping failed (status %s)\n", shm::to_string(st).data());
                    return 1;
                }
                ping_lat.push_back(static_cast<double>(rtt) * 1e-3);
            }
            for (std::size_t i = 0; i < singles; ++i) {
                std::uint8_t res = 0;
                const auto t0 = Clock::now();
                const BatchResult r = c->verify_ecdsa(ecdsa.data() + (i % n) * 132, 1, 3, &res);
                one_lat.push_back(seconds_since(t0) * 1e6);
                if (!r.ok()) return 1;
            }
            reference::RowVerifier rv;
            std::vector<double> direct;
            for (std::size_t i = 0; i < singles; ++i) {
                const auto t0 = Clock::now();
                (void)rv.verify_row(es, i % n);
                direct.push_back(seconds_since(t0) * 1e6);
            }
            std::printf("\n1-row round trips (%zu each, daemon with 2 threads), microseconds:\n", singles);
            std::printf("  %-34s p50 %8.1f  p99 %8.1f\n", "no-op through the rings (ping)", pct(ping_lat, 0.5),
                        pct(ping_lat, 0.99));
            std::printf("  %-34s p50 %8.1f  p99 %8.1f\n", "1-row ECDSA batch through daemon", pct(one_lat, 0.5),
                        pct(one_lat, 0.99));
            std::printf("  %-34s p50 %8.1f  p99 %8.1f\n", "1 ECDSA verify in-process", pct(direct, 0.5),
                        pct(direct, 0.99));
        }
    }
    std::printf("load average at end: %s\n", loadavg().c_str());
    return 0;
}
