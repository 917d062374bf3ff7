// SPDX-License-Identifier: MIT
// The groups rule's job-end repair (issue 29.3) through a real host-kernel
// daemon: one multisig batch submitted as one job, its rows cheap to verify
// on every path (unparsable keys), so what the wall time shows is the
// daemon's bookkeeping, the repair's above all. Two shapes: every group
// spanning chunks (row i in group i mod rows/4: the first chunks meet all
// groups) and, as the control, groups of 4 consecutive rows (at most one
// group spans each chunk boundary). libsecp256k1 verifying the same rows in
// this process is printed beside them. A third batch makes the repair
// libsecp256k1's work (long_repair_groups: 7 signature checks of each of
// `groups` groups, ~45 us each), which the daemon's workers share since the
// repair is handed out in pieces. Not a test; figures go to BENCHMARKS.md.
// Give the daemon binary, so a build before a fix can be measured the same way:
//   sigverify_repair_bench SIGVERIFYD [rows=131072] [chunk_rows=65536] [groups=4096]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "client/cli/daemon_process.hpp"
#include "reference/reference_verifier.hpp"
#include "sigverify/client.hpp"
#include "tests/reliability/spanning_groups.hpp"
#include "tests/support/seconds_since.hpp"

using namespace sigverify;
using test::seconds_since;
using Clock = std::chrono::steady_clock;

namespace {

// Seconds from submit to completion of rows as one job; -1 on failure or
// when other than `invalid` rows came back invalid (default: all of them).
double one_job(const std::string& dir, const std::vector<wire::MultisigRow>& rows,
               std::size_t invalid = ~std::size_t(0)) {
    ClientOptions o;
    o.runtime_dir = dir;
    auto c = Client::connect(o);
    RowBatch b;
    if (c->reserve(wire::RecordKind::ecdsa, wire::canonical_tail_size(wire::Table::multisig), rows.size(), b) !=
        Status::ok)
        return -1;
    std::memcpy(b.rows, rows.data(), rows.size() * sizeof(wire::MultisigRow));
    const auto t0 = Clock::now();
    if (c->submit(b, wire::Mode::results, wire::SigEncoding::opaque,
                  static_cast<std::uint8_t>(wire::Table::multisig)) != Status::ok)
        return -1;
    const BatchResult r = c->wait(b);
    const double s = seconds_since(t0);
    c->release(b);
    return r.ok() && r.invalid == (invalid == ~std::size_t(0) ? rows.size() : invalid) ? s : -1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s SIGVERIFYD [rows=131072] [chunk_rows=65536]\n", argv[0]);
        return 2;
    }
    const std::size_t rows = argc > 2 ? std::strtoull(argv[2], nullptr, 10) / 4 * 4 : 131072;
    const std::string chunk = argc > 3 ? argv[3] : "65536";
    cli::DaemonProcessOptions o;
    o.binary = argv[1];
    o.args = {"--backend", "host-kernel", "--gpus", "0", "--cpu-threads", "2", "--gpu-split", "off",
              "--gpu-chunk-rows", chunk, "--chunk-rows", chunk};
    cli::DaemonProcess d(o);

    const std::vector<wire::MultisigRow> spanning = test::interleaved_invalid_groups(rows);
    std::vector<wire::MultisigRow> control = spanning;
    for (std::size_t i = 0; i < rows; ++i) test::write_group(control[i], i / 4, 0, unsigned(i % 4));

    const wire::RowSpan span{wire::RecordKind::ecdsa, wire::canonical_tail_size(wire::Table::multisig),
                             wire::SigEncoding::opaque, reinterpret_cast<std::uint8_t*>(const_cast<wire::MultisigRow*>(spanning.data())),
                             rows};
    std::vector<std::uint8_t> results(rows);
    const auto t0 = Clock::now();
    reference::Verifier(1).verify(span, results.data());
    const double libsecp = seconds_since(t0);

    std::printf("daemon %s, %zu rows, chunks of %s rows (host-kernel, 2 workers)\n", o.binary.c_str(), rows,
                chunk.c_str());
    std::printf("libsecp256k1 in process, 1 thread:   %.3f s\n", libsecp);
    std::printf("daemon, groups of 4 consecutive rows: %.3f s\n", one_job(d.dir(), control));
    std::printf("daemon, every group spanning chunks:  %.3f s\n", one_job(d.dir(), spanning));

    const std::size_t groups = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 4096;
    const test::RepairBatch long_repair = test::long_repair_groups(groups);
    const std::size_t n = long_repair.rows.size();
    const std::size_t valid = std::size_t(std::count(long_repair.truth.begin(), long_repair.truth.end(), 1));
    // The control: the same rows, the last part's attempts in groups of their
    // own (nothing spans, nothing to repair; the chunks' work is the same).
    std::vector<wire::MultisigRow> no_repair = long_repair.rows;
    for (std::size_t g = 0; g < groups; ++g) test::write_group(no_repair[8 * groups + g], groups + g, 0, 8);
    std::printf("daemon, the same %zu rows, no group spanning:  %.3f s\n", n, one_job(d.dir(), no_repair, n - valid));
    std::printf("daemon, %zu rows whose repair is %zu signature checks: %.3f s\n", n, long_repair.repaired_rows,
                one_job(d.dir(), long_repair.rows, n - valid));
    return 0;
}
