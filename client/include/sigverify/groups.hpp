// SPDX-License-Identifier: MIT
// libsigverify: group and block verdicts from row verdicts.
//
// A node verifies its signature rows (client.hpp) and then needs to know
// which blocks pass: every multisig (CHECKMULTISIG) and threshold (tapscript
// CHECKSIGADD) group, and every single signature, of a block must pass. These
// calls compute that from the rows' grouping fields and their verdicts, by
// the rules of reference/group_verdicts.hpp (docs/columns.md states them):
//   multisig   pair bytes (signature i, key k; i << 4 | k up to 16 keys,
//              multisig_pair_code below for 17..20); the group passes when
//              its m signatures match increasing keys through verified rows
//              (m inferred)
//   threshold  every row verified (BIP-342: a failing non-empty signature
//              fails the script), at least m rows, one consistent m >= 1
//   single     one row, its own group (single_signature_group_rows): passes
//              iff it verified. libbitcoin judges every row of its Schnorr
//              table this way, threshold rows included (its correlate holds
//              only the id): give those ids to single_signature_group_rows.
// Rows with block_fk FF FF FF (still being written) belong to no group and
// are counted as skipped. A block's verdict over several tables (ECDSA singles
// and multisig, Schnorr threshold) is the AND of its per-table verdicts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "sigverify/export.h"
#include "sigverify/shm_protocol/group_fields.hpp"

namespace sigverify {

// GroupKind, GroupRow, GroupFlag and GroupVerdict: sigverify/shm_protocol/group_fields.hpp.

struct BlockVerdict {
    std::uint32_t block_fk = 0;
    bool pass = false;             // every group of the block passes
    std::uint32_t groups = 0;
    std::uint32_t failed_groups = 0;
};

struct GroupReport {
    std::vector<GroupVerdict> groups;  // sorted by (block_fk, group)
    std::vector<BlockVerdict> blocks;  // sorted by block_fk
    std::uint64_t skipped_rows = 0;    // rows with block_fk 0xFFFFFF
    std::uint64_t failed_groups = 0;
    std::uint64_t failed_blocks = 0;
};

// The multisig pair byte for signature index s tried against key index k
// (0-based, k < 20, s <= k; docs/columns.md): libbitcoin's nibbles s << 4 | k
// while k < 16; keys 16..19 in codes libbitcoin's band never writes. Nothing
// for an attempt CHECKMULTISIG can never use (s > k) or k >= 20.
constexpr std::optional<std::uint8_t> multisig_pair_code(unsigned s, unsigned k) {
    if (k >= 20 || s > k) return std::nullopt;
    if (k < 16) return std::uint8_t(s << 4 | k);
    if (s < 12) return std::uint8_t((12 + (k - 16)) << 4 | s);
    return std::uint8_t((4 + (s - 12)) << 4 | (k - 16));
}

// verdicts[i] != 0: row i verified. Throws std::invalid_argument when the
// spans differ in size.
[[nodiscard]] SIGVERIFY_API GroupReport compute_group_verdicts(GroupKind kind, std::span<const GroupRow> rows,
                                                 std::span<const std::uint8_t> verdicts);

// The grouping fields of an ECDSA column batch's libbitcoin correlate column
// (6 bytes a row: id[3] || pair || group[2], docs/columns.md): multisig rows.
[[nodiscard]] SIGVERIFY_API std::vector<GroupRow> group_rows_from_ecdsa_correlate(std::span<const std::uint8_t> correlate);

// Single signatures: each row its own group (numbered per block from 65535
// downward, so they never meet multisig groups numbered from 0), to be
// computed with GroupKind::multisig. Throws std::invalid_argument when a
// block holds more than 65536 single signatures.
[[nodiscard]] SIGVERIFY_API std::vector<GroupRow> single_signature_group_rows(std::span<const std::uint32_t> block_fks);

}  // namespace sigverify
