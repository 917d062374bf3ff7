// SPDX-License-Identifier: MIT
// The CPU lanes' volume proof (issue 42): generated rows of both kinds, ECDSA
// in both signature encodings, through the lanes at the width this CPU runs
// (and the scalar width on a slice, the 4-lane width on a larger one where
// the CPU runs it and it is not the width already), every verdict against libsecp256k1 row
// by row, every recheck resolved by the exact path as the backends do. Rows:
// env SIGVERIFY_KERNEL_ROWS in all (default 1,000,000: half ECDSA, split
// between the encodings, half BIP-340). Labelled `long` (CI's long step).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <thread>
#include <vector>

#include "kernels/kernel_math.hpp"
#include "kernels/lanes/lanes.hpp"
#include "tests/kernels/differential.hpp"

using namespace sigverify;
using namespace sigverify::kernels;

namespace {

struct Count {
    std::size_t rows = 0, valid = 0, rechecks = 0, mismatches = 0;
};

// Rows [begin, end) of span (a multiple of 8 long) through the lanes at width w.
Count lanes_range(lanes::Width w, const wire::RowSpan& span, std::size_t begin, std::size_t end,
                  const std::vector<std::uint8_t>& want) {
    Count c;
    for (std::size_t i = begin; i + 8 <= end; i += 8) {
        const std::uint8_t* rec[8];
        for (std::size_t l = 0; l < 8; ++l) rec[l] = span.row(i + l);
        std::uint8_t v[8];
        if (span.kind == wire::RecordKind::ecdsa)
            lanes::ecdsa_verify8(w, rec, span.encoding == wire::SigEncoding::compact, v);
        else
            lanes::schnorr_verify8(w, rec, v);
        for (std::size_t l = 0; l < 8; ++l) {
            c.rechecks += v[l] > 1;
            const bool got = resolve_verdict32(v[l], rec[l], span.kind, span.encoding);
            c.mismatches += got != (want[i + l] != 0);
            c.valid += got;
            ++c.rows;
        }
    }
    return c;
}

void prove(wire::Table t, wire::SigEncoding enc, std::size_t n, std::uint64_t seed, unsigned threads) {
    n -= n % 8;
    const std::size_t tail = wire::canonical_tail_size(t);
    const reference::GenOptions o = kernel_test::differential_rows(t, enc, n, tail, seed, threads);
    auto rows = reference::generate_rows(o, nullptr);
    const wire::RowSpan span = kernel_test::span_of(rows, t, tail, enc);
    std::vector<std::uint8_t> want(n, 0);
    reference::Verifier(threads).verify(span, want.data());

    const lanes::Width w = lanes::chosen_width();
    // Every row at the CPU's width, on every core; the scalar width on a slice.
    std::vector<Count> parts(threads);
    std::vector<std::thread> pool;
    const std::size_t per = (n / 8 + threads - 1) / threads * 8;
    for (unsigned k = 0; k < threads; ++k)
        pool.emplace_back([&, k] {
            const std::size_t b = std::min(n, k * per), e = std::min(n, b + per);
            parts[k] = lanes_range(w, span, b, e, want);
        });
    for (auto& th : pool) th.join();
    Count all;
    for (const Count& c : parts) {
        all.rows += c.rows;
        all.valid += c.valid;
        all.rechecks += c.rechecks;
        all.mismatches += c.mismatches;
    }
    const Count scalar = lanes_range(lanes::Width::scalar, span, 0, std::min<std::size_t>(n, 8192), want);
    Count four;
    if (w != lanes::Width::ifma4 && lanes::cpu_has_ifma4())
        four = lanes_range(lanes::Width::ifma4, span, 0, std::min<std::size_t>(n, 65536), want);
    std::printf("[lanes long] %s %s: %zu rows at %s, %zu valid, %zu rechecks, %zu mismatches; scalar slice %zu rows, "
                "%zu mismatches; ifma4 slice %zu rows, %zu mismatches\n",
                std::string(wire::to_string(t)).c_str(), enc == wire::SigEncoding::compact ? "compact" : "opaque",
                all.rows, std::string(lanes::width_name(w)).c_str(), all.valid, all.rechecks, all.mismatches,
                scalar.rows, scalar.mismatches, four.rows, four.mismatches);
    CHECK(all.rows == n);
    CHECK(all.mismatches == 0);
    CHECK(scalar.mismatches == 0);
    CHECK(scalar.rechecks == 0);
    CHECK(four.mismatches == 0);
}

}  // namespace

TEST_CASE("lanes: >= 1M generated rows match libsecp256k1", "[lanes][long]") {
    const std::size_t total = kernel_test::rows_from_env(1'000'000);
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    prove(wire::Table::ecdsa, wire::SigEncoding::opaque, total / 4, 9101, threads);
    prove(wire::Table::ecdsa, wire::SigEncoding::compact, total / 4, 9102, threads);
    prove(wire::Table::schnorr, wire::SigEncoding::opaque, total - 2 * (total / 4), 9103, threads);
}
