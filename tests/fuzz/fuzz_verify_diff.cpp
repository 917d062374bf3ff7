// SPDX-License-Identifier: MIT
// libFuzzer target: the verifiers' arithmetic against libsecp256k1, row by
// row. Each input decodes into one span of rows of one table (ecdsa, multisig,
// schnorr, threshold), one encoding and a tail size; every row is either raw
// fuzz bytes or a signature made from fuzz-chosen secrets and then edited
// towards an edge (diff_rows.hpp: r or s at 0, 1, n-1, n, n+1, p-1, p, 2^256-1;
// key x near p or off the curve; bad prefixes; high-S; sums that reach
// infinity or a doubling in the ladder; a flipped bit).
//
// What is checked, row by row, against the reference (RowVerifier,
// libsecp256k1):
//   - every raw verdict of a verifier that may say "recheck" (the host
//     kernel as a block of shared inversions and one record at a time; the
//     CPU lanes at each IFMA width this CPU runs): kVerdictValid only on a
//     row the reference accepts, kVerdictInvalid only on one it rejects;
//   - the exact path alone on every row (it decides every recheck, so it
//     must be exact on its own), and resolve_verdict32 on each raw verdict;
//   - the whole entries the daemon runs, rechecks resolved inside them:
//     kernels::verify_rows (the host-kernel backend's rows) and
//     daemon::verify_lanes_range at each width (the lanes backend's).
// Each raw verdict is computed once and checked in every way it can be, so
// an input costs about five verifications a row; `scripts/fuzz.sh --volume`
// runs it without ASan for the long runs.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "daemon/backends/lanes_rows.hpp"
#include "kernels/exact_verify.hpp"
#include "kernels/kernel_math.hpp"
#include "kernels/lanes/lanes.hpp"
#include "kernels/verify32.hpp"
#include "reference/reference_verifier.hpp"
#include "tests/fuzz/diff_rows.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace sigverify;

