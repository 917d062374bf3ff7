// SPDX-License-Identifier: MIT
// Group verdicts: satisfaction of libbitcoin's multisig and threshold groups
// (and of single signatures, each its own group), computed from the per-row
// verdicts; per-block verdicts from those.
//
// Rows with the same (block_fk, group) form one group. Rows whose block_fk is
// FF FF FF (still being written) belong to no group: they are skipped and
// counted.
//
// Multisig (ECDSA, CHECKMULTISIG). A row's mn byte names signature index s
// and key index k, both 0-based: s << 4 | k up to 16 keys (libbitcoin's
// packing), extended to keys and signatures 0..19 (multisig_pair.hpp). A
// (s, k) pair is USABLE when the group has at least one row with that mn and
// every row with that mn verified (a duplicate row that failed poisons its
// pair: fail closed; libbitcoin's correlation takes any verified copy, but its
// band never writes one (s, k) twice, so the two agree on every table it
// writes). The group requires
// m = (largest signature index among its rows) + 1 signatures, and PASSES when
// there are keys k_0 < k_1 < ... < k_{m-1} such that every (i, k_i) is usable:
// signature i is matched to a key after the key of signature i-1, as
// CHECKMULTISIG walks its keys in order. Consequences:
//   * a row that is missing counts as not verified: if it leaves a signature
//     unmatched the group fails; if another key still matches, it passes;
//   * a signature index below the largest one with no rows at all fails the
//     group;
//   * m is inferred from the rows, so rows of the LAST signature that are all
//     absent are invisible: a node must hand over complete groups.
//   * one signature matched by several keys is fine; two signatures can never
//     share a key (distinct, increasing keys).
//
// Threshold (BIP-342, tapscript CHECKSIGADD). A row's mn byte is the group's
// required count m. Rows exist only for NON-EMPTY signatures, and under BIP-342
// a non-empty signature that fails validation fails the whole script (it does
// not merely leave the count short). So the group PASSES only when
//   * every row carries the same m, and m >= 1,
//   * EVERY row verified (one failed row fails the group: kGroupFailedRow),
//   * at least m rows are present (fewer: kGroupShort).
// Rows are counted as given (two verified rows count twice). Inconsistent m or
// m = 0 fails the group and is reported. This is libbitcoin's batch rule: any
// failed threshold row fails its block.
//
// Single signatures (the ecdsa and schnorr tables) have no group of their own
// in the row tables. Given as multisig GroupRows with mn 0 and a group number
// of their own (single_signature_group_rows below; rows_to_columns uses the
// same numbering for the ecdsa table's libbitcoin correlate), each one is a
// one-row 1-of-1 multisig group, which passes iff its row verified.
//
// A block (block_fk) passes when every group in it passes. A block's verdict
// over several tables (singles and multisig in the ECDSA table, threshold in
// the Schnorr one) is the AND of the per-table block verdicts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "reference/columns.hpp"
#include "reference/multisig_pair.hpp"
#include "reference/multisig_tally.hpp"
#include "sigverify/shm_protocol/group_fields.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::reference {

// The grouping fields and a group's verdict are the library's public types
// (sigverify/shm_protocol/group_fields.hpp): one definition for both.
using sigverify::GroupKind;
using sigverify::GroupRow;
using sigverify::GroupVerdict;
using sigverify::GroupFlag;
using sigverify::kGroupUnmatched;
using sigverify::kGroupDuplicates;
using sigverify::kGroupInconsistentM;
using sigverify::kGroupZeroM;
using sigverify::kGroupShort;
using sigverify::kGroupFailedRow;
std::string_view to_string(GroupKind k);

// From canonical multisig or threshold rows (tail_size 6: mn || group || block_fk).
// Throws std::invalid_argument when the span is invalid or not canonical.
std::vector<GroupRow> group_rows_from_rows(const RowSpan& rows, GroupKind kind);
// From an ECDSA libbitcoin correlate column (id || pair || group): multisig only.
// Throws std::invalid_argument when the batch is not ECDSA with tail_size 6.
std::vector<GroupRow> group_rows_from_correlate(const ColumnSpan& columns);

struct BlockVerdict {
    std::uint32_t block_fk = 0;
    bool all_groups_pass = false;
    std::uint32_t groups = 0;
    std::uint32_t failed_groups = 0;
    friend bool operator==(const BlockVerdict&, const BlockVerdict&) = default;
};

struct GroupReport {
    std::vector<GroupVerdict> groups;  // sorted by (block_fk, group)
    std::vector<BlockVerdict> blocks;  // sorted by block_fk
    std::uint64_t skipped_rows = 0;    // block_fk FF FF FF
    std::vector<std::size_t> first_skipped;  // the first (up to kMaxSkippedListed) skipped row indices
    std::uint64_t inconsistent_groups = 0;   // threshold groups with disagreeing m (or m = 0)
    std::uint64_t failed_groups = 0;
    std::uint64_t failed_blocks = 0;
};

constexpr std::size_t kMaxSkippedListed = 16;

// Single signatures: one GroupRow per row, mn 0, each with a group number of
// its own, handed out per block_fk in input order from 65535 DOWNWARD (65535,
// 65534, ...). Nodes number multisig groups from 0 upward, so single and
// multisig rows of one block may share an ECDSA table without their groups
// meeting while the block has at most 65536 groups in all. Rows with block_fk
// FF FF FF (being written) get group 0 and are skipped by
// compute_group_verdicts. Throws std::invalid_argument when a block holds
// more than 65536 single signatures.
std::vector<GroupRow> single_signature_group_rows(std::span<const std::uint32_t> block_fks);

// Threshold groups that fail even when every row verifies (fewer rows than
// m, rows disagreeing on m, m = 0), sorted by (block_fk, group). libbitcoin
// never captures such a spend (it verifies it inline, where it fails), and its
// Schnorr correlate, which carries no m, could not say the group fails: a
// threshold table holding one cannot be written in that layout.
std::vector<GroupVerdict> unsatisfiable_threshold_groups(std::span<const GroupRow> rows);

// verdicts[i] != 0 means row i verified. rows.size() must equal verdicts.size()
// (std::invalid_argument otherwise).
GroupReport compute_group_verdicts(GroupKind kind, std::span<const GroupRow> rows,
                                   std::span<const std::uint8_t> verdicts);

}  // namespace sigverify::reference
