// SPDX-License-Identifier: MIT
// Host entry points of the kernel math (the same source the CUDA kernel runs,
// compiled by the host compiler): the precomputed G tables, per-record
// verification (the GPU ladder's host twin, rechecks resolved by the exact
// path) and a threaded batch run over wire-format rows.
//
// This is what the host tests drive to prove the device math row by row
// against libsecp256k1, and what the GPU checks use as a second oracle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/ecmult32.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::kernels {

struct GTableView;  // the exact path's wNAF tables (exact_ecmult.hpp)

// The exact path's G tables in one array: entries [0, kTableGSize) are the
// odd multiples of G, entries [kTableGSize, 2 kTableGSize) those of 2^128 G.
std::vector<GeStorage> build_exact_g_tables();

// The host's copy, built once on first use (thread-safe).
const GTableView& host_exact_g_table();

// The GPU kernel's G tables in one array (the device upload uses the same
// layout): [0, kGTableEntries) = (2i+1) G, then (2i+1) 2^kGHighShift G
// (ecmult32.hpp: 2,048 each, 256 KiB in all, for 12-bit windows).
std::vector<GeStorage> build_g_tables32();
const GTable32& host_g_table32();

// The GPU kernel's verdict for one record: kVerdictValid, kVerdictInvalid or
// kVerdictRecheck (verify32.hpp), exactly what the GPU computes (a block of
// one row).
std::uint8_t verify_record32(const std::uint8_t* record, wire::RecordKind kind, wire::SigEncoding encoding);

// Rows the host twin verifies as one CUDA block (the default
// threads_per_block, gpu_verifier.hpp): their ECDSA s values share one
// inversion (batch_inverse32.hpp), and so do the Z of their BIP-340 rows
// in the parity step (the GPU's second kernel).
constexpr std::size_t kHostBlockRows = 128;

// The GPU kernel's verdicts for rows [begin, begin + min(n, kHostBlockRows))
// of the span, verified as one block: verdicts[t] for row begin + t.
void verify_block32(const wire::RowSpan& rows, std::size_t begin, std::size_t n, std::uint8_t* verdicts);

// The exact path's verdict (exact_verify.hpp), which resolves kVerdictRecheck.
bool verify_record_exact(const std::uint8_t* record, wire::RecordKind kind, wire::SigEncoding encoding);

// The one rule that turns a kernel verdict (host or GPU) into valid /
// invalid: kVerdictRecheck (and any other value above kVerdictValid) is
// decided by the exact path on the record.
bool resolve_verdict32(std::uint8_t verdict, const std::uint8_t* record, wire::RecordKind kind,
                       wire::SigEncoding encoding);

// Verdict for one record (EcdsaRecord or SchnorrRecord bytes): the GPU
// kernel's host twin, with rechecks resolved by the exact path.
bool verify_record(const std::uint8_t* record, wire::RecordKind kind, wire::SigEncoding encoding);

struct HostCounts {
    std::uint64_t valid = 0;
    std::uint64_t invalid = 0;
};

// Verifies rows [begin, end): Mode::results writes results[i] (indexing the
// whole span), Mode::collect zeroes the tail of each valid row (the one
// publish rule, shm_protocol/verdict_publish.hpp).
HostCounts verify_range(const wire::RowSpan& rows, std::size_t begin, std::size_t end,
                        wire::Mode mode, std::uint8_t* results);

// The whole span on `threads` threads (0 = all hardware threads). In results
// mode results is zeroed first (fail closed).
HostCounts verify_rows(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results,
                       unsigned threads = 0);

}  // namespace sigverify::kernels
