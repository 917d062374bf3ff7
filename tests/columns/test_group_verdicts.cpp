// SPDX-License-Identifier: MIT
// Group verdicts (m-of-n) of multisig and threshold tables on hand-built
// groups, one edge of the rules each, every report also held to the brute
// force of group_oracle.hpp; generated tables are in test_group_generated.cpp.
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "group_oracle.hpp"
#include "reference/group_verdicts.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

using namespace sigverify;
using namespace sigverify::test;
using wire::RowSpan;
using wire::SigEncoding;

namespace {

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
