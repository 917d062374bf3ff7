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

using bench::BenchResults;
using bench::ClientFigures;
using bench::Clock;
using bench::cpu_model;
using bench::human_rate;
using bench::Latency;
using bench::measure;
using bench::PerOp;
using bench::percentile;
using bench::print_results;
using bench::Row;
using bench::Timing;
using bench::write_json;
using bench::write_svg;

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

namespace {

// The daemon under test: one this program starts (--start-daemon, kept
// alive by `started`) or the one at --runtime-dir; null with --no-daemon.
std::unique_ptr<Client> connect_daemon(const BenchArgs& a, DaemonProcess& started, std::string& dir,
                                       std::string& label) {
    dir = a.runtime_dir;
    if (a.no_daemon) return nullptr;
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
    std::unique_ptr<Client> client = Client::connect(o, st, msg);
    if (!client)
        throw DaemonError("no sigverifyd to benchmark (" + msg +
                          "): start one (./scripts/run.sh), pass --runtime-dir, --start-daemon, or --no-daemon");
    label = "sigverifyd" + (a.start_daemon ? " (" + a.daemon_backend + ")" : std::string());
    return client;
}

// What one run shares: the arguments, the in-process verifiers, the daemon.
struct BenchContext {
    const BenchArgs& a;
    unsigned all_threads;
    reference::Verifier& one;
    reference::Verifier& all;
    Client* client;
    const std::string& label;
    Progress& progress;
};

// Throughput of every table and batch size; the tables' rows are kept for the later parts.
void measure_throughput(const BenchContext& c, std::map<std::string, TableData>& data, BenchResults& out) {
    const BenchArgs& a = c.a;
    const std::size_t max_rows = *std::max_element(a.sizes.begin(), a.sizes.end());
    for (const auto& name : a.tables) {
        const auto table = *wire::parse_table(name);
        c.progress.step("generating " + std::to_string(max_rows) + " " + name + " rows");
        data[name] = make_rows(table, max_rows, a.invalid_rate);
        auto& d = data[name];
        for (std::size_t n : a.sizes) {
            const wire::RowSpan span = d.span(n);
            std::vector<std::uint8_t> expected(n), got(n);
            // The verdicts every daemon figure is checked against come from the
            // first in-process run (1 thread, or all threads without it).
            if (!a.skip_single_thread) {
                c.progress.step(name + " x" + std::to_string(n) + ": libsecp256k1, 1 thread");
                out.rows.push_back(
                    {name, n, "libsecp256k1 x1", measure(a.repeat, a.budget_s, [&] { c.one.verify(span, expected.data()); })});
            }
            c.progress.step(name + " x" + std::to_string(n) + ": libsecp256k1, " + std::to_string(c.all_threads) + " threads");
            std::uint8_t* const all_out = a.skip_single_thread ? expected.data() : got.data();
            out.rows.push_back({name, n, "libsecp256k1 x" + std::to_string(c.all_threads),
                                measure(a.repeat, a.budget_s, [&] { c.all.verify(span, all_out); })});
            if (!c.client) continue;
            c.progress.step(name + " x" + std::to_string(n) + ": " + c.label);
            const bool zero_copy = n <= c.client->max_batch_rows(span.kind, span.tail_size);
            Status failure = Status::ok;
            out.rows.push_back({name, n, c.label, measure(a.repeat, a.budget_s, [&] {
                                    const auto r = daemon_round_trip(*c.client, span, std::uint8_t(table), got.data(), zero_copy);
                                    if (!r.ok()) failure = r.status;
                                })});
            if (failure != Status::ok) throw DaemonError(daemon_failure("daemon batch failed", failure));
            out.wrong += std::size_t(std::mismatch(got.begin(), got.end(), expected.begin()).first != got.end());
        }
    }
}

// Latency: 1-row and 64-row ECDSA batches, in process and through the daemon.
void measure_latency(const BenchContext& c, TableData& ecdsa, BenchResults& out) {
    for (std::size_t n : {std::size_t(1), std::size_t(64)}) {
        if (ecdsa.rows.size() < n * ecdsa.span(1).row_stride()) continue;
        const wire::RowSpan span = ecdsa.span(n);
        std::vector<std::uint8_t> res(n);
        Latency local{n, "libsecp256k1 x1", {}};
        for (unsigned i = 0; i < std::min(c.a.latency_iterations, 500u); ++i) {
            const auto t0 = Clock::now();
            c.one.verify(span, res.data());
            local.us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        }
        out.latencies.push_back(std::move(local));
        if (!c.client) continue;
        c.progress.step("latency: " + std::to_string(n) + "-row round trips");
        Latency l{n, c.label, {}};
        for (unsigned i = 0; i < c.a.latency_iterations; ++i) {
            const auto t0 = Clock::now();
            if (!daemon_round_trip(*c.client, span, std::uint8_t(ecdsa.table), res.data(), true).ok())
                throw DaemonError("daemon latency batch failed");
            l.us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        }
        out.latencies.push_back(std::move(l));
    }
}

// Several client processes: K of 4096-row ECDSA batches, and one quiet client's
// 1-row batches beside K noisy ones.
void measure_clients(const BenchContext& c, const std::string& dir, TableData& ecdsa, BenchResults& out) {
    out.multi_batch = std::min<std::size_t>(4096, ecdsa.rows.size() / ecdsa.span(1).row_stride());
    if (c.client && c.a.clients > 0) {
        c.progress.step("multi-client: " + std::to_string(c.a.clients) + " processes");
        out.multi = run_multi_client(dir, ecdsa, std::vector<std::size_t>(c.a.clients, out.multi_batch),
                                     std::max(2.0, c.a.budget_s));
    }
    if (c.client && c.a.noisy > 0) {
        c.progress.step("quiet client beside " + std::to_string(c.a.noisy) + " noisy ones");
        std::vector<std::size_t> batches(c.a.noisy + 1, out.multi_batch);
        batches[0] = 1;
        out.noisy = run_multi_client(dir, ecdsa, batches, std::max(3.0, c.a.budget_s));
    }
}

// Per operation, client side: ns/op, bytes moved per op, allocations per op.
void measure_per_op(const BenchContext& c, std::map<std::string, TableData>& data, BenchResults& out) {
    for (const char* name : {"ecdsa", "schnorr"}) {
        if (!data.count(name)) continue;
        auto& d = data[name];
        const std::size_t n = std::min<std::size_t>(4096, d.rows.size() / d.span(1).row_stride());
        out.per_op_batch = n;
        const wire::RowSpan span = d.span(n);
        std::vector<std::uint8_t> res(n);
        const std::string op = std::string(name) + " verify";
        auto record = [&](const std::string& backend, double bytes, auto&& fn) {
            fn();  // warm-up
            const auto allocs0 = sigverify_allocation_count();
            const auto t0 = Clock::now();
            fn();
            const double s = std::chrono::duration<double>(Clock::now() - t0).count();
            out.per_op.push_back(
                {op, backend, s * 1e9 / double(n), bytes, double(sigverify_allocation_count() - allocs0) / double(n)});
        };
        c.progress.step("per-operation: " + op);
        record("libsecp256k1 x1", 0, [&] { c.one.verify(span, res.data()); });
        record("libsecp256k1 x" + std::to_string(c.all_threads), 0, [&] { c.all.verify(span, res.data()); });
        if (c.client)
            record(c.label, double(span.row_stride() + 1), [&] {
                // A failed round trip must not be timed as a fast one.
                const BatchResult r = daemon_round_trip(*c.client, span, shm::kTableUnspecified, res.data(), true);
                if (!r.ok()) throw DaemonError(daemon_failure("daemon round trip failed", r.status));
            });
    }
}

}  // namespace

