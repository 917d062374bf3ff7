// SPDX-License-Identifier: MIT
// The group rules (m-of-n) read literally, no cleverness: a brute-force
// statement of multisig (CHECKMULTISIG's increasing key order) and threshold
// (BIP-342) groups, and of block verdicts, that test_group_verdicts.cpp and
// test_group_generated.cpp hold reference::compute_group_verdicts to.
#pragma once

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

#include "reference/group_verdicts.hpp"

namespace sigverify::test {

using reference::GroupKind;
using reference::GroupReport;
using reference::GroupRow;
using reference::GroupVerdict;

constexpr auto MS = GroupKind::multisig;
constexpr auto TH = GroupKind::threshold;

struct RefGroup {
    bool pass = false;
    std::uint32_t rows = 0, valid = 0;
};

// The pair byte as docs/columns.md states it, built from its table rather
// than from reference/multisig_pair.hpp: nibbles up to 16 keys, and for keys
// 16..19 the codes (12 + k - 16) << 4 | s (s < 12) and (4 + s - 12) << 4 |
// (k - 16) (s >= 12); every other byte reads as its nibbles.
struct DocPair {
    unsigned s, k;
};
inline const std::map<std::uint8_t, DocPair>& doc_extended_codes() {
    static const std::map<std::uint8_t, DocPair> codes = [] {
        std::map<std::uint8_t, DocPair> c;
        for (unsigned k = 16; k < 20; ++k)
            for (unsigned s = 0; s <= k; ++s)
                c[std::uint8_t(s < 12 ? (12 + k - 16) << 4 | s : (4 + s - 12) << 4 | (k - 16))] = {s, k};
        return c;
    }();
    return codes;
}
inline DocPair doc_decode(std::uint8_t mn) {
    const auto it = doc_extended_codes().find(mn);
    return it != doc_extended_codes().end() ? it->second : DocPair{unsigned(mn >> 4), unsigned(mn & 15)};
}
inline std::uint8_t doc_encode(unsigned s, unsigned k) {
    if (k < 16) return std::uint8_t(s << 4 | k);
    for (const auto& [code, p] : doc_extended_codes())
        if (p.s == s && p.k == k) return code;
    throw std::logic_error("no code");
}

// Multisig: try every strictly increasing choice of m keys (depth first, in
// ascending order) and accept when each signature i has a row (i, k_i) and
// every row with that (i, k_i) verified.
inline bool brute_multisig(const std::vector<std::pair<std::uint8_t, bool>>& rows) {
    unsigned m = 0, n = 0;
    for (auto [mn, ok] : rows) {
        m = std::max(m, doc_decode(mn).s + 1);
        n = std::max(n, doc_decode(mn).k + 1);
    }
    const auto usable = [&](unsigned s, unsigned k) {
        bool seen = false;
        for (auto [mn, ok] : rows)
            if (doc_decode(mn).s == s && doc_decode(mn).k == k) {
                if (!ok) return false;
                seen = true;
            }
        return seen;
    };
    // choose(i, from): signatures i.. can take increasing keys from `from` on.
    const auto choose = [&](auto&& self, unsigned i, unsigned from) -> bool {
        if (i == m) return true;
        for (unsigned k = from; k < n; ++k)
            if (usable(i, k) && self(self, i + 1, k + 1)) return true;
        return false;
    };
    return choose(choose, 0, 0);
}

// BIP-342: every row is a non-empty signature, and one that fails fails the
// script; at least m of them must be present.
inline bool brute_threshold(const std::vector<std::pair<std::uint8_t, bool>>& rows) {
    const std::uint8_t m = rows.front().first;
    for (auto [mn, ok] : rows)
        if (mn != m || !ok) return false;
    return m >= 1 && rows.size() >= m;
}

struct RefReport {
    std::map<std::pair<std::uint32_t, std::uint16_t>, RefGroup> groups;
    std::map<std::uint32_t, bool> blocks;
    std::size_t skipped = 0;
};

inline RefReport brute_report(GroupKind kind, const std::vector<GroupRow>& rows, const std::vector<std::uint8_t>& verdicts) {
    std::map<std::pair<std::uint32_t, std::uint16_t>, std::vector<std::pair<std::uint8_t, bool>>> members;
    RefReport r;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].block_fk == 0xFFFFFF) {
            ++r.skipped;
            continue;
        }
        members[{rows[i].block_fk, rows[i].group}].push_back({rows[i].mn, verdicts[i] != 0});
    }
    for (const auto& [key, list] : members) {
        RefGroup g;
        g.pass = kind == GroupKind::multisig ? brute_multisig(list) : brute_threshold(list);
        g.rows = std::uint32_t(list.size());
        for (auto [mn, ok] : list) g.valid += ok;
        r.groups[key] = g;
        auto [it, fresh] = r.blocks.emplace(key.first, true);
        it->second = it->second && g.pass;
    }
    return r;
}

inline void require_matches_brute_force(GroupKind kind, const std::vector<GroupRow>& rows,
                                 const std::vector<std::uint8_t>& verdicts, const GroupReport& got) {
    const RefReport want = brute_report(kind, rows, verdicts);
    REQUIRE(got.groups.size() == want.groups.size());
    REQUIRE(got.blocks.size() == want.blocks.size());
    CHECK(got.skipped_rows == want.skipped);
    std::size_t mismatches = 0, i = 0;
    for (const auto& [key, g] : want.groups) {
        const GroupVerdict& v = got.groups[i++];
        if (v.block_fk != key.first || v.group != key.second || v.pass != g.pass || v.rows != g.rows ||
            v.valid_rows != g.valid)
            ++mismatches;
    }
    CHECK(mismatches == 0);
    i = 0;
    std::size_t block_mismatches = 0;
    for (const auto& [fk, pass] : want.blocks) {
        const auto& b = got.blocks[i++];
        if (b.block_fk != fk || b.all_groups_pass != pass) ++block_mismatches;
    }
    CHECK(block_mismatches == 0);
}

}  // namespace sigverify::test
