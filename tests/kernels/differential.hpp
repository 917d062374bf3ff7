// SPDX-License-Identifier: MIT
// Shared by the kernel differential tests: generated rows of every table and
// encoding, verified by the host-compiled kernel math and by the reference
// (libsecp256k1), compared row by row in results mode and byte for byte in
// collect mode.
#pragma once

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/kernel_math.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"
#include "support/first_differences.hpp"
#include "support/row_span.hpp"

namespace sigverify::kernel_test {

// Row count per table/encoding: env SIGVERIFY_KERNEL_ROWS, else the default.
inline std::size_t rows_from_env(std::size_t fallback) {
    if (const char* e = std::getenv("SIGVERIFY_KERNEL_ROWS")) {
        char* end = nullptr;
        const unsigned long long v = std::strtoull(e, &end, 10);
        if (end != e && *end == '\0' && v > 0) return static_cast<std::size_t>(v);
    }
    return fallback;
}

using test::span_of;

struct DiffStats {
    std::size_t rows = 0, valid = 0, mismatches = 0;
    double kernel_s = 0, reference_s = 0, gen_s = 0;
};

// The generated rows every differential test uses: 30% invalid, 25% high-S.
inline reference::GenOptions differential_rows(wire::Table t, wire::SigEncoding enc, std::size_t count,
                                               std::size_t tail_size, std::uint64_t seed, unsigned threads) {
    reference::GenOptions o;
    o.table = t;
    o.count = count;
    o.tail_size = tail_size;
    o.encoding = enc;
    o.invalid_rate = 0.3;
    o.high_s_rate = 0.25;
    o.seed = seed;
    o.threads = threads;
    return o;
}

// Generates count rows of table t, verifies them both ways in results mode
// (row by row) and collect mode (byte for byte). Failures are reported through
// CHECK so one run shows every disagreeing configuration.
inline DiffStats run_differential(wire::Table t, wire::SigEncoding enc, std::size_t count,
                                  std::size_t tail_size, std::uint64_t seed,
                                  reference::Verifier& verifier, unsigned threads,
                                  bool with_collect = true) {
    using clock = std::chrono::steady_clock;
    DiffStats st;
    const reference::GenOptions o = differential_rows(t, enc, count, tail_size, seed, threads);
    reference::GenReport report;
    auto t0 = clock::now();
    auto rows = reference::generate_rows(o, &report);
    st.gen_s = std::chrono::duration<double>(clock::now() - t0).count();
    const wire::RowSpan span = span_of(rows, t, tail_size, enc);
    REQUIRE(span.count == count);

    std::vector<std::uint8_t> want(count, 0xAA), got(count, 0x55);
    t0 = clock::now();
    const auto tally = verifier.verify(span, want.data());
    st.reference_s = std::chrono::duration<double>(clock::now() - t0).count();
    t0 = clock::now();
    const auto counts = kernels::verify_rows(span, wire::Mode::results, got.data(), threads);
    st.kernel_s = std::chrono::duration<double>(clock::now() - t0).count();

    st.rows = count;
    for (std::size_t i = 0; i < count; ++i) {
        st.valid += want[i];
        if (want[i] != got[i]) {
            if (st.mismatches < 5) {
                UNSCOPED_INFO("row " << i << " kernel " << int(got[i]) << " reference " << int(want[i]));
            }
            ++st.mismatches;
        }
    }
    INFO(wire::to_string(t) << " " << wire::to_string(enc) << " key_size " << tail_size << " rows "
                            << count);
    CHECK(st.mismatches == 0);
    CHECK(counts.valid == tally.valid);
    CHECK(counts.invalid == tally.invalid);
    // the generated set really holds both verdicts and high-S rows
    CHECK(report.mutated > count / 5);
    CHECK(st.valid > count / 4);
    if (span.kind == wire::RecordKind::ecdsa) CHECK(report.high_s > count / 5);

    // collect mode: byte-exact against the reference's collect
    if (with_collect && tail_size > 0) {
        auto by_kernel = rows;
        auto by_reference = rows;
        const wire::RowSpan ks = span_of(by_kernel, t, tail_size, enc);
        const wire::RowSpan rs = span_of(by_reference, t, tail_size, enc);
        const auto kc = kernels::verify_rows(ks, wire::Mode::collect, nullptr, threads);
        const auto rc = verifier.collect(rs);
        CHECK(kc.valid == rc.valid);
        // Byte positions, not whole vectors, in a failure message (a broken
        // collect would otherwise print megabytes).
        const std::string diff = test::first_differences(by_kernel, by_reference);
        CHECK(diff == "");
        CHECK(!test::first_differences(by_kernel, rows).empty());
    }
    return st;
}

inline void print_stats(const char* what, wire::Table t, wire::SigEncoding enc, const DiffStats& s,
                        unsigned threads) {
    std::printf("%s %-9s %-7s rows %zu valid %zu: gen %.2fs, kernel math %.2fs (%.2f us/row/thread), "
                "libsecp256k1 %.2fs (%.2f us/row/thread), %u threads\n",
                what, std::string(wire::to_string(t)).c_str(), std::string(wire::to_string(enc)).c_str(),
                s.rows, s.valid, s.gen_s, s.kernel_s, s.kernel_s * 1e6 * threads / double(s.rows),
                s.reference_s, s.reference_s * 1e6 * threads / double(s.rows), threads);
    std::fflush(stdout);
}

}  // namespace sigverify::kernel_test
