// SPDX-License-Identifier: MIT
#include "daemon/confirm/confirmation.hpp"

#include <algorithm>
#include <utility>

#include "reference/group_verdicts.hpp"
#include "sigverify/shm_protocol/group_fields.hpp"

namespace sigverify::daemon {

std::string_view to_string(ConfirmRule rule) { return rule == ConfirmRule::groups ? "groups" : "strict"; }

namespace {

GroupKey make_key(std::uint32_t block_fk, std::uint16_t group) {
    return block_fk == wire::kBlockFkWriting ? kNoGroup : (GroupKey(block_fk) << 16) | group;
}

// The mn, group and block_fk of canonical multisig row i (tail mn || group || block_fk).
void read_tail(const wire::RowSpan& rows, std::size_t i, GroupKey& key, std::uint8_t& mn) {
    const GroupRow g = sigverify::read_group_tail(rows.row(i) + wire::record_size(rows.kind));
    mn = g.mn;
    key = make_key(g.block_fk, g.group);
}

void read_correlate(const wire::ColumnSpan& columns, std::size_t i, GroupKey& key, std::uint8_t& mn) {
    const reference::EcdsaCorrelate c = reference::read_ecdsa_correlate(columns.correlate_at(i));
    mn = c.pair;
    key = make_key(c.id, c.group);
}

}  // namespace

template <typename Read>
static bool stage_groups(ChunkGroups& g, std::size_t n, Read&& read) noexcept {
    try {
        if (g.key.size() < n) {
            g.key.resize(n);
            g.mn.resize(n);
            g.spanning.resize(n);
        }
    } catch (...) {
        return false;
    }
    for (std::size_t i = 0; i < n; ++i) {
        read(i, g.key[i], g.mn[i]);
        g.spanning[i] = 0;
    }
    g.count = n;
    return true;
}

bool ChunkGroups::stage_rows(const wire::RowSpan& rows, std::size_t begin, std::size_t end) noexcept {
    return stage_groups(*this, end - begin, [&](std::size_t i, GroupKey& k, std::uint8_t& m) {
        read_tail(rows, begin + i, k, m);
    });
}

bool ChunkGroups::stage_columns(const wire::ColumnSpan& columns, std::size_t begin, std::size_t end) noexcept {
    return stage_groups(*this, end - begin, [&](std::size_t i, GroupKey& k, std::uint8_t& m) {
        read_correlate(columns, begin + i, k, m);
    });
}

bool groups_rule_applies(std::uint8_t table, bool is_columns, const wire::RowSpan& rows,
                         const wire::ColumnSpan& columns) {
    if (table != static_cast<std::uint8_t>(wire::Table::multisig)) return false;
    if (is_columns)
        return columns.kind == wire::RecordKind::ecdsa && columns.tail_size == reference::kEcdsaCorrelateSize &&
               columns.correlate != nullptr;
    return rows.kind == wire::RecordKind::ecdsa && rows.tail_size == wire::canonical_tail_size(wire::Table::multisig);
}

GroupKey read_group_key(bool is_columns, const wire::RowSpan& rows, const wire::ColumnSpan& columns,
                        std::size_t i) {
    GroupKey key = kNoGroup;
    std::uint8_t mn = 0;
    if (is_columns) read_correlate(columns, i, key, mn);
    else read_tail(rows, i, key, mn);
    return key;
}

std::size_t mark_rows_to_confirm(const ChunkGroups& g, const std::uint8_t* verdicts, std::uint8_t* need,
                                 std::vector<std::pair<GroupKey, std::uint32_t>>& order) {
    const std::size_t n = g.count;
    order.clear();
    std::size_t marked = 0;
    for (std::size_t i = 0; i < n; ++i) {
        need[i] = 0;
        if (g.key[i] == kNoGroup || g.spanning[i] != 0) {
            // No group, or judged whole only across chunks: every INVALID counts.
            if (verdicts[i] != 1) {
                need[i] = 1;
                ++marked;
            }
        } else {
            order.emplace_back(g.key[i], static_cast<std::uint32_t>(i));
        }
    }
    // Nodes write a group's rows together, usually in key order: sort only when needed.
    if (!std::is_sorted(order.begin(), order.end())) std::sort(order.begin(), order.end());
    for (std::size_t a = 0; a < order.size();) {
        std::size_t b = a;
        // The group rule (reference/multisig_tally.hpp), on this group's rows.
        reference::MultisigTally tally;
        for (; b < order.size() && order[b].first == order[a].first; ++b) {
            const std::uint32_t i = order[b].second;
            tally.add(g.mn[i], verdicts[i] == 1);
        }
        if (tally.any_failed() && !tally.satisfied()) {
            for (std::size_t c = a; c < b; ++c) {
                const std::uint32_t i = order[c].second;
                if (verdicts[i] != 1) {
                    need[i] = 1;
                    ++marked;
                }
            }
        }
        a = b;
    }
    return marked;
}

void GroupLedger::register_chunk(std::size_t begin, std::size_t end, ChunkGroups& g) {
    std::lock_guard lock(mutex_);
    GroupKey previous = kNoGroup;
    bool previous_spanning = false;
    for (std::size_t i = 0; i < g.count; ++i) {
        const GroupKey key = g.key[i];
        if (key == kNoGroup) continue;
        if (key != previous) {  // one lookup per run of equal keys
            auto [it, inserted] = seen_.try_emplace(key, Seen{Range{begin, end}, false});
            Seen& s = it->second;
            if (!inserted && s.first.begin != begin && !s.spanning) {
                // A second chunk meets the group: the first one's verdicts of it get re-verified.
                s.spanning = true;
                if (repair_ranges_.empty() || repair_ranges_.back().begin != s.first.begin)
                    repair_ranges_.push_back(s.first);
            }
            previous = key;
            previous_spanning = s.spanning;
        }
        g.spanning[i] = previous_spanning ? 1 : 0;
    }
}

GroupLedger::Repairs GroupLedger::take_repairs() {
    std::lock_guard lock(mutex_);
    Repairs r;
    r.ranges_ = std::exchange(repair_ranges_, {});
    std::sort(r.ranges_.begin(), r.ranges_.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
    r.ranges_.erase(std::unique(r.ranges_.begin(), r.ranges_.end(),
                                [](const Range& a, const Range& b) { return a.begin == b.begin; }),
                    r.ranges_.end());
    r.seen_ = std::exchange(seen_, {});
    return r;
}

}  // namespace sigverify::daemon
