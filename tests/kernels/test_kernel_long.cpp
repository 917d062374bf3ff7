// SPDX-License-Identifier: MIT
// The volume requirement: >= 1M generated rows per table verified by
// the host-compiled kernel math and by libsecp256k1, row by row. ECDSA tables
// split their rows between the two signature encodings. Rows per table: env
// SIGVERIFY_KERNEL_ROWS (default 1,000,000). Labelled `long` in ctest.
#include <catch2/catch.hpp>

#include <algorithm>
#include <thread>

#include "tests/kernels/differential.hpp"

using namespace sigverify;
using wire::SigEncoding;
using wire::Table;

TEST_CASE("kernel math: >= 1M generated rows per table match libsecp256k1", "[kernels][long]") {
    const std::size_t per_table = kernel_test::rows_from_env(1'000'000);
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    reference::Verifier verifier(threads);
    for (Table t : {Table::ecdsa, Table::multisig, Table::schnorr, Table::threshold}) {
        if (wire::record_kind(t) == wire::RecordKind::ecdsa) {
            const std::size_t half = per_table / 2;
            for (SigEncoding enc : {SigEncoding::opaque, SigEncoding::compact}) {
                const std::size_t n = enc == SigEncoding::opaque ? half : per_table - half;
                const auto st = kernel_test::run_differential(t, enc, n, wire::canonical_tail_size(t),
                                                              7000 + 2 * unsigned(t) + unsigned(enc),
                                                              verifier, threads, false);
                kernel_test::print_stats("[long]", t, enc, st, threads);
            }
        } else {
            const auto st = kernel_test::run_differential(t, SigEncoding::opaque, per_table,
                                                          wire::canonical_tail_size(t), 7000 + 2 * unsigned(t),
                                                          verifier, threads, false);
            kernel_test::print_stats("[long]", t, SigEncoding::opaque, st, threads);
        }
    }
}
