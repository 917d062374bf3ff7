// SPDX-License-Identifier: MIT
// The public group and block verdicts (sigverify/groups.hpp): the rules live
// in reference/group_verdicts.cpp, the one implementation; this file only
// converts between its types and the installed ones.
#include "sigverify/groups.hpp"

#include <stdexcept>

#include "reference/columns.hpp"
#include "reference/group_verdicts.hpp"

namespace sigverify {
namespace {

reference::GroupRow to_reference(const GroupRow& r) { return {r.mn, r.group, r.block_fk}; }
GroupRow from_reference(const reference::GroupRow& r) { return {r.mn, r.group, r.block_fk}; }

// The flag values are the reference's, so the bits pass through unchanged.
constexpr bool same_flag(int a, int b) { return a == b; }
static_assert(same_flag(kGroupUnmatched, reference::kGroupUnmatched) &&
              same_flag(kGroupDuplicates, reference::kGroupDuplicates) &&
              same_flag(kGroupInconsistentM, reference::kGroupInconsistentM) &&
              same_flag(kGroupZeroM, reference::kGroupZeroM) && same_flag(kGroupShort, reference::kGroupShort) &&
              same_flag(kGroupFailedRow, reference::kGroupFailedRow));

}  // namespace

GroupReport compute_group_verdicts(GroupKind kind, std::span<const GroupRow> rows,
                                   std::span<const std::uint8_t> verdicts) {
    std::vector<reference::GroupRow> in(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) in[i] = to_reference(rows[i]);
    const reference::GroupReport r = reference::compute_group_verdicts(
        kind == GroupKind::threshold ? reference::GroupKind::threshold : reference::GroupKind::multisig, in,
        verdicts);
    GroupReport out;
    out.groups.reserve(r.groups.size());
    for (const reference::GroupVerdict& g : r.groups)
        out.groups.push_back({g.block_fk, g.group, g.pass, g.rows, g.valid_rows, g.required, g.flags});
    out.blocks.reserve(r.blocks.size());
    for (const reference::BlockVerdict& b : r.blocks)
        out.blocks.push_back({b.block_fk, b.all_groups_pass, b.groups, b.failed_groups});
    out.skipped_rows = r.skipped_rows;
    out.failed_groups = r.failed_groups;
    out.failed_blocks = r.failed_blocks;
    return out;
}

std::vector<GroupRow> group_rows_from_ecdsa_correlate(std::span<const std::uint8_t> correlate) {
    constexpr std::size_t width = reference::libbitcoin_correlate_size(wire::RecordKind::ecdsa);
    if (correlate.size() % width != 0)
        throw std::invalid_argument("group_rows_from_ecdsa_correlate: the column is not a whole number of entries");
    std::vector<GroupRow> out(correlate.size() / width);
    for (std::size_t i = 0; i < out.size(); ++i) {
        const reference::EcdsaCorrelate e = reference::read_ecdsa_correlate(correlate.data() + i * width);
        out[i] = from_reference(reference::GroupRow{e.pair, e.group, e.id});
    }
    return out;
}

std::vector<GroupRow> single_signature_group_rows(std::span<const std::uint32_t> block_fks) {
    const std::vector<reference::GroupRow> r = reference::single_signature_group_rows(block_fks);
    std::vector<GroupRow> out(r.size());
    for (std::size_t i = 0; i < r.size(); ++i) out[i] = from_reference(r[i]);
    return out;
}

}  // namespace sigverify
