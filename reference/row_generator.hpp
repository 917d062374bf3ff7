// SPDX-License-Identifier: MIT
// Deterministic generator of really signed rows for the four bridge tables.
//
// Used by `sigverify gen`, the tests and the benchmarks. Row i depends only on
// (seed, i) and the table layout, never on the thread count, so a seed names
// one exact file. Signatures come from libsecp256k1 (ECDSA: RFC 6979 nonces,
// low-S; Schnorr: BIP-340 with aux randomness from the seed).
//
// Tails follow libbitcoin's meaning:
//   ecdsa/schnorr:      block_fk (3 bytes LE, ascending, ~1000 rows per block)
//   multisig:           mn = (signature index << 4) | key index, group (u16 LE),
//                       block_fk. Groups are m-of-n expanded the way libbitcoin
//                       expands them: signature i is paired with keys
//                       i .. i + (n - m); exactly one of those keys signed it.
//   threshold:          mn = m (required count), group, block_fk; n rows per
//                       group, each signed by a distinct key.
// With a tail_size other than the table's canonical one, the canonical tail is
// written as far as it fits and the rest is filled with seed-derived bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::reference {

struct GenOptions {
    wire::Table table = wire::Table::ecdsa;
    std::size_t count = 0;
    std::optional<std::size_t> tail_size{};  // default: the table's canonical size
    wire::SigEncoding encoding = wire::SigEncoding::opaque;  // ECDSA tables only
    double invalid_rate = 0.0;  // fraction of rows given an invalidating mutation
    double high_s_rate = 0.0;   // fraction of ECDSA rows whose s is replaced by n - s
    std::uint64_t seed = 1;
    unsigned threads = 0;  // 0 = all hardware threads
};

// What the generator did (mutations are applied to otherwise valid rows; a
// mutated row is almost always invalid, but e.g. a flipped hash bit in a
// multisig row that was already unmatched changes nothing).
struct GenReport {
    std::uint64_t rows = 0;
    std::uint64_t mutated = 0;
    std::uint64_t high_s = 0;
};

std::size_t effective_key_size(const GenOptions& options);

// Returns count rows, stride = record_size + tail_size.
// Throws std::invalid_argument on tail_size > 255 or rates outside [0, 1].
std::vector<std::uint8_t> generate_rows(const GenOptions& options, GenReport* report = nullptr);

}  // namespace sigverify::reference
