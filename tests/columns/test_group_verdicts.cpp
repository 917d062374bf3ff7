// SPDX-License-Identifier: MIT
// Group verdicts (m-of-n) of multisig and threshold tables: hand-built groups
// for every edge, generated tables (expanded the way libbitcoin expands them)
// against a brute-force statement of the rules, and row mutations that flip
// group outcomes.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "reference/columns.hpp"
#include "reference/group_verdicts.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"

using namespace sigverify;
using reference::GroupKind;
using reference::GroupReport;
using reference::GroupRow;
using reference::GroupVerdict;
using wire::RowSpan;
using wire::SigEncoding;
using wire::Table;

namespace {

// ---------------------------------------------------------------------------
// Brute force: the rules read literally, no cleverness.
// ---------------------------------------------------------------------------
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
const std::map<std::uint8_t, DocPair>& doc_extended_codes() {
    static const std::map<std::uint8_t, DocPair> codes = [] {
        std::map<std::uint8_t, DocPair> c;
        for (unsigned k = 16; k < 20; ++k)
            for (unsigned s = 0; s <= k; ++s)
                c[std::uint8_t(s < 12 ? (12 + k - 16) << 4 | s : (4 + s - 12) << 4 | (k - 16))] = {s, k};
        return c;
    }();
    return codes;
}
DocPair doc_decode(std::uint8_t mn) {
    const auto it = doc_extended_codes().find(mn);
    return it != doc_extended_codes().end() ? it->second : DocPair{unsigned(mn >> 4), unsigned(mn & 15)};
}
std::uint8_t doc_encode(unsigned s, unsigned k) {
    if (k < 16) return std::uint8_t(s << 4 | k);
    for (const auto& [code, p] : doc_extended_codes())
        if (p.s == s && p.k == k) return code;
    throw std::logic_error("no code");
}

// Multisig: try every strictly increasing choice of m keys (depth first, in
// ascending order) and accept when each signature i has a row (i, k_i) and
// every row with that (i, k_i) verified.
bool brute_multisig(const std::vector<std::pair<std::uint8_t, bool>>& rows) {
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
bool brute_threshold(const std::vector<std::pair<std::uint8_t, bool>>& rows) {
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

RefReport brute_report(GroupKind kind, const std::vector<GroupRow>& rows, const std::vector<std::uint8_t>& verdicts) {
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

void require_matches_brute_force(GroupKind kind, const std::vector<GroupRow>& rows,
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

// ---------------------------------------------------------------------------
// Hand-built groups
// ---------------------------------------------------------------------------
struct Hand {
    std::vector<GroupRow> rows;
    std::vector<std::uint8_t> verdicts;

    // Multisig row: signature s, key k (k < s, an attempt CHECKMULTISIG
    // cannot use, is written as its nibbles).
    Hand& ms(unsigned s, unsigned k, bool ok, std::uint16_t group = 1, std::uint32_t block = 500) {
        rows.push_back({k < s ? std::uint8_t((s << 4) | k) : doc_encode(s, k), group, block});
        verdicts.push_back(ok ? 1 : 0);
        return *this;
    }
    // Threshold row with required count m.
    Hand& th(unsigned m, bool ok, std::uint16_t group = 1, std::uint32_t block = 500) {
        rows.push_back({std::uint8_t(m), group, block});
        verdicts.push_back(ok ? 1 : 0);
        return *this;
    }
    GroupReport run(GroupKind kind) const {
        GroupReport r = reference::compute_group_verdicts(kind, rows, verdicts);
        require_matches_brute_force(kind, rows, verdicts, r);
        return r;
    }
    bool pass(GroupKind kind) const {
        const GroupReport r = run(kind);
        REQUIRE(r.groups.size() == 1);
        return r.groups[0].pass;
    }
};

constexpr auto MS = GroupKind::multisig;
constexpr auto TH = GroupKind::threshold;

}  // namespace

TEST_CASE("multisig m = n: every signature needs its own key", "[groups]") {
    // 3-of-3 expanded as libbitcoin does: signature i against key i only.
    CHECK(Hand{}.ms(0, 0, true).ms(1, 1, true).ms(2, 2, true).pass(MS));
    CHECK_FALSE(Hand{}.ms(0, 0, true).ms(1, 1, false).ms(2, 2, true).pass(MS));
    const auto r = Hand{}.ms(0, 0, true).ms(1, 1, true).ms(2, 2, false).run(MS);
    CHECK(r.groups[0].required == 3);
    CHECK(r.groups[0].rows == 3);
    CHECK(r.groups[0].valid_rows == 2);
    CHECK((r.groups[0].flags & reference::kGroupUnmatched) != 0);
}

TEST_CASE("multisig m = 1: any one key suffices", "[groups]") {
    CHECK(Hand{}.ms(0, 0, false).ms(0, 1, false).ms(0, 2, true).pass(MS));
    CHECK(Hand{}.ms(0, 0, true).ms(0, 1, false).ms(0, 2, false).pass(MS));
    CHECK_FALSE(Hand{}.ms(0, 0, false).ms(0, 1, false).ms(0, 2, false).pass(MS));
    CHECK(Hand{}.ms(0, 0, true).run(MS).groups[0].required == 1);
}

TEST_CASE("multisig n = 16: key and signature nibbles up to 15", "[groups]") {
    Hand all;
    for (unsigned i = 0; i < 16; ++i) all.ms(i, i, true);
    CHECK(all.pass(MS));
    CHECK(all.run(MS).groups[0].required == 16);
    Hand last_bad = all;
    last_bad.verdicts[15] = 0;
    CHECK_FALSE(last_bad.pass(MS));
    // 1-of-16 matched by the last key only.
    Hand one;
    for (unsigned k = 0; k < 16; ++k) one.ms(0, k, k == 15);
    CHECK(one.pass(MS));
    // 2-of-16 where signature 0 only matches key 15: nothing is left for signature 1.
    Hand two = one;
    for (unsigned k = 1; k < 16; ++k) two.ms(1, k, true);
    CHECK_FALSE(two.pass(MS));
    // ... and with signature 0 matching key 14 instead, key 15 serves signature 1.
    Hand three;
    for (unsigned k = 0; k < 16; ++k) three.ms(0, k, k == 14);
    for (unsigned k = 1; k < 16; ++k) three.ms(1, k, k == 15);
    CHECK(three.pass(MS));
}

TEST_CASE("multisig pair byte: libbitcoin's nibbles unchanged, keys 16..19 in codes nibbles never name", "[groups]") {
    using reference::decode_multisig_pair;
    using reference::encode_multisig_pair;
    std::set<std::uint8_t> codes;
    for (unsigned k = 0; k < 20; ++k)
        for (unsigned s = 0; s < 20; ++s) {
            const auto code = encode_multisig_pair(s, k);
            if (s > k) {  // an attempt CHECKMULTISIG can never use has no code
                CHECK_FALSE(code.has_value());
                continue;
            }
            REQUIRE(code.has_value());
            CHECK(*code == doc_encode(s, k));
            if (k < 16) CHECK(*code == std::uint8_t(s << 4 | k));  // what libbitcoin writes
            else CHECK((*code >> 4) > (*code & 15));  // a code libbitcoin's band never writes
            CHECK(decode_multisig_pair(*code) == reference::MultisigPair{std::uint8_t(s), std::uint8_t(k)});
            codes.insert(*code);
        }
    CHECK(codes.size() == 210);  // every usable pair of 20 keys, each its own byte
    CHECK_FALSE(encode_multisig_pair(0, 20).has_value());
    for (unsigned b = 0; b < 256; ++b) {
        const auto p = decode_multisig_pair(std::uint8_t(b));
        CHECK(p.signature == doc_decode(std::uint8_t(b)).s);
        CHECK(p.key == doc_decode(std::uint8_t(b)).k);
    }
}

TEST_CASE("multisig n = 17..20: keys and signatures beyond the nibbles", "[groups]") {
    std::mt19937_64 rng(1720);
    std::size_t groups = 0;
    for (unsigned n = 17; n <= 20; ++n)
        for (unsigned m : {1u, 2u, n / 2, n - 3, n - 1, n}) {
            // Honest signers: an increasing choice of m of the n keys; the
            // band as libbitcoin expands it (signature i vs keys i..i+n-m).
            std::vector<unsigned> keys(n);
            for (unsigned k = 0; k < n; ++k) keys[k] = k;
            std::shuffle(keys.begin(), keys.end(), rng);
            std::vector<unsigned> signer(keys.begin(), keys.begin() + m);
            std::sort(signer.begin(), signer.end());
            Hand h;
            std::vector<std::size_t> signer_row(m);
            for (unsigned i = 0; i < m; ++i)
                for (unsigned k = i; k <= i + (n - m); ++k) {
                    if (k == signer[i]) signer_row[i] = h.rows.size();
                    h.ms(i, k, k == signer[i]);
                }
            INFO(m << "-of-" << n);
            const auto r = h.run(MS);
            REQUIRE(r.groups.size() == 1);
            CHECK(r.groups[0].pass);
            CHECK(r.groups[0].required == m);
            CHECK(r.groups[0].flags == 0);
            // Any one signer's row failing fails the group (exactly m verified rows).
            for (unsigned i = 0; i < m; ++i) {
                Hand bad = h;
                bad.verdicts[signer_row[i]] = 0;
                CHECK_FALSE(bad.pass(MS));
            }
            ++groups;
        }
    CHECK(groups == 24);
    // 20-of-20: signature i against key i only, signatures 16..19 included.
    Hand all;
    for (unsigned i = 0; i < 20; ++i) all.ms(i, i, true);
    CHECK(all.pass(MS));
    CHECK(all.run(MS).groups[0].required == 20);
    Hand last_bad = all;
    last_bad.verdicts[19] = 0;
    CHECK_FALSE(last_bad.pass(MS));
    // 1-of-20 matched by the last key only; 2-of-20 whose signature 0 only
    // matches key 19 leaves nothing for signature 1; key 18 for signature 0
    // leaves key 19 for signature 1.
    Hand one;
    for (unsigned k = 0; k < 20; ++k) one.ms(0, k, k == 19);
    CHECK(one.pass(MS));
    Hand two = one;
    for (unsigned k = 1; k < 20; ++k) two.ms(1, k, true);
    CHECK_FALSE(two.pass(MS));
    Hand three;
    for (unsigned k = 0; k < 19; ++k) three.ms(0, k, k == 18);
    for (unsigned k = 1; k < 20; ++k) three.ms(1, k, k == 19);
    CHECK(three.pass(MS));
    // Signature 17 against key 16 (before its own index) is an attempt
    // CHECKMULTISIG can never use: it has no code.
    CHECK_FALSE(reference::encode_multisig_pair(17, 16).has_value());
}

TEST_CASE("multisig keys must be matched in increasing order", "[groups]") {
    // 2-of-3: signature 0 verifies only with key 2, signature 1 only with key 1.
    // Unordered matching would accept; CHECKMULTISIG does not.
    CHECK_FALSE(Hand{}.ms(0, 0, false).ms(0, 1, false).ms(0, 2, true).ms(1, 1, true).ms(1, 2, false).pass(MS));
    // The same signatures with the keys the other way round pass.
    CHECK(Hand{}.ms(0, 0, false).ms(0, 1, true).ms(0, 2, false).ms(1, 1, false).ms(1, 2, true).pass(MS));
    // Greedy must take the smallest key: signature 0 matches keys 0 and 1,
    // signature 1 only key 1.
    CHECK(Hand{}.ms(0, 0, true).ms(0, 1, true).ms(1, 1, true).pass(MS));
    // Rows may arrive in any order.
    CHECK(Hand{}.ms(1, 2, true).ms(0, 2, false).ms(0, 1, true).ms(1, 1, false).pass(MS));
    // Signature 1 cannot reuse signature 0's key, nor go below it.
    CHECK_FALSE(Hand{}.ms(0, 0, true).ms(1, 0, true).pass(MS));
}

TEST_CASE("multisig duplicate signatures and duplicate rows", "[groups]") {
    // The same signature given as signature 0 and 1 verifies under key 0 both
    // times: two signatures cannot share a key.
    CHECK_FALSE(Hand{}.ms(0, 0, true).ms(0, 1, false).ms(1, 0, true).ms(1, 1, false).pass(MS));
    // A duplicated (s, k) row that failed poisons the pair (fail closed) ...
    auto r = Hand{}.ms(0, 0, true).ms(0, 0, false).run(MS);
    CHECK_FALSE(r.groups[0].pass);
    CHECK((r.groups[0].flags & reference::kGroupDuplicates) != 0);
    // ... while identical verified duplicates are harmless but flagged.
    r = Hand{}.ms(0, 0, true).ms(0, 0, true).run(MS);
    CHECK(r.groups[0].pass);
    CHECK((r.groups[0].flags & reference::kGroupDuplicates) != 0);
    // Another key can still rescue the signature of a poisoned pair.
    CHECK(Hand{}.ms(0, 0, true).ms(0, 0, false).ms(0, 1, true).pass(MS));
}

TEST_CASE("multisig missing rows", "[groups]") {
    // 2-of-3 as libbitcoin expands it: signature 0 vs keys 0..1, signature 1 vs
    // keys 1..2; key 1 signed signature 0 and key 2 signature 1.
    const Hand full = Hand{}.ms(0, 0, false).ms(0, 1, true).ms(1, 1, false).ms(1, 2, true);
    CHECK(full.pass(MS));
    // The matching row of signature 1 is missing: signature 1 is unmatched.
    CHECK_FALSE(Hand{}.ms(0, 0, false).ms(0, 1, true).ms(1, 1, false).pass(MS));
    // A non-matching row is missing: nothing changes.
    CHECK(Hand{}.ms(0, 1, true).ms(1, 1, false).ms(1, 2, true).pass(MS));
    // Every row of signature 0 is missing: m is still 2, signature 0 unmatched.
    const auto r = Hand{}.ms(1, 1, false).ms(1, 2, true).run(MS);
    CHECK_FALSE(r.groups[0].pass);
    CHECK(r.groups[0].required == 2);
}

TEST_CASE("rows of a block still being written are skipped and reported", "[groups]") {
    Hand h;
    h.ms(0, 0, true, 1, 500).ms(1, 1, true, 1, 0xFFFFFF).ms(1, 2, false, 1, 500);  // signature 1's match is not written yet
    h.ms(0, 0, true, 2, 0xFFFFFF).ms(0, 1, true, 2, 0xFFFFFF);                     // a whole group being written
    const auto r = h.run(MS);
    CHECK(r.skipped_rows == 3);
    CHECK(r.first_skipped == std::vector<std::size_t>{1, 3, 4});
    REQUIRE(r.groups.size() == 1);  // group 2 of block 500 does not exist yet
    CHECK(r.groups[0].group == 1);
    CHECK(r.groups[0].rows == 2);
    CHECK_FALSE(r.groups[0].pass);
    REQUIRE(r.blocks.size() == 1);
    CHECK(r.blocks[0].block_fk == 500);
    // Only the first kMaxSkippedListed indices are listed, all are counted.
    Hand many;
    for (unsigned i = 0; i < 40; ++i) many.th(1, true, 1, 0xFFFFFF);
    many.th(1, true, 1, 7);
    const auto m = many.run(TH);
    CHECK(m.skipped_rows == 40);
    CHECK(m.first_skipped.size() == reference::kMaxSkippedListed);
    CHECK(m.first_skipped.back() == reference::kMaxSkippedListed - 1);
    REQUIRE(m.blocks.size() == 1);
    CHECK(m.blocks[0].all_groups_pass);
}

TEST_CASE("threshold groups: m = n, m = 1, counts, inconsistent m", "[groups]") {
    CHECK(Hand{}.th(3, true).th(3, true).th(3, true).pass(TH));                 // m = n
    CHECK_FALSE(Hand{}.th(3, true).th(3, false).th(3, true).pass(TH));
    CHECK(Hand{}.th(1, true).th(1, true).th(1, true).pass(TH));                 // m = 1, more rows than m
    CHECK_FALSE(Hand{}.th(1, false).th(1, false).pass(TH));
    CHECK(Hand{}.th(2, true).th(2, true).pass(TH));                             // exactly m rows
    // BIP-342: a failed non-empty signature fails the script, even when m
    // other rows verified (the old "at least m verified" rule passed these).
    auto r = Hand{}.th(1, false).th(1, false).th(1, true).run(TH);
    CHECK_FALSE(r.groups[0].pass);
    CHECK(r.groups[0].flags == reference::kGroupFailedRow);
    CHECK(r.groups[0].valid_rows == 1);
    CHECK_FALSE(Hand{}.th(2, true).th(2, false).th(2, true).th(2, false).pass(TH));
    CHECK_FALSE(Hand{}.th(2, true).th(2, true).th(2, true).th(2, false).pass(TH));  // failed row last
    CHECK_FALSE(Hand{}.th(2, false).th(2, true).th(2, true).th(2, true).pass(TH));  // failed row first
    r = Hand{}.th(1, true, 1, 500).th(1, false, 2, 500).th(1, true, 3, 500).run(TH);
    CHECK(r.blocks.size() == 1);
    CHECK_FALSE(r.blocks[0].all_groups_pass);  // one failed row fails its block
    CHECK(r.blocks[0].failed_groups == 1);
    // A missing row leaves fewer than m.
    r = Hand{}.th(3, true).th(3, true).run(TH);
    CHECK_FALSE(r.groups[0].pass);
    CHECK(r.groups[0].flags == reference::kGroupShort);
    // Both: too few rows and one of them failed.
    r = Hand{}.th(3, true).th(3, false).run(TH);
    CHECK(r.groups[0].flags == (reference::kGroupShort | reference::kGroupFailedRow));
    // Duplicate rows count as given.
    CHECK(Hand{}.th(2, true).th(2, true).pass(TH));
    // Inconsistent m fails however many rows verified, and is reported.
    r = Hand{}.th(2, true).th(2, true).th(3, true).run(TH);
    CHECK_FALSE(r.groups[0].pass);
    CHECK((r.groups[0].flags & reference::kGroupInconsistentM) != 0);
    CHECK(r.inconsistent_groups == 1);
    CHECK(r.groups[0].required == 2);  // the first row's m
    // m = 0 is malformed.
    r = Hand{}.th(0, true).run(TH);
    CHECK_FALSE(r.groups[0].pass);
    CHECK((r.groups[0].flags & reference::kGroupZeroM) != 0);
    CHECK(r.inconsistent_groups == 1);
}

TEST_CASE("block verdicts: a block passes when every group in it passes", "[groups]") {
    Hand h;
    // Interleaved input: block 9 (two good groups), block 8 (one good, one bad), block 10 (good).
    h.th(1, true, 1, 9).th(2, true, 3, 8).th(1, true, 2, 9).th(1, true, 1, 10).th(2, false, 3, 8).th(1, true, 4, 8);
    const auto r = h.run(TH);
    REQUIRE(r.blocks.size() == 3);
    CHECK(r.blocks[0] == reference::BlockVerdict{8, false, 2, 1});
    CHECK(r.blocks[1] == reference::BlockVerdict{9, true, 2, 0});
    CHECK(r.blocks[2] == reference::BlockVerdict{10, true, 1, 0});
    CHECK(r.failed_groups == 1);
    CHECK(r.failed_blocks == 1);
    REQUIRE(r.groups.size() == 5);
    CHECK(r.groups[0].block_fk == 8);
    CHECK(r.groups[0].group == 3);
    CHECK(r.groups[1].group == 4);
    // The same group number in different blocks is a different group.
    CHECK(Hand{}.th(1, true, 5, 1).th(1, false, 5, 2).run(TH).groups.size() == 2);
}

TEST_CASE("group verdict inputs are checked", "[groups]") {
    std::vector<GroupRow> rows(3);
    std::vector<std::uint8_t> verdicts(2);
    CHECK_THROWS_AS(reference::compute_group_verdicts(MS, rows, verdicts), std::invalid_argument);
    const auto empty = reference::compute_group_verdicts(MS, {}, {});
    CHECK(empty.groups.empty());
    CHECK(empty.blocks.empty());
    // Row spans must carry the canonical tail of the right record kind.
    std::vector<std::uint8_t> bytes(135 * 2);
    CHECK_THROWS_AS(reference::group_rows_from_rows(RowSpan{wire::RecordKind::ecdsa, 3, SigEncoding::opaque,
                                                            bytes.data(), 2},
                                                    MS),
                    std::invalid_argument);
    CHECK_THROWS_AS(reference::group_rows_from_rows(RowSpan{wire::RecordKind::ecdsa, 6, SigEncoding::opaque,
                                                            bytes.data(), 2},
                                                    TH),
                    std::invalid_argument);
    CHECK(reference::group_rows_from_rows(RowSpan{wire::RecordKind::ecdsa, 6, SigEncoding::opaque, bytes.data(), 2},
                                          MS)
              .size() == 2);
}

TEST_CASE("multisig_satisfied agrees with brute force on every small usable pattern", "[groups]") {
    // All usable patterns of 3 signatures x 4 keys (2^12), m = 1..3.
    for (std::uint32_t pattern = 0; pattern < (1u << 12); ++pattern) {
        for (unsigned m = 1; m <= 3; ++m) {
            std::uint32_t usable[reference::kMaxMultisigKeys] = {};
            std::vector<std::pair<std::uint8_t, bool>> rows;
            for (unsigned s = 0; s < m; ++s)
                for (unsigned k = 0; k < 4; ++k) {
                    const bool ok = (pattern >> (s * 4 + k)) & 1;
                    if (ok) usable[s] |= 1u << k;
                    rows.push_back({std::uint8_t((s << 4) | k), ok});
                }
            REQUIRE(reference::multisig_satisfied(usable, m) == brute_multisig(rows));
        }
    }
}

// ---------------------------------------------------------------------------
// Generated tables with real signatures
// ---------------------------------------------------------------------------
namespace {

struct Table_ {
    std::vector<std::uint8_t> bytes;
    RowSpan span;
};

Table_ generated(Table t, std::size_t count, double invalid_rate, std::uint64_t seed) {
    reference::GenOptions o;
    o.table = t;
    o.count = count;
    o.invalid_rate = invalid_rate;
    o.high_s_rate = 0.2;
    o.seed = seed;
    Table_ g;
    g.bytes = reference::generate_rows(o);
    g.span = RowSpan{wire::record_kind(t), 6, SigEncoding::opaque, g.bytes.data(), count};
    return g;
}

std::vector<std::uint8_t> verify_all(const RowSpan& span) {
    std::vector<std::uint8_t> v(span.count);
    reference::Verifier(2).verify(span, v.data());
    return v;
}

}  // namespace

TEST_CASE("generated multisig and threshold tables agree with brute force", "[groups][generated]") {
    for (Table t : {Table::multisig, Table::threshold}) {
        const GroupKind kind = t == Table::multisig ? MS : TH;
        DYNAMIC_SECTION(wire::to_string(t)) {
            // Rare enough that some blocks (50 groups each) come through clean.
            Table_ g = generated(t, 8'000, t == Table::multisig ? 0.004 : 0.01, 41 + unsigned(t));
            // A few rows of the last blocks are still being written.
            for (std::size_t i = g.span.count - 60; i < g.span.count; i += 7)
                wire::write_u24le(g.span.row(i) + wire::record_size(g.span.kind) + 3, wire::kBlockFkWriting);
            const auto verdicts = verify_all(g.span);
            const auto rows = reference::group_rows_from_rows(g.span, kind);
            const auto report = reference::compute_group_verdicts(kind, rows, verdicts);
            require_matches_brute_force(kind, rows, verdicts, report);
            CHECK(report.skipped_rows == 9);
            // Both outcomes occur, on groups and on blocks.
            CHECK(report.failed_groups > 10);
            CHECK(report.failed_groups < report.groups.size() / 2);
            CHECK(report.failed_blocks > 0);
            CHECK(report.failed_blocks < report.blocks.size());
            CHECK(report.inconsistent_groups == 0);
            INFO("groups " << report.groups.size() << " failed " << report.failed_groups << " blocks "
                           << report.blocks.size() << " failed " << report.failed_blocks);
            CHECK(report.groups.size() > 1000);

            if (t == Table::multisig) {
                // The libbitcoin ECDSA correlate carries the same grouping.
                reference::ColumnTable cols =
                    reference::rows_to_columns(g.span, reference::CorrelateLayout::libbitcoin, t);
                std::vector<std::uint8_t> col_verdicts(g.span.count);
                reference::ColumnVerifier(2).verify(cols.view(), col_verdicts.data());
                CHECK(col_verdicts == verdicts);
                const auto from_corr = reference::group_rows_from_correlate(cols.view());
                const auto again = reference::compute_group_verdicts(kind, from_corr, col_verdicts);
                CHECK(again.groups == report.groups);
                CHECK(again.blocks == report.blocks);
            }
        }
    }
}

TEST_CASE("clean generated tables pass; one bad signature flips exactly its group and block", "[groups][generated]") {
    for (Table t : {Table::multisig, Table::threshold}) {
        const GroupKind kind = t == Table::multisig ? MS : TH;
        DYNAMIC_SECTION(wire::to_string(t)) {
            Table_ g = generated(t, 3'000, 0.0, 91 + unsigned(t));
            const auto rows = reference::group_rows_from_rows(g.span, kind);
            auto verdicts = verify_all(g.span);
            const auto clean = reference::compute_group_verdicts(kind, rows, verdicts);
            require_matches_brute_force(kind, rows, verdicts, clean);
            // Every group passes except perhaps the last, which the row count may cut short.
            REQUIRE(clean.groups.size() > 100);
            for (std::size_t i = 0; i + 1 < clean.groups.size(); ++i) REQUIRE(clean.groups[i].pass);

            // Row indices of each group, in order.
            std::map<std::pair<std::uint32_t, std::uint16_t>, std::vector<std::size_t>> members;
            for (std::size_t i = 0; i < rows.size(); ++i) members[{rows[i].block_fk, rows[i].group}].push_back(i);

            std::size_t flipped = 0, survived = 0, flipped_with_spare_rows = 0;
            reference::RowVerifier rv;
            for (std::size_t gi = 0; gi + 1 < clean.groups.size() && gi < 120; ++gi) {
                const GroupVerdict& target = clean.groups[gi];
                const auto& idx = members[{target.block_fk, target.group}];
                std::vector<std::size_t> valid_rows;
                for (std::size_t i : idx)
                    if (verdicts[i]) valid_rows.push_back(i);
                // Corrupt the hash of `spoil` verified rows: multisig has
                // exactly m verified rows (one signer per signature), and
                // threshold rows are all non-empty signatures (BIP-342), so one
                // spoilt row fails the group either way.
                const std::size_t slack = 0;
                for (std::size_t spoil : {slack, slack + 1}) {
                    if (spoil == 0 || spoil > valid_rows.size()) continue;
                    std::vector<std::uint8_t> bytes = g.bytes;
                    RowSpan span = g.span;
                    span.data = bytes.data();
                    auto v = verdicts;
                    for (std::size_t j = 0; j < spoil; ++j) {
                        span.row(valid_rows[j])[0] ^= 0x01;
                        v[valid_rows[j]] = rv.verify_row(span, valid_rows[j]);
                        REQUIRE(v[valid_rows[j]] == 0);
                    }
                    const auto r = reference::compute_group_verdicts(kind, rows, v);
                    const bool should_pass = spoil <= slack;
                    REQUIRE(r.groups[gi].pass == should_pass);
                    (should_pass ? survived : flipped) += 1;
                    // Threshold groups with more rows than m used to survive a
                    // failed row; under BIP-342 they fail.
                    if (!should_pass && valid_rows.size() > target.required) ++flipped_with_spare_rows;
                    // Every other group keeps its verdict; the block follows.
                    for (std::size_t k = 0; k < r.groups.size(); ++k)
                        if (k != gi) REQUIRE(r.groups[k].pass == clean.groups[k].pass);
                    for (const auto& b : r.blocks)
                        if (b.block_fk == target.block_fk) REQUIRE(b.all_groups_pass == should_pass);
                }
            }
            CHECK(flipped > 50);
            CHECK(survived == 0);
            if (t == Table::threshold) CHECK(flipped_with_spare_rows > 10);
        }
    }
}

TEST_CASE("generated multisig groups follow libbitcoin's expansion", "[groups][generated]") {
    Table_ g = generated(Table::multisig, 2'000, 0.0, 5);
    const auto rows = reference::group_rows_from_rows(g.span, MS);
    std::map<std::pair<std::uint32_t, std::uint16_t>, std::vector<std::uint8_t>> mns;
    for (const auto& r : rows) mns[{r.block_fk, r.group}].push_back(r.mn);
    std::size_t checked = 0;
    for (auto it = mns.begin(); it != std::prev(mns.end()); ++it) {  // the last group may be cut short
        const auto& list = it->second;
        unsigned m = 0, n = 0;
        for (auto mn : list) m = std::max(m, unsigned(mn >> 4) + 1);
        // Signature i is paired with keys i .. i + (n - m): (n - m + 1) rows each.
        REQUIRE(list.size() % m == 0);
        const unsigned per = unsigned(list.size() / m);
        n = per - 1 + m;
        std::size_t at = 0;
        for (unsigned i = 0; i < m; ++i)
            for (unsigned j = i; j <= i + (n - m); ++j) REQUIRE(list[at++] == std::uint8_t((i << 4) | j));
        ++checked;
    }
    CHECK(checked > 100);
}

// ---------------------------------------------------------------------------
// Single signatures: each its own group
// ---------------------------------------------------------------------------
TEST_CASE("single signatures: each row its own group, numbered per block from 65535 down", "[groups][single]") {
    const std::vector<std::uint32_t> fks = {7, 7, 9, 7, 0xFFFFFF, 9, 7};
    const auto rows = reference::single_signature_group_rows(fks);
    REQUIRE(rows.size() == fks.size());
    const std::uint16_t want[] = {65535, 65534, 65535, 65533, 0, 65534, 65532};
    for (std::size_t i = 0; i < rows.size(); ++i) {
        CHECK(rows[i].block_fk == fks[i]);
        CHECK(rows[i].mn == 0);
        CHECK(rows[i].group == want[i]);
    }
    // Each single passes iff its row verified; a block fails iff one of its rows failed.
    const std::vector<std::uint8_t> verdicts = {1, 0, 1, 1, 0, 1, 1};
    const auto r = reference::compute_group_verdicts(MS, rows, verdicts);
    require_matches_brute_force(MS, rows, verdicts, r);
    CHECK(r.skipped_rows == 1);
    REQUIRE(r.groups.size() == 6);
    for (const auto& g : r.groups) {
        CHECK(g.rows == 1);
        CHECK(g.required == 1);
        CHECK(g.flags == (g.pass ? 0 : reference::kGroupUnmatched));  // never duplicate-rows
    }
    CHECK(r.failed_groups == 1);
    REQUIRE(r.blocks.size() == 2);
    CHECK(r.blocks[0] == reference::BlockVerdict{7, false, 4, 1});
    CHECK(r.blocks[1] == reference::BlockVerdict{9, true, 2, 0});

    // More than 65536 singles in one block would repeat a group number.
    std::vector<std::uint32_t> many(65536, 3);
    CHECK(reference::single_signature_group_rows(many).back().group == 0);
    many.push_back(3);
    CHECK_THROWS_AS(reference::single_signature_group_rows(many), std::invalid_argument);
}

TEST_CASE("ecdsa rows to libbitcoin columns: each single signature its own group", "[groups][single][generated]") {
    Table_ g = generated(Table::ecdsa, 3'000, 0.01, 77);
    g.span.tail_size = 3;
    const auto verdicts = verify_all(g.span);
    reference::ColumnTable cols = reference::rows_to_columns(g.span, reference::CorrelateLayout::libbitcoin, Table::ecdsa);
    const auto from_corr = reference::group_rows_from_correlate(cols.view());
    std::vector<std::uint32_t> fks(g.span.count);
    for (std::size_t i = 0; i < fks.size(); ++i) fks[i] = wire::read_u24le(g.span.row(i) + 129);
    const auto singles = reference::single_signature_group_rows(fks);
    std::set<std::pair<std::uint32_t, std::uint16_t>> seen;
    for (std::size_t i = 0; i < from_corr.size(); ++i) {
        REQUIRE(from_corr[i].block_fk == fks[i]);
        REQUIRE(from_corr[i].mn == 0);
        REQUIRE(from_corr[i].group == singles[i].group);
        REQUIRE(seen.insert({from_corr[i].block_fk, from_corr[i].group}).second);  // distinct per block
    }
    const auto r = reference::compute_group_verdicts(MS, from_corr, verdicts);
    REQUIRE(r.groups.size() == g.span.count);
    std::size_t invalid = 0;
    for (auto v : verdicts) invalid += v == 0;
    CHECK(invalid > 5);
    CHECK(r.failed_groups == invalid);
    std::map<std::uint32_t, bool> block_ok;
    for (std::size_t i = 0; i < fks.size(); ++i) {
        auto [it, fresh] = block_ok.emplace(fks[i], true);
        it->second = it->second && verdicts[i] != 0;
    }
    REQUIRE(r.blocks.size() == block_ok.size());
    std::size_t i = 0;
    for (const auto& [fk, ok] : block_ok) {
        CHECK(r.blocks[i].block_fk == fk);
        CHECK(r.blocks[i].all_groups_pass == ok);
        ++i;
    }
    for (const auto& gv : r.groups) CHECK((gv.flags & reference::kGroupDuplicates) == 0);
    // Columns back to rows keep block_fk.
    const auto back = reference::columns_to_rows(cols.view(), reference::CorrelateLayout::libbitcoin, Table::ecdsa);
    CHECK(std::equal(back.begin(), back.end(), g.bytes.begin()));
}
