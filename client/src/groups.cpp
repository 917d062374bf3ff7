// SPDX-License-Identifier: MIT
// The public group and block verdicts (sigverify/groups.hpp): the rules live
// in reference/group_verdicts.cpp, the one implementation, over the same row
// and group types (sigverify/shm_protocol/group_fields.hpp); this file only
// copies the report into its installed, smaller form.
#include "sigverify/groups.hpp"

#include <stdexcept>
#include <utility>

#include "reference/columns.hpp"
#include "reference/group_verdicts.hpp"

namespace sigverify {

GroupReport compute_group_verdicts(GroupKind kind, std::span<const GroupRow> rows,
                                   std::span<const std::uint8_t> verdicts) {
    reference::GroupReport r = reference::compute_group_verdicts(kind, rows, verdicts);
    GroupReport out;
    out.groups = std::move(r.groups);
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
        out[i] = GroupRow{e.pair, e.group, e.id};
    }
    return out;
}

std::vector<GroupRow> single_signature_group_rows(std::span<const std::uint32_t> block_fks) {
    return reference::single_signature_group_rows(block_fks);
}

}  // namespace sigverify
