// SPDX-License-Identifier: MIT
// Multisig batches whose groups span chunks, for the group-repair tests
// (issue 29.3): the groups confirmation rule re-verifies, when a job ends,
// the rows a group's first chunk held, and a batch can make every group span.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "reference/multisig_pair.hpp"
#include "reference/row_generator.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::test {

// Group g of `count` groups: group field g mod 65536, block_fk 1 + g / 65536.
inline void write_group(wire::MultisigRow& row, std::size_t g, unsigned signature, unsigned key) {
    row.mn = *reference::encode_multisig_pair(signature, key);
    wire::write_u16le(row.group, std::uint16_t(g % 65536));
    wire::write_u24le(row.block_fk, std::uint32_t(1 + g / 65536));
}

// A record whose key does not parse (prefix 05): invalid, and cheap to
// verify on every path, so the cost left is the daemon's own bookkeeping.
inline wire::EcdsaRecord unparsable_record(std::size_t i) {
    wire::EcdsaRecord r{};
    std::memcpy(r.hash, &i, sizeof i);
    r.point[0] = 0x05;
    r.sig[0] = 1;
    r.sig[32] = 1;
    return r;
}

// n rows (a multiple of 4), n/4 groups of four attempts of signature 0, one
// in each quarter of the batch: row i is attempt (0, i / (n/4)) of group
// i mod (n/4). Every row is invalid (unparsable key). Whatever the chunk
// size below n/4, every group spans chunks, and the chunks of the first
// quarter are the first to meet n/4 groups between them.
inline std::vector<wire::MultisigRow> interleaved_invalid_groups(std::size_t n) {
    if (n % 4 != 0) throw std::invalid_argument("interleaved_invalid_groups: n must be a multiple of 4");
    const std::size_t groups = n / 4;
    std::vector<wire::MultisigRow> rows(n);
    for (std::size_t i = 0; i < n; ++i) {
        rows[i].record = unparsable_record(i);
        write_group(rows[i], i % groups, 0, unsigned(i / groups));
    }
    return rows;
}

// A batch whose job-end repair is libsecp256k1 work: `groups` 1-of-9
// groups. Group g's attempts (0, 0) (valid) to (0, 7) (invalid: a signed row
// whose message changed, a full verification each) are rows 8g to 8g + 7 of
// the first part; its attempt (0, 8), invalid and cheap (unparsable key), is
// row 8 * groups + g. Every group passes (key 0). With chunks of a multiple
// of 8 rows, a chunk of the first part holds whole first parts: each group
// passes there, so its 7 INVALID rows stay unconfirmed; the chunks of the
// last part find every group spanning, and the job-end repair re-verifies
// 7 * groups rows. truth[i]: the true verdict of row i.
struct RepairBatch {
    std::vector<wire::MultisigRow> rows;
    std::vector<std::uint8_t> truth;
    std::size_t repaired_rows = 0;  // what the repair re-verifies
};

inline RepairBatch long_repair_groups(std::size_t groups) {
    constexpr unsigned kFirstPart = 8;
    reference::GenOptions o;
    o.table = wire::Table::ecdsa;
    o.count = 1;
    o.invalid_rate = 0.0;
    o.high_s_rate = 0.0;
    o.threads = 1;
    o.seed = 29;
    const std::vector<std::uint8_t> signed_row = reference::generate_rows(o);
    wire::EcdsaRecord valid{};
    std::memcpy(&valid, signed_row.data(), sizeof valid);
    wire::EcdsaRecord invalid = valid;
    invalid.hash[31] ^= 1;  // the message changed: the signature no longer verifies
    RepairBatch b;
    const std::size_t n = groups * (kFirstPart + 1);
    b.rows.resize(n);
    b.truth.assign(n, 0);
    for (std::size_t g = 0; g < groups; ++g) {
        for (unsigned k = 0; k < kFirstPart; ++k) {
            wire::MultisigRow& row = b.rows[kFirstPart * g + k];
            row.record = k == 0 ? valid : invalid;
            write_group(row, g, 0, k);
        }
        b.truth[kFirstPart * g] = 1;
        wire::MultisigRow& last = b.rows[kFirstPart * groups + g];
        last.record = unparsable_record(g);
        write_group(last, g, 0, kFirstPart);
    }
    b.repaired_rows = (kFirstPart - 1) * groups;
    return b;
}

}  // namespace sigverify::test
