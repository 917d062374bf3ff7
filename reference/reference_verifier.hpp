// SPDX-License-Identifier: MIT
// Reference verifier: the consensus anchor of sigverify.
//
// Every verdict sigverify returns must equal what this module returns for the
// same row. It is a thin layer over libsecp256k1 (the consensus reference) that
// applies the bridge's verdict rules:
//   * ECDSA high-S signatures are VALID: s is normalized to low-S in scratch
//     memory; the caller's row is never modified by verification.
//   * A key that does not parse (bad prefix, x >= p, not on the curve), r or s
//     equal to zero or >= n, Schnorr R.x >= p or s >= n: verdict 0.
//   * A bad row never aborts the batch.
//
// RowVerifier is single-threaded and cheap to call per row; Verifier spreads a
// batch over a pool of threads, each with its own RowVerifier. Both serve as the
// daemon's CPU backend and as the client's local fallback.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "shm_protocol/verdict_publish.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

struct secp256k1_context_struct;

namespace sigverify::reference {

using wire::Mode;
using wire::RecordKind;
using wire::RowSpan;
using wire::SigEncoding;

// Verdict counts of one call.
struct Tally {
    std::uint64_t valid = 0;
    std::uint64_t invalid = 0;

    std::uint64_t rows() const { return valid + invalid; }
    Tally& operator+=(const Tally& o) {
        valid += o.valid;
        invalid += o.invalid;
        return *this;
    }
    friend bool operator==(const Tally&, const Tally&) = default;
};

// Verifies rows [begin, end) one by one with verify_row(i) and publishes each
// verdict through the one publish rule (shm_protocol/verdict_publish.hpp):
// the loop the row and column verifiers share.
template <class VerifyRow>
Tally verify_and_publish(VerifyRow&& verify_row, const wire::TailSpan& tails, std::size_t begin, std::size_t end,
                         Mode mode, std::uint8_t* results) {
    Tally tally;
    for (std::size_t i = begin; i < end; ++i) {
        const bool ok = verify_row(i);
        if (ok) ++tally.valid;
        else ++tally.invalid;
        wire::publish_verdict(mode, tails, results, i, ok);
    }
    return tally;
}

// One libsecp256k1 context; verifies single records and row ranges.
// Not thread-safe: use one instance per thread.
class RowVerifier {
public:
    RowVerifier();
    ~RowVerifier();
    RowVerifier(const RowVerifier&) = delete;
    RowVerifier& operator=(const RowVerifier&) = delete;

    // record points at an EcdsaRecord (129 bytes).
    bool verify_ecdsa(const std::uint8_t* record, SigEncoding encoding) const;
    // record points at a SchnorrRecord (128 bytes).
    bool verify_schnorr(const std::uint8_t* record) const;
    // Row i of rows (i < rows.count).
    bool verify_row(const RowSpan& rows, std::size_t i) const;

    // Verifies rows [begin, end) of rows.
    //   Mode::results: results[i] = verdict for i in [begin, end); results
    //                  indexes the whole span (results[0] is row 0).
    //   Mode::collect: zeroes the tail of each valid row; results is ignored.
    // Each verdict is published by wire::publish_verdict (verdict_publish.hpp).
    Tally run(const RowSpan& rows, std::size_t begin, std::size_t end, Mode mode,
              std::uint8_t* results) const;

private:
    secp256k1_context_struct* ctx_;
};

class WorkerPool;

// A batch verifier over a fixed pool of threads, each with its own
// RowVerifier: packed rows, and column tables (columns.hpp, where the column
// calls are defined; ColumnVerifier is this class).
// Thread-safety: calls from several threads are serialized (one batch at a
// time uses the whole pool).
class Verifier {
public:
    // threads = 0 means one per hardware thread.
    explicit Verifier(unsigned threads = 0);
    ~Verifier();
    Verifier(const Verifier&) = delete;
    Verifier& operator=(const Verifier&) = delete;

    unsigned threads() const;

    // Results mode: results must hold rows.count bytes. They are zeroed first
    // (fail closed), then set to 1 for each valid row.
    Tally verify(const RowSpan& rows, std::uint8_t* results);
    // Collect mode: zeroes the tail of every valid row in place.
    Tally collect(const RowSpan& rows);
    // Either mode; results may be null in collect mode.
    // Throws std::invalid_argument when the span is invalid, the mode unknown
    // or results mode lacks a buffer (nothing is written then).
    Tally run(const RowSpan& rows, Mode mode, std::uint8_t* results);

    // The same for columns; collect zeroes the correlate entry of every valid
    // row. Throws std::invalid_argument when columns.check() fails.
    Tally verify(const wire::ColumnSpan& columns, std::uint8_t* results);
    Tally collect(const wire::ColumnSpan& columns);
    Tally run(const wire::ColumnSpan& columns, Mode mode, std::uint8_t* results);

private:
    // What every batch checks before any write: a known mode, a results
    // buffer in results mode, zeroed (fail closed).
    static void prepare(std::size_t count, Mode mode, std::uint8_t* results);

    std::unique_ptr<WorkerPool> pool_;
    std::vector<std::unique_ptr<RowVerifier>> verifiers_;  // [worker]
};

// Converts a 64-byte signature between the opaque form (r LE || s LE) and the
// compact form (r BE || s BE). The conversion is its own inverse.
void swap_sig_encoding(const std::uint8_t in[64], std::uint8_t out[64]);

}  // namespace sigverify::reference