int run_bench() {
    BenchArgs a = g_args;
    apply_preset(a);
    for (auto s : a.sizes)
        if (s == 0) throw InputError("--sizes: batch sizes must be at least 1");
    const unsigned all_threads = a.threads ? a.threads : std::max(1u, std::thread::hardware_concurrency());

    DaemonProcess started;  // the daemon under test when we start it (--start-daemon)
    std::string dir, label;
    const std::unique_ptr<Client> client = connect_daemon(a, started, dir, label);

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
    const BenchContext c{a, all_threads, one, all, client.get(), label, progress};
    std::map<std::string, TableData> data;
    BenchResults results;
    measure_throughput(c, data, results);
    auto& ecdsa = data.count("ecdsa") ? data["ecdsa"] : data.begin()->second;
    measure_latency(c, ecdsa, results);
    measure_clients(c, dir, ecdsa, results);
    measure_per_op(c, data, results);
    progress.finish();

    print_results(results, all_threads, client != nullptr);
    if (!a.json_path.empty()) write_json(a.json_path, a.preset, results);
    if (!a.plot_path.empty()) {
        write_svg(a.plot_path, results.rows);
        std::printf("plot: %s\n", a.plot_path.c_str());
    }
    return results.wrong ? int(ExitCode::invalid_rows) : int(ExitCode::ok);
}

}  // namespace sigverify::cli
