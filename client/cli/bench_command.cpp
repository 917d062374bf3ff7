// SPDX-License-Identifier: MIT
// `sigverify bench`: what a node pays per row, measured honestly.
//
// For each table and batch size the same generated rows are verified by
//   * libsecp256k1 in this process on 1 thread and on all threads (the
//     reference verifier: what a node would use without sigverify), and
//   * sigverifyd, end to end as a node pays it: fill the rows into the shared
//     arena, submit, wait, read the verdicts back.
// Each figure is best-of-N (N capped by a time budget per measurement) with
// min/median/max, and every daemon figure is also printed as a ratio to the
// in-process ones. Latency mode times 1-row and 64-row round trips; the
// multi-client mode runs K client processes at once. The daemon's verdicts are
// checked against the in-process ones: a benchmark of wrong answers is void.
#include "client/cli/bench_command.hpp"
#include "client/cli/bench_report.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/cli/cli_common.hpp"
#include "client/cli/daemon_process.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"
#include "sigverify/client.hpp"

// Counts every operator new in this program (alloc_counter.cpp).
std::uint64_t sigverify_allocation_count();

namespace sigverify::cli {
namespace {

using bench::Clock;
using bench::human_rate;
using bench::measure;
using bench::percentile;
using bench::Row;
using bench::Timing;
using bench::write_svg;
using nlohmann::json;

struct BenchArgs {
    std::string preset = "quick";
    std::vector<std::string> tables;
    std::vector<std::size_t> sizes;
    unsigned repeat = 0;
    double budget_s = 0;
    unsigned threads = 0;
    unsigned clients = 0;
    unsigned latency_iterations = 0;
    double invalid_rate = 0.05;
    std::string runtime_dir;
    // How long the daemon may leave one batch unanswered (a stopped or hung
    // one) before the run fails with timeout; generous, as the full preset's
    // largest batches are one wait each on a small CPU daemon.
    unsigned timeout_ms = 300000;
    bool start_daemon = false;
    std::string daemon_binary;
    std::string daemon_backend = "cpu";
    bool no_daemon = false;
    bool skip_single_thread = false;
    bool strict_confirm = false;
    unsigned noisy = 0;
    std::string json_path;
    std::string plot_path;
};

BenchArgs g_args;

// Why a daemon figure could not be taken (the text of its DaemonError).
std::string daemon_failure(const char* what, Status st) {
    std::string s = std::string(what) + ": " + std::string(shm::to_string(st));
    if (st == Status::timeout) s += " (no answer within " + std::to_string(g_args.timeout_ms) + " ms, --timeout-ms)";
    return s;
}

void apply_preset(BenchArgs& a) {
    const bool full = a.preset == "full";
    if (a.tables.empty()) a.tables = {"ecdsa", "multisig", "schnorr", "threshold"};
    if (a.sizes.empty())
        a.sizes = full ? std::vector<std::size_t>{1, 64, 4096, 262144, 1048576}
                       : std::vector<std::size_t>{1, 64, 4096, 65536};
    if (!a.repeat) a.repeat = full ? 5 : 3;
    if (a.budget_s <= 0) a.budget_s = full ? 30 : 4;
    if (!a.clients) a.clients = full ? 4 : 2;
    if (!a.latency_iterations) a.latency_iterations = full ? 20000 : 2000;
}

// ---------------------------------------------------------------------------
// Progress on stderr when it is a terminal.
// ---------------------------------------------------------------------------
struct Progress {
    bool tty = isatty(STDERR_FILENO);
    std::size_t done = 0, total = 0;
    void step(const std::string& what) {
        ++done;
        if (tty) std::fprintf(stderr, "\r\033[K[%zu/%zu] %s", done, total, what.c_str());
        else std::fprintf(stderr, "[%zu/%zu] %s\n", done, total, what.c_str());
    }
    void finish() {
        if (tty) std::fprintf(stderr, "\r\033[K");
    }
};

std::string find_daemon_binary(const std::string& given) {
    if (!given.empty()) return given;
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
    for (const auto& candidate : {self / "sigverifyd", self / "../../daemon/sigverifyd", self / "../sbin/sigverifyd"})
        if (std::filesystem::exists(candidate, ec)) return std::filesystem::weakly_canonical(candidate, ec).string();
    return "sigverifyd";  // from PATH
}

// ---------------------------------------------------------------------------
// Measurements
// ---------------------------------------------------------------------------
// One daemon round trip of a whole batch as a node pays it.
BatchResult daemon_round_trip(Client& c, const wire::RowSpan& src, std::uint8_t table, std::uint8_t* results,
                              bool zero_copy) {
    if (!zero_copy) return c.run(src, wire::Mode::results, results, table);
    RowBatch b;
    Status st = c.reserve(src.kind, src.tail_size, src.count, b);
    if (st != Status::ok) return BatchResult{st};
    std::memcpy(b.rows, src.data, src.size_bytes());
    st = c.submit(b, wire::Mode::results, src.encoding, table);
    if (st != Status::ok) {
        c.release(b);
        return BatchResult{st};
    }
    BatchResult r = c.wait(b);
    if (r.ok()) std::memcpy(results, b.results, src.count);
    c.release(b);
    return r;
}

struct TableData {
    wire::Table table;
    std::vector<std::uint8_t> rows;
    wire::RowSpan span(std::size_t n) {
        const auto kind = wire::record_kind(table);
        return wire::RowSpan{kind, wire::canonical_tail_size(table), wire::SigEncoding::opaque, rows.data(), n};
    }
};

TableData make_rows(wire::Table t, std::size_t n, double invalid_rate) {
    return TableData{t, reference::generate_rows({.table = t, .count = n, .invalid_rate = invalid_rate,
                                                  .high_s_rate = 0.1, .seed = 42})};
}

struct Latency {
    std::size_t batch;
    std::string backend;
    std::vector<double> us;
};

struct ClientFigures {
    double rows = 0, seconds = 0, p50_us = 0, p99_us = 0;
};

// Forked client processes, client i running batches of batches[i] ECDSA rows
// for `seconds`; returns what each did.
std::vector<ClientFigures> run_multi_client(const std::string& dir, TableData& data,
                                            const std::vector<std::size_t>& batches, double seconds) {
    const unsigned k = unsigned(batches.size());
    std::vector<pid_t> pids;
    std::vector<int> fds;
    int go[2];
    if (pipe(go) != 0) throw DaemonError("pipe failed");
    for (unsigned i = 0; i < k; ++i) {
        int out[2];
        if (pipe(out) != 0) throw DaemonError("pipe failed");
        const pid_t pid = fork();
        if (pid == 0) {
            close(out[0]);
            close(go[1]);
            ClientFigures f;
            ClientOptions o;
            o.runtime_dir = dir;
            o.name = "bench-" + std::to_string(i);
            // An arena for its own batches, not the bench's 512 MiB: 17 clients
            // each getting a 512 MiB segment reserved at once took longer than
            // the handshake allows on a loaded 2-core VM ("could not send the segment").
            o.arena_size = 16ull << 20;
            o.strict_confirm = g_args.strict_confirm;
            o.batch_timeout = std::chrono::milliseconds(g_args.timeout_ms);
            Status st;
            std::string msg;
            auto c = Client::connect(o, st, msg);
            char byte;
            if (read(go[0], &byte, 1) != 1 || !c) _exit(1);
            const std::size_t batch = batches[i];
            const wire::RowSpan span = data.span(batch);
            std::vector<std::uint8_t> results(batch);
            std::vector<double> us;
            us.reserve(100000);
            const bool zero_copy = batch <= c->max_batch_rows(span.kind, span.tail_size);
            const auto start = Clock::now();
            while (std::chrono::duration<double>(Clock::now() - start).count() < seconds) {
                const auto t0 = Clock::now();
                if (!daemon_round_trip(*c, span, std::uint8_t(wire::Table::ecdsa), results.data(), zero_copy).ok()) _exit(2);
                us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
                f.rows += double(batch);
            }
            f.seconds = std::chrono::duration<double>(Clock::now() - start).count();
            f.p50_us = percentile(us, 50);
            f.p99_us = percentile(us, 99);
            const bool ok = write(out[1], &f, sizeof f) == ssize_t(sizeof f);
            _exit(ok ? 0 : 3);
        }
        close(out[1]);
        pids.push_back(pid);
        fds.push_back(out[0]);
    }
    close(go[0]);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // let every child connect
    const std::string start(k, 'g');
    if (write(go[1], start.data(), k) != ssize_t(k)) throw DaemonError("could not start the clients");
    close(go[1]);
    std::vector<ClientFigures> figures;
    for (unsigned i = 0; i < k; ++i) {
        ClientFigures f;
        const bool got = read(fds[i], &f, sizeof f) == ssize_t(sizeof f);
        close(fds[i]);
        int status = 0;
        waitpid(pids[i], &status, 0);
        if (!got) throw DaemonError("bench client " + std::to_string(i) + " failed (status " + std::to_string(status) + ")");
        figures.push_back(f);
    }
    return figures;
}

struct PerOp {
    std::string op, backend;
    double ns = 0, bytes = 0, allocs = 0;
};

std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
    return "unknown";
}

}  // namespace