namespace {

namespace lanes = kernels::lanes;

// An entry under test that writes one final 0/1 verdict per row, run where
// the CPU has the lane width it needs (scalar: everywhere).
struct Candidate {
    const char* name;
    lanes::Width needs;
    void (*verify)(const wire::RowSpan& rows, std::uint8_t* verdicts);
};

// The threaded host batch run in results mode (what the host-kernel daemon runs).
void host_kernel_rows(const wire::RowSpan& rows, std::uint8_t* verdicts) {
    kernels::verify_rows(rows, wire::Mode::results, verdicts, 1);
}

template <lanes::Width W>
void lanes_rows(const wire::RowSpan& rows, std::uint8_t* verdicts) {
    daemon::verify_lanes_range(W, rows, 0, rows.count, verdicts);
}

constexpr Candidate kCandidates[] = {
    {"host kernel (verify_rows)", lanes::Width::scalar, host_kernel_rows},
    {"lanes ifma8 (verify_lanes_range)", lanes::Width::ifma8, lanes_rows<lanes::Width::ifma8>},
    {"lanes ifma4 (verify_lanes_range)", lanes::Width::ifma4, lanes_rows<lanes::Width::ifma4>},
};

// The lanes' raw verdicts (0, 1, or 2 recheck) of the span, eight rows a
// call, a short last group padded with its last row (as lanes_rows.cpp).
void lanes_raw(lanes::Width w, const wire::RowSpan& rows, std::uint8_t* raw) {
    for (std::size_t b = 0; b < rows.count; b += 8) {
        const std::size_t n = std::min<std::size_t>(8, rows.count - b);
        const std::uint8_t* records[8];
        for (std::size_t l = 0; l < 8; ++l) records[l] = rows.row(b + std::min(l, n - 1));
        std::uint8_t out[8];
        if (rows.kind == wire::RecordKind::ecdsa)
            lanes::ecdsa_verify8(w, records, rows.encoding == wire::SigEncoding::compact, out);
        else
            lanes::schnorr_verify8(w, records, out);
        std::copy(out, out + n, raw + b);
    }
}

const reference::RowVerifier& judge() {
    static const reference::RowVerifier v;
    return v;
}

bool debug() {
    static const bool on = std::getenv("SIGVERIFY_FUZZ_DEBUG") != nullptr;
    return on;
}

void report(const char* who, const wire::RowSpan& rows, std::size_t i, int got, int want) {
    std::fprintf(stderr, "%s: row %zu of %zu (%s, %s, tail %zu): verdict %d, libsecp256k1 %d\n", who, i,
                 rows.count, rows.kind == wire::RecordKind::ecdsa ? "ecdsa" : "schnorr",
                 rows.encoding == wire::SigEncoding::compact ? "compact" : "opaque", rows.tail_size, got, want);
    const std::uint8_t* r = rows.row(i);
    for (std::size_t b = 0; b < wire::record_size(rows.kind); ++b) std::fprintf(stderr, "%02x", r[b]);
    std::fprintf(stderr, "\n");
}

// A raw verdict that is definite must be the reference's; any other value
// resolves through the exact path (resolve_verdict32) to the reference's.
void check_raw(const char* who, const wire::RowSpan& rows, const std::uint8_t* raw,
               const std::uint8_t* want) {
    for (std::size_t i = 0; i < rows.count; ++i) {
        const bool wrong = (raw[i] == kernels::kVerdictValid && !want[i]) ||
                           (raw[i] == kernels::kVerdictInvalid && want[i]);
        if (wrong) report(who, rows, i, raw[i], want[i]);
        FUZZ_CHECK(!wrong);
        // resolve_verdict32 runs the exact path only on a recheck
        const bool resolved = kernels::resolve_verdict32(raw[i], rows.row(i), rows.kind, rows.encoding);
        if (resolved != (want[i] != 0)) report(who, rows, i, raw[i], want[i]);
        FUZZ_CHECK(resolved == (want[i] != 0));
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz_diff::Rows batch = fuzz_diff::decode(data, size);
    if (batch.span.count == 0) return 0;
    const wire::RowSpan& rows = batch.span;
    const std::size_t n = rows.count;
    std::vector<std::uint8_t> want(n);
    std::size_t valid = 0;
    for (std::size_t i = 0; i < n; ++i) {
        want[i] = judge().verify_row(rows, i);
        valid += want[i];
    }
    if (debug()) std::fprintf(stderr, "rows %zu valid %zu\n", n, valid);

    // The exact path alone: it must be exact on every row.
    for (std::size_t i = 0; i < n; ++i) {
        const int got = kernels::verify_record_exact(rows.row(i), rows.kind, rows.encoding);
        if (got != want[i]) report("exact path", rows, i, got, want[i]);
        FUZZ_CHECK(got == want[i]);
    }

    // Raw verdicts, each computed once.
    std::vector<std::uint8_t> raw(n);
    kernels::verify_block32(rows, 0, n, raw.data());
    check_raw("host kernel raw verdict (block)", rows, raw.data(), want.data());
    for (std::size_t i = 0; i < n; ++i) raw[i] = kernels::verify_record32(rows.row(i), rows.kind, rows.encoding);
    check_raw("host kernel raw verdict (one row)", rows, raw.data(), want.data());
    for (const lanes::Width w : {lanes::Width::ifma8, lanes::Width::ifma4}) {
        if (!lanes::cpu_runs(w)) continue;
        lanes_raw(w, rows, raw.data());
        check_raw(w == lanes::Width::ifma8 ? "lanes ifma8 raw verdict" : "lanes ifma4 raw verdict", rows,
                  raw.data(), want.data());
    }

    // The entries the backends run, row by row.
    std::vector<std::uint8_t> got(n);
    for (const Candidate& c : kCandidates) {
        if (!lanes::cpu_runs(c.needs)) continue;
        std::fill(got.begin(), got.end(), 0xAA);
        c.verify(rows, got.data());
        for (std::size_t i = 0; i < n; ++i) {
            if (got[i] != want[i]) report(c.name, rows, i, got[i], want[i]);
            FUZZ_CHECK(got[i] == want[i]);
        }
    }
    return 0;
}
