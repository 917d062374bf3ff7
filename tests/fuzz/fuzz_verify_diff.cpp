// SPDX-License-Identifier: MIT
// libFuzzer target: the verifiers' arithmetic against libsecp256k1, row by
// row. Each input decodes into one span of rows of one table (ecdsa, multisig,
// schnorr, threshold), one encoding and a tail size; every row is either raw
// fuzz bytes or a signature made from fuzz-chosen secrets and then edited
// towards an edge (diff_rows.hpp: r or s at 0, 1, n-1, n, n+1, p-1, p, 2^256-1;
// key x near p or off the curve; bad prefixes; high-S; sums that reach
// infinity or a doubling in the ladder; a flipped bit).
//
// Every candidate of kCandidates (below) verifies the whole span; each of its
// row verdicts must equal the reference's (RowVerifier, libsecp256k1). The
// host kernel's raw verdicts are checked exactly as well: kVerdictValid only
// on a row the reference accepts, kVerdictInvalid only on one it rejects,
// anything else (recheck, parity) resolved by the exact path to the
// reference's verdict. A future verifier (the CPU "lanes" backend) joins by
// one line in kCandidates.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/exact_verify.hpp"
#include "kernels/kernel_math.hpp"
#include "kernels/verify32.hpp"
#include "reference/reference_verifier.hpp"
#include "tests/fuzz/diff_rows.hpp"
#include "tests/fuzz/fuzz_check.hpp"

using namespace sigverify;

namespace {

// A verifier under test: writes one 0/1 verdict per row of the span.
struct Candidate {
    const char* name;
    void (*verify)(const wire::RowSpan& rows, std::uint8_t* verdicts);
};

// The GPU kernel's host twin in one block (shared inversions), rechecks and
// parity resolved by the one rule (resolve_verdict32).
void host_kernel_block(const wire::RowSpan& rows, std::uint8_t* verdicts) {
    std::vector<std::uint8_t> raw(rows.count);
    kernels::verify_block32(rows, 0, rows.count, raw.data());
    for (std::size_t i = 0; i < rows.count; ++i)
        verdicts[i] = kernels::resolve_verdict32(raw[i], rows.row(i), rows.kind, rows.encoding);
}

// The host twin one record at a time (a block of one row).
void host_kernel_record(const wire::RowSpan& rows, std::uint8_t* verdicts) {
    for (std::size_t i = 0; i < rows.count; ++i)
        verdicts[i] = kernels::verify_record(rows.row(i), rows.kind, rows.encoding);
}

// The threaded host batch run in results mode (what the host-kernel daemon runs).
void host_kernel_rows(const wire::RowSpan& rows, std::uint8_t* verdicts) {
    kernels::verify_rows(rows, wire::Mode::results, verdicts, 1);
}

// The exact path alone (it resolves every recheck, so it must be exact on its own).
void exact_path(const wire::RowSpan& rows, std::uint8_t* verdicts) {
    for (std::size_t i = 0; i < rows.count; ++i)
        verdicts[i] = kernels::verify_record_exact(rows.row(i), rows.kind, rows.encoding);
}

constexpr Candidate kCandidates[] = {
    {"host kernel (block)", host_kernel_block},
    {"host kernel (record)", host_kernel_record},
    {"host kernel (verify_rows)", host_kernel_rows},
    {"exact path", exact_path},
    // {"lanes", lanes_verify},  <- the CPU lanes backend, once it exists
};

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fuzz_diff::Rows batch = fuzz_diff::decode(data, size);
    if (batch.span.count == 0) return 0;
    const wire::RowSpan& rows = batch.span;
    std::vector<std::uint8_t> want(rows.count);
    std::size_t valid = 0;
    for (std::size_t i = 0; i < rows.count; ++i) {
        want[i] = judge().verify_row(rows, i);
        valid += want[i];
    }
    if (debug()) std::fprintf(stderr, "rows %zu valid %zu\n", rows.count, valid);

    // The kernel's raw verdicts: a definite verdict is never wrong.
    std::vector<std::uint8_t> raw(rows.count);
    kernels::verify_block32(rows, 0, rows.count, raw.data());
    for (std::size_t i = 0; i < rows.count; ++i) {
        const bool wrong = (raw[i] == kernels::kVerdictValid && !want[i]) ||
                           (raw[i] == kernels::kVerdictInvalid && want[i]);
        if (wrong) report("host kernel raw verdict", rows, i, raw[i], want[i]);
        FUZZ_CHECK(!wrong);
        const std::uint8_t single = kernels::verify_record32(rows.row(i), rows.kind, rows.encoding);
        const bool wrong_single = (single == kernels::kVerdictValid && !want[i]) ||
                                  (single == kernels::kVerdictInvalid && want[i]);
        if (wrong_single) report("host kernel raw verdict (one row)", rows, i, single, want[i]);
        FUZZ_CHECK(!wrong_single);
    }

    // Every candidate, resolved, row by row.
    std::vector<std::uint8_t> got(rows.count);
    for (const Candidate& c : kCandidates) {
        std::fill(got.begin(), got.end(), 0xAA);
        c.verify(rows, got.data());
        for (std::size_t i = 0; i < rows.count; ++i) {
            if (got[i] != want[i]) report(c.name, rows, i, got[i], want[i]);
            FUZZ_CHECK(got[i] == want[i]);
        }
    }
    return 0;
}