CLI::App* add_bench_subcommand(CLI::App& app) {
    auto* cmd = app.add_subcommand("bench", "Benchmark: the 4 tables end to end through sigverifyd, next to in-process libsecp256k1");
    cmd->add_option("--preset", g_args.preset, "quick (a few minutes on 2 cores) or full (batches up to 1M rows)")
        ->check(CLI::IsMember({"quick", "full"}))->capture_default_str();
    cmd->add_option("--tables", g_args.tables, "Tables to run (default: all four)")
        ->check(CLI::IsMember({"ecdsa", "multisig", "schnorr", "threshold"}))->delimiter(',');
    cmd->add_option("--sizes", g_args.sizes, "Batch sizes, comma separated (default by preset)")->delimiter(',');
    cmd->add_option("--repeat", g_args.repeat, "Best of N runs per figure (default by preset)");
    cmd->add_option("--budget", g_args.budget_s, "Seconds per figure after which repetitions stop (default by preset)");
    cmd->add_option("--threads", g_args.threads, "Threads of the all-cores libsecp256k1 baseline (0 = all)");
    cmd->add_option("--clients", g_args.clients, "Client processes of the multi-client mode (default by preset)");
    cmd->add_option("--latency-iterations", g_args.latency_iterations, "Round trips per latency figure (default by preset)");
    cmd->add_option("--invalid-rate", g_args.invalid_rate, "Fraction of invalid rows in the data")->check(CLI::Range(0.0, 1.0))
        ->capture_default_str();
    cmd->add_option("--runtime-dir", g_args.runtime_dir, "Runtime directory of a running sigverifyd");
    cmd->add_option("--timeout-ms", g_args.timeout_ms,
                    "How long sigverifyd may leave one batch unanswered (a stopped or hung daemon) before the run "
                    "fails with timeout")
        ->check(CLI::Range(1u, 3600000u))
        ->capture_default_str();
    cmd->add_flag("--start-daemon", g_args.start_daemon, "Start a private sigverifyd for the run (and stop it after)");
    cmd->add_option("--daemon", g_args.daemon_binary, "sigverifyd binary for --start-daemon (default: next to sigverify)");
    cmd->add_option("--daemon-backend", g_args.daemon_backend, "Backend of the started daemon: cpu, gpu, lanes or auto")
        ->check(CLI::IsMember({"cpu", "gpu", "lanes", "auto"}))->capture_default_str();
    cmd->add_flag("--no-daemon", g_args.no_daemon, "Only the in-process libsecp256k1 baselines");
    cmd->add_flag("--skip-single-thread", g_args.skip_single_thread,
                  "Leave out the 1-thread libsecp256k1 baseline (about 50 s per 1M rows; ratios are then against all cores)");
    cmd->add_option("--noisy", g_args.noisy,
                    "Latency isolation: one quiet client's 1-row batches beside this many noisy clients of 4096-row "
                    "batches (p50/p99 of the quiet client)");
    cmd->add_flag("--strict-confirm", g_args.strict_confirm,
                  "Ask a GPU daemon to confirm every invalid verdict (ClientOptions::strict_confirm), also the "
                  "multisig attempts that decide no group");
    cmd->add_option("--json", g_args.json_path, "Also write every figure as JSON to this file");
    cmd->add_option("--plot", g_args.plot_path, "Draw rows/s against batch size to this SVG file");
    return cmd;
}

