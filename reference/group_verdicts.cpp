// SPDX-License-Identifier: MIT
#include "reference/group_verdicts.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

namespace sigverify::reference {

std::string_view to_string(GroupKind k) { return k == GroupKind::multisig ? "multisig" : "threshold"; }

std::vector<GroupRow> group_rows_from_rows(const RowSpan& rows, GroupKind kind) {
    if (!rows.valid()) throw std::invalid_argument("group_rows_from_rows: invalid row span");
    const wire::Table table = kind == GroupKind::multisig ? wire::Table::multisig : wire::Table::threshold;
    if (rows.kind != wire::record_kind(table))
        throw std::invalid_argument("group_rows_from_rows: " + std::string(to_string(kind)) + " rows hold " +
                                    std::string(wire::to_string(wire::record_kind(table))) + " records");
    if (rows.tail_size != wire::canonical_tail_size(table))
        throw std::invalid_argument("group_rows_from_rows: rows need the canonical 6-byte tail mn || group || block_fk");
    std::vector<GroupRow> out(rows.count);
    const std::size_t record = wire::record_size(rows.kind);
    for (std::size_t i = 0; i < rows.count; ++i) out[i] = sigverify::read_group_tail(rows.row(i) + record);
    return out;
}

std::vector<GroupRow> group_rows_from_correlate(const ColumnSpan& c) {
    if (const ColumnError e = c.check(); e != ColumnError::none)
        throw std::invalid_argument("group_rows_from_correlate: " + std::string(to_string(e)));
    if (c.kind != RecordKind::ecdsa || c.tail_size != kEcdsaCorrelateSize)
        throw std::invalid_argument(
            "group_rows_from_correlate: needs ECDSA columns with the 6-byte libbitcoin correlate id || pair || group");
    std::vector<GroupRow> out(c.count);
    for (std::size_t i = 0; i < c.count; ++i) {
        const EcdsaCorrelate e = read_ecdsa_correlate(c.correlate_at(i));
        out[i] = {e.pair, e.group, e.id};
    }
    return out;
}

std::vector<GroupRow> single_signature_group_rows(std::span<const std::uint32_t> block_fks) {
    std::vector<GroupRow> out(block_fks.size());
    std::unordered_map<std::uint32_t, std::uint32_t> taken;  // block_fk -> group numbers handed out
    for (std::size_t i = 0; i < block_fks.size(); ++i) {
        const std::uint32_t fk = block_fks[i] & 0xFFFFFFu;
        if (fk == wire::kBlockFkWriting) {  // belongs to no group; compute_group_verdicts skips it
            out[i] = {0, 0, fk};
            continue;
        }
        std::uint32_t& n = taken[fk];
        if (n > 0xFFFF)
            throw std::invalid_argument("single_signature_group_rows: block " + std::to_string(fk) +
                                        " holds more than 65536 single signatures");
        out[i] = {0, std::uint16_t(0xFFFF - n++), fk};
    }
    return out;
}

namespace {

GroupVerdict evaluate_multisig(std::span<const std::pair<std::uint64_t, std::size_t>> members,
                               std::span<const GroupRow> rows, std::span<const std::uint8_t> verdicts) {
    GroupVerdict g;
    MultisigTally tally;
    for (const auto& [key, i] : members) {
        const bool ok = verdicts[i] != 0;
        if (tally.add(rows[i].mn, ok)) g.flags |= kGroupDuplicates;
        ++g.rows;
        g.valid_rows += ok ? 1 : 0;
    }
    g.required = tally.required();
    g.pass = tally.satisfied();
    if (!g.pass) g.flags |= kGroupUnmatched;
    return g;
}

GroupVerdict evaluate_threshold(std::span<const std::pair<std::uint64_t, std::size_t>> members,
                                std::span<const GroupRow> rows, std::span<const std::uint8_t> verdicts) {
    GroupVerdict g;
    const std::uint8_t m = rows[members.front().second].mn;
    for (const auto& [key, i] : members) {
        if (rows[i].mn != m) g.flags |= kGroupInconsistentM;
        ++g.rows;
        g.valid_rows += verdicts[i] != 0 ? 1 : 0;
    }
    g.required = m;
    if (m == 0) g.flags |= kGroupZeroM;
    if (g.valid_rows != g.rows) g.flags |= kGroupFailedRow;  // BIP-342: a failed non-empty signature fails
    if (g.rows < m) g.flags |= kGroupShort;
    g.pass = g.flags == 0;
    return g;
}

}  // namespace

GroupReport compute_group_verdicts(GroupKind kind, std::span<const GroupRow> rows,
                                   std::span<const std::uint8_t> verdicts) {
    if (rows.size() != verdicts.size())
        throw std::invalid_argument("compute_group_verdicts: " + std::to_string(rows.size()) + " rows but " +
                                    std::to_string(verdicts.size()) + " verdicts");
    if (kind != GroupKind::multisig && kind != GroupKind::threshold)
        throw std::invalid_argument("compute_group_verdicts: unknown group kind");
    GroupReport report;
    // (block_fk << 16 | group, row index), sorted: groups become runs, rows
    // inside a group stay in input order.
    std::vector<std::pair<std::uint64_t, std::size_t>> order;
    order.reserve(rows.size());
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const std::uint32_t fk = rows[i].block_fk & 0xFFFFFFu;
        if (fk == wire::kBlockFkWriting) {
            ++report.skipped_rows;
            if (report.first_skipped.size() < kMaxSkippedListed) report.first_skipped.push_back(i);
            continue;
        }
        order.emplace_back((std::uint64_t(fk) << 16) | rows[i].group, i);
    }
    std::sort(order.begin(), order.end());

    for (std::size_t begin = 0; begin < order.size();) {
        std::size_t end = begin + 1;
        while (end < order.size() && order[end].first == order[begin].first) ++end;
        const std::span<const std::pair<std::uint64_t, std::size_t>> members(order.data() + begin, end - begin);
        GroupVerdict g = kind == GroupKind::multisig ? evaluate_multisig(members, rows, verdicts)
                                                     : evaluate_threshold(members, rows, verdicts);
        g.block_fk = std::uint32_t(order[begin].first >> 16);
        g.group = std::uint16_t(order[begin].first & 0xFFFF);
        if (g.flags & (kGroupInconsistentM | kGroupZeroM)) ++report.inconsistent_groups;
        if (!g.pass) ++report.failed_groups;

        if (report.blocks.empty() || report.blocks.back().block_fk != g.block_fk)
            report.blocks.push_back({g.block_fk, true, 0, 0});
        BlockVerdict& b = report.blocks.back();
        ++b.groups;
        if (!g.pass) {
            ++b.failed_groups;
            b.all_groups_pass = false;
        }
        report.groups.push_back(g);
        begin = end;
    }
    for (const auto& b : report.blocks) report.failed_blocks += b.all_groups_pass ? 0 : 1;
    return report;
}

std::vector<GroupVerdict> unsatisfiable_threshold_groups(std::span<const GroupRow> rows) {
    const std::vector<std::uint8_t> all_verified(rows.size(), 1);
    GroupReport r = compute_group_verdicts(GroupKind::threshold, rows, all_verified);
    std::erase_if(r.groups, [](const GroupVerdict& g) { return g.pass; });
    return std::move(r.groups);
}

}  // namespace sigverify::reference
