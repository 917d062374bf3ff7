// SPDX-License-Identifier: MIT
// libbitcoin's hook (sigverify/lbtc.hpp) through a private CPU sigverifyd,
// against libbitcoin's own fallback: libsecp256k1 per row in a parallel loop
// over all cores (here reference::ColumnVerifier, the project's libsecp256k1
// thread pool), on the same ECDSA and Schnorr columns, in the same run. The
// hook is timed with results and with nullptr (libbitcoin's first Schnorr
// pass). Rows are valid (the common case); the first 50,000 are signed and
// the rest repeat them. Not a test; figures go to docs/benchmarks-history.md §10.
//   build/tests/bench/sigverify_lbtc_bench [daemon_cpu_threads] [repeats] [max_rows]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "client/cli/daemon_process.hpp"
#include "reference/columns.hpp"
#include "reference/row_generator.hpp"
#include "sigverify/lbtc.hpp"

using namespace sigverify;

namespace {

using Clock = std::chrono::steady_clock;

struct Table {
    wire::RecordKind kind;
    std::vector<std::uint8_t> digest, key, signature;
};

Table make_table(wire::Table table, std::size_t n) {
    const std::size_t signed_rows = std::min<std::size_t>(n, 50000);
    reference::GenOptions g;
    g.table = table;
    g.count = signed_rows;
    g.tail_size = 0;
    g.seed = 9;
    std::vector<std::uint8_t> rows = reference::generate_rows(g);
    const wire::RecordKind kind = wire::record_kind(table);
    const wire::RowSpan span{kind, 0, wire::SigEncoding::opaque, rows.data(), signed_rows};
    reference::ColumnTable c = reference::rows_to_columns(span, reference::CorrelateLayout::none);
    Table t{kind, {}, {}, {}};
    const std::size_t kw = wire::column_key_width(kind);
    for (std::size_t i = 0; i < n; i += signed_rows) {
        const std::size_t m = std::min(signed_rows, n - i);
        t.digest.insert(t.digest.end(), c.message.begin(), c.message.begin() + m * 32);
        t.key.insert(t.key.end(), c.key.begin(), c.key.begin() + m * kw);
        t.signature.insert(t.signature.end(), c.signature.begin(), c.signature.begin() + m * 64);
    }
    return t;
}

template <class F>
double best_rows_per_s(std::size_t n, int repeats, F&& f) {
    double best = 0;
    for (int r = 0; r < repeats; ++r) {
        const auto t0 = Clock::now();
        if (!f()) {
            std::fprintf(stderr, "a valid batch was not all valid\n");
            std::exit(1);
        }
        best = std::max(best, double(n) / std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return best;
}

}  // namespace

int main(int argc, char** argv) {
    const unsigned daemon_threads = argc > 1 ? unsigned(std::atoi(argv[1])) : 0;
    const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 3;
    const std::size_t max_rows = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 1000000;
    std::setvbuf(stdout, nullptr, _IOLBF, 0);  // each line as it is measured
    cli::DaemonProcessOptions o;
    o.binary = SIGVERIFYD_BIN;
    o.args = {"--backend", "cpu", "--cpu-threads", std::to_string(daemon_threads)};
    cli::DaemonProcess daemon(o);
    setenv("SIGVERIFY_RUNTIME_DIR", daemon.dir().c_str(), 1);
    reference::ColumnVerifier loop(0);
    std::printf("cores %u, daemon --cpu-threads %u, best of %d\n", std::thread::hardware_concurrency(), daemon_threads,
                repeats);
    std::printf("%-8s %9s %14s %14s %14s %7s %7s\n", "table", "rows", "loop rows/s", "hook rows/s", "hook null/s",
                "ratio", "null");
    for (std::size_t n : {std::size_t{1000}, std::size_t{100000}, std::size_t{1000000}}) {
        if (n > max_rows) break;
        for (wire::Table table : {wire::Table::ecdsa, wire::Table::schnorr}) {
            const Table t = make_table(table, n);
            std::vector<std::uint8_t> results(n);
            const bool ecdsa = t.kind == wire::RecordKind::ecdsa;
            auto hook = [&](std::uint8_t* out) {
                return ecdsa ? lbtc::ecdsa_verify_columns(t.digest.data(), t.key.data(), t.signature.data(), n, out, 0)
                             : lbtc::schnorr_verify_columns(t.digest.data(), t.key.data(), t.signature.data(), n, out,
                                                            0);
            };
            (void)hook(results.data());  // the session and the daemon's pools warm
            const double base = best_rows_per_s(n, repeats, [&] {
                wire::ColumnSpan b;
                b.kind = t.kind;
                b.count = n;
                b.message = t.digest.data();
                b.key = t.key.data();
                b.signature = t.signature.data();
                return loop.verify(b, results.data()).invalid == 0;
            });
            const double with = best_rows_per_s(n, repeats, [&] { return hook(results.data()); });
            const double null = best_rows_per_s(n, repeats, [&] { return hook(nullptr); });
            std::printf("%-8s %9zu %14.0f %14.0f %14.0f %7.3f %7.3f\n", ecdsa ? "ecdsa" : "schnorr", n, base, with,
                        null, with / base, null / base);
        }
    }
    return 0;
}
