// SPDX-License-Identifier: MIT
// What `sigverify bench` measures and how it reports it: repeated timings of
// one operation, a figure per (table, batch, backend), percentiles, and the
// rows/s chart (SVG), the tables printed and the JSON written. The measuring
// itself is bench_command.cpp.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace sigverify::cli::bench {

using Clock = std::chrono::steady_clock;

struct Timing {
    std::vector<double> seconds;  // one per repetition
    double min() const { return *std::min_element(seconds.begin(), seconds.end()); }
    double max() const { return *std::max_element(seconds.begin(), seconds.end()); }
    double median() const {
        auto s = seconds;
        std::sort(s.begin(), s.end());
        return s[s.size() / 2];
    }
};

// Runs fn up to `repeat` times, stopping early once `budget` seconds are spent
// (at least one run, and a warm-up run first when it is cheap).
template <class Fn>
Timing measure(unsigned repeat, double budget, Fn&& fn) {
    Timing t;
    double spent = 0;
    const auto once = [&] {
        const auto t0 = Clock::now();
        fn();
        return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    const double warm = once();
    if (warm > budget / 4) t.seconds.push_back(warm);  // too costly to throw away
    spent += warm;
    while (t.seconds.size() < repeat && (t.seconds.empty() || spent < budget)) {
        const double s = once();
        t.seconds.push_back(s);
        spent += s;
    }
    return t;
}

// The p-th percentile (0..100) of v, nearest rank; 0 for no values.
double percentile(std::vector<double> v, double p);

struct Row {
    std::string table;
    std::size_t batch = 0;
    std::string backend;  // "libsecp256k1 x1", "libsecp256k1 xN", "sigverifyd (cpu)"
    Timing timing;
    double rows_per_s() const { return double(batch) / timing.min(); }
    double ns_per_row() const { return timing.min() * 1e9 / double(batch); }
};

// "1.23M", "4.5k", "678": rates as the tables and the chart print them.
std::string human_rate(double r);

// rows/s against batch size, log-log, one line per (table, backend).
void write_svg(const std::string& path, const std::vector<Row>& rows);

struct Latency {
    std::size_t batch;
    std::string backend;
    std::vector<double> us;
};

struct ClientFigures {
    double rows = 0, seconds = 0, p50_us = 0, p99_us = 0;
};

struct PerOp {
    std::string op, backend;
    double ns = 0, bytes = 0, allocs = 0;
};

// Everything one run measures, in the order it is printed.
struct BenchResults {
    std::vector<Row> rows;               // throughput, per (table, batch, verifier)
    std::vector<Latency> latencies;      // 1-row and 64-row round trips
    std::vector<ClientFigures> multi;    // K client processes at once
    std::vector<ClientFigures> noisy;    // [0] the quiet client, then the noisy ones
    std::size_t multi_batch = 0;
    std::vector<PerOp> per_op;
    std::size_t per_op_batch = 0;
    std::size_t wrong = 0;               // daemon batches whose verdicts differed
};

// The CPU's model name (/proc/cpuinfo), "unknown" without one.
std::string cpu_model();

// The tables of a run on stdout (daemon: a daemon was measured: the line of
// differing verdicts).
void print_results(const BenchResults& b, unsigned all_threads, bool daemon);

// The run as JSON (--json FILE).
void write_json(const std::string& path, const std::string& preset, const BenchResults& b);

}  // namespace sigverify::cli::bench