int run_bench() {
    BenchArgs a = g_args;
    apply_preset(a);
    for (auto s : a.sizes)
        if (s == 0) throw InputError("--sizes: batch sizes must be at least 1");
    const unsigned all_threads = a.threads ? a.threads : std::max(1u, std::thread::hardware_concurrency());

    DaemonProcess started;  // the daemon under test when we start it (--start-daemon)
    std::unique_ptr<Client> client;
    std::string daemon_label;
    std::string dir = a.runtime_dir;
    if (!a.no_daemon) {
        if (a.start_daemon) {
            DaemonProcessOptions o;
            o.binary = find_daemon_binary(a.daemon_binary);
            o.args = {"--backend", a.daemon_backend, "--arena-size", "512M"};
            o.temp_template = "/tmp/sigverify-bench-XXXXXX";
            o.start_timeout = std::chrono::seconds(20);
            o.stop_timeout = std::chrono::seconds(5);
            try {
                started.start(std::move(o));
            } catch (const std::runtime_error& e) {
                throw DaemonError(e.what());
            }
            dir = started.dir();
        }
        ClientOptions o;
        o.runtime_dir = dir;
        o.name = "sigverify-bench";
        o.strict_confirm = g_args.strict_confirm;
        o.arena_size = 512ull << 20;
        o.batch_timeout = std::chrono::milliseconds(a.timeout_ms);
        Status st;
        std::string msg;
        client = Client::connect(o, st, msg);
        if (!client)
            throw DaemonError("no sigverifyd to benchmark (" + msg +
                              "): start one (./scripts/run.sh), pass --runtime-dir, --start-daemon, or --no-daemon");
        daemon_label = "sigverifyd" + (a.start_daemon ? " (" + a.daemon_backend + ")" : std::string());
    }

    const std::size_t max_rows = *std::max_element(a.sizes.begin(), a.sizes.end());
    std::printf("sigverify bench, preset %s: %s, %u hardware threads; best of up to %u runs, %.0f s budget per figure\n",
                a.preset.c_str(), cpu_model().c_str(), std::thread::hardware_concurrency(), a.repeat, a.budget_s);
    std::printf("data: generated signed rows, %.0f%% invalid, 10%% high-S; every daemon verdict is checked against libsecp256k1\n\n",
                a.invalid_rate * 100);

    Progress progress;
    std::size_t per_op_tables = 0;
    for (const auto& t : a.tables) per_op_tables += (t == "ecdsa" || t == "schnorr");
    progress.total = a.tables.size() * (1 + a.sizes.size() * ((client ? 2 : 1) + (a.skip_single_thread ? 0 : 1))) + (client ? 2 : 0) +
                     (client && a.clients ? 1 : 0) + (client && a.noisy ? 1 : 0) + per_op_tables;
    reference::Verifier one(1), all(all_threads);
    std::vector<Row> rows;
    std::map<std::string, TableData> data;
    std::size_t wrong = 0;

    for (const auto& name : a.tables) {
        const auto table = *wire::parse_table(name);
        progress.step("generating " + std::to_string(max_rows) + " " + name + " rows");
        data[name] = make_rows(table, max_rows, a.invalid_rate);
        auto& d = data[name];
        for (std::size_t n : a.sizes) {
            const wire::RowSpan span = d.span(n);
            std::vector<std::uint8_t> expected(n), got(n);
            // The verdicts every daemon figure is checked against come from the
            // first in-process run (1 thread, or all threads without it).
            if (!a.skip_single_thread) {
                progress.step(name + " x" + std::to_string(n) + ": libsecp256k1, 1 thread");
                rows.push_back({name, n, "libsecp256k1 x1", measure(a.repeat, a.budget_s, [&] { one.verify(span, expected.data()); })});
            }
            progress.step(name + " x" + std::to_string(n) + ": libsecp256k1, " + std::to_string(all_threads) + " threads");
            std::uint8_t* const all_out = a.skip_single_thread ? expected.data() : got.data();
            rows.push_back({name, n, "libsecp256k1 x" + std::to_string(all_threads),
                            measure(a.repeat, a.budget_s, [&] { all.verify(span, all_out); })});
            if (client) {
                progress.step(name + " x" + std::to_string(n) + ": " + daemon_label);
                const bool zero_copy = n <= client->max_batch_rows(span.kind, span.tail_size);
                Status failure = Status::ok;
                rows.push_back({name, n, daemon_label, measure(a.repeat, a.budget_s, [&] {
                                    const auto r = daemon_round_trip(*client, span, std::uint8_t(table), got.data(), zero_copy);
                                    if (!r.ok()) failure = r.status;
                                })});
                if (failure != Status::ok)
                    throw DaemonError(daemon_failure("daemon batch failed", failure));
                wrong += std::size_t(std::mismatch(got.begin(), got.end(), expected.begin()).first != got.end());
            }
        }
    }

    // Latency: 1-row and 64-row ECDSA batches.
    std::vector<Latency> latencies;
    auto& ecdsa = data.count("ecdsa") ? data["ecdsa"] : data.begin()->second;
    for (std::size_t n : {std::size_t(1), std::size_t(64)}) {
        if (ecdsa.rows.size() < n * ecdsa.span(1).row_stride()) continue;
        const wire::RowSpan span = ecdsa.span(n);
        std::vector<std::uint8_t> res(n);
        Latency local{n, "libsecp256k1 x1", {}};
        for (unsigned i = 0; i < std::min(a.latency_iterations, 500u); ++i) {
            const auto t0 = Clock::now();
            one.verify(span, res.data());
            local.us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        }
        latencies.push_back(std::move(local));
        if (client) {
            progress.step("latency: " + std::to_string(n) + "-row round trips");
            Latency l{n, daemon_label, {}};
            for (unsigned i = 0; i < a.latency_iterations; ++i) {
                const auto t0 = Clock::now();
                if (!daemon_round_trip(*client, span, std::uint8_t(ecdsa.table), res.data(), true).ok())
                    throw DaemonError("daemon latency batch failed");
                l.us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
            }
            latencies.push_back(std::move(l));
        }
    }

    // Multi-client: K processes of 4096-row ECDSA batches.
    std::vector<ClientFigures> multi;
    const std::size_t multi_batch = std::min<std::size_t>(4096, ecdsa.rows.size() / ecdsa.span(1).row_stride());
    if (client && a.clients > 0) {
        progress.step("multi-client: " + std::to_string(a.clients) + " processes");
        multi = run_multi_client(dir, ecdsa, std::vector<std::size_t>(a.clients, multi_batch), std::max(2.0, a.budget_s));
    }
    // Latency isolation: one quiet client's 1-row batches beside K noisy ones.
    std::vector<ClientFigures> noisy;
    if (client && a.noisy > 0) {
        progress.step("quiet client beside " + std::to_string(a.noisy) + " noisy ones");
        std::vector<std::size_t> batches(a.noisy + 1, multi_batch);
        batches[0] = 1;
        noisy = run_multi_client(dir, ecdsa, batches, std::max(3.0, a.budget_s));
    }

    // Per operation, client side: ns/op, bytes moved per op, allocations per op.
    std::vector<PerOp> per_op;
    std::size_t per_op_batch = 0;
    for (const char* name : {"ecdsa", "schnorr"}) {
        if (!data.count(name)) continue;
        auto& d = data[name];
        const std::size_t n = std::min<std::size_t>(4096, d.rows.size() / d.span(1).row_stride());
        per_op_batch = n;
        const wire::RowSpan span = d.span(n);
        std::vector<std::uint8_t> res(n);
        const std::string op = std::string(name) + " verify";
        auto record = [&](const std::string& backend, double bytes, auto&& fn) {
            fn();  // warm-up
            const auto allocs0 = sigverify_allocation_count();
            const auto t0 = Clock::now();
            fn();
            const double s = std::chrono::duration<double>(Clock::now() - t0).count();
            per_op.push_back({op, backend, s * 1e9 / double(n), bytes, double(sigverify_allocation_count() - allocs0) / double(n)});
        };
        progress.step("per-operation: " + op);
        record("libsecp256k1 x1", 0, [&] { one.verify(span, res.data()); });
        record("libsecp256k1 x" + std::to_string(all_threads), 0, [&] { all.verify(span, res.data()); });
        if (client)
            record(daemon_label, double(span.row_stride() + 1),
                   [&] {
                       // A failed round trip must not be timed as a fast one.
                       const BatchResult r = daemon_round_trip(*client, span, shm::kTableUnspecified, res.data(), true);
                       if (!r.ok()) throw DaemonError(daemon_failure("daemon round trip failed", r.status));
                   });
    }
    progress.finish();

    // --- print -----------------------------------------------------------------
    std::printf("%-10s %9s  %-20s %10s %10s %10s %11s %9s %9s %9s\n", "table", "batch", "verifier", "best ms", "median ms",
                "max ms", "rows/s", "ns/row", "vs x1", ("vs x" + std::to_string(all_threads)).c_str());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const Row& r = rows[i];
        // Baselines of this (table, batch) are the rows before it in the same group.
        const Row* base1 = nullptr;
        const Row* baseN = nullptr;
        for (const Row& b : rows)
            if (b.table == r.table && b.batch == r.batch) {
                if (b.backend == "libsecp256k1 x1") base1 = &b;
                else if (b.backend.rfind("libsecp256k1 x", 0) == 0) baseN = &b;
            }
        std::printf("%-10s %9zu  %-20s %10.3f %10.3f %10.3f %11s %9.0f %8.2fx %8.2fx\n", r.table.c_str(), r.batch,
                    r.backend.c_str(), r.timing.min() * 1e3, r.timing.median() * 1e3, r.timing.max() * 1e3,
                    human_rate(r.rows_per_s()).c_str(), r.ns_per_row(), base1 ? base1->timing.min() / r.timing.min() : 0.0,
                    baseN ? baseN->timing.min() / r.timing.min() : 0.0);
    }
    std::printf("\nround-trip latency (ecdsa rows; in-process figures are verification time only)\n");
    std::printf("%-6s %-20s %8s %10s %10s %10s %10s\n", "batch", "verifier", "runs", "p50 us", "p99 us", "p99.9 us", "max us");
    for (const auto& l : latencies)
        std::printf("%-6zu %-20s %8zu %10.1f %10.1f %10.1f %10.1f\n", l.batch, l.backend.c_str(), l.us.size(),
                    percentile(l.us, 50), percentile(l.us, 99), percentile(l.us, 99.9), percentile(l.us, 100));
    if (!multi.empty()) {
        double total_rows = 0, secs = 0, lo = 1e300, hi = 0, sum = 0, sum2 = 0;
        for (const auto& f : multi) {
            const double rate = f.rows / f.seconds;
            total_rows += f.rows;
            secs = std::max(secs, f.seconds);
            lo = std::min(lo, rate);
            hi = std::max(hi, rate);
            sum += rate;
            sum2 += rate * rate;
        }
        std::printf("\nmulti-client: %zu processes, %zu-row ecdsa batches, %.1f s: total %s rows/s; per client min %s, max %s, "
                    "Jain fairness %.3f\n",
                    multi.size(), multi_batch, secs, human_rate(total_rows / secs).c_str(), human_rate(lo).c_str(),
                    human_rate(hi).c_str(), sum * sum / (double(multi.size()) * sum2));
        for (std::size_t i = 0; i < multi.size(); ++i)
            std::printf("  client %zu: %s rows/s, batch round trip p50 %.0f us, p99 %.0f us\n", i,
                        human_rate(multi[i].rows / multi[i].seconds).c_str(), multi[i].p50_us, multi[i].p99_us);
    }
    if (!noisy.empty()) {
        double bulk = 0;
        for (std::size_t i = 1; i < noisy.size(); ++i) bulk += noisy[i].rows / noisy[i].seconds;
        std::printf("\nquiet client beside %zu noisy clients (%zu-row ecdsa batches): quiet 1-row batch p50 %.0f us, "
                    "p99 %.0f us; noisy total %s rows/s\n",
                    noisy.size() - 1, multi_batch, noisy[0].p50_us, noisy[0].p99_us, human_rate(bulk).c_str());
    }
    std::printf("\nper operation (client side, %zu-row batches)\n%-16s %-20s %10s %12s %12s\n", per_op_batch, "operation",
                "verifier", "ns/op", "bytes/op", "allocs/op");
    for (const auto& p : per_op)
        std::printf("%-16s %-20s %10.0f %12.0f %12.4f\n", p.op.c_str(), p.backend.c_str(), p.ns, p.bytes, p.allocs);
    if (client) std::printf("\ndaemon verdicts that differed from libsecp256k1: %zu batches\n", wrong);

    if (!a.json_path.empty()) {
        json j;
        j["preset"] = a.preset;
        j["cpu"] = cpu_model();
        j["hardware_threads"] = std::thread::hardware_concurrency();
        j["wrong_batches"] = wrong;
        for (const auto& r : rows)
            j["throughput"].push_back({{"table", r.table}, {"batch", r.batch}, {"verifier", r.backend},
                                       {"seconds", r.timing.seconds}, {"best_s", r.timing.min()},
                                       {"median_s", r.timing.median()}, {"max_s", r.timing.max()},
                                       {"rows_per_s", r.rows_per_s()}, {"ns_per_row", r.ns_per_row()}});
        for (const auto& l : latencies)
            j["latency"].push_back({{"batch", l.batch}, {"verifier", l.backend}, {"runs", l.us.size()},
                                    {"p50_us", percentile(l.us, 50)}, {"p99_us", percentile(l.us, 99)},
                                    {"p999_us", percentile(l.us, 99.9)}, {"max_us", percentile(l.us, 100)}});
        for (const auto& f : multi)
            j["multi_client"].push_back({{"rows", f.rows}, {"seconds", f.seconds}, {"rows_per_s", f.rows / f.seconds},
                                         {"p50_us", f.p50_us}, {"p99_us", f.p99_us}});
        for (std::size_t i = 0; i < noisy.size(); ++i)
            j["noisy"].push_back({{"role", i == 0 ? "quiet" : "noisy"}, {"batch", i == 0 ? std::size_t(1) : multi_batch},
                                  {"rows_per_s", noisy[i].rows / noisy[i].seconds}, {"p50_us", noisy[i].p50_us},
                                  {"p99_us", noisy[i].p99_us}});
        for (const auto& p : per_op)
            j["per_op"].push_back({{"op", p.op}, {"verifier", p.backend}, {"ns", p.ns}, {"bytes", p.bytes}, {"allocs", p.allocs}});
        std::ofstream out(a.json_path);
        if (!out) throw InputError(a.json_path + ": cannot create");
        out << j.dump(2) << "\n";
        std::printf("json: %s\n", a.json_path.c_str());
    }
    if (!a.plot_path.empty()) {
        write_svg(a.plot_path, rows);
        std::printf("plot: %s\n", a.plot_path.c_str());
    }
    return wrong ? int(ExitCode::invalid_rows) : int(ExitCode::ok);
}

}  // namespace sigverify::cli
