// SPDX-License-Identifier: MIT
// The installed group and block verdicts (sigverify/groups.hpp and the C ABI
// in sigverify.h), through libsigverify.so as a node links it: the same
// verdicts as the reference implementation they wrap, on random groups of
// every kind, and the rules a node relies on in a few cases written out.
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include "reference/group_verdicts.hpp"
#include "reference/multisig_pair.hpp"
#include "sigverify/groups.hpp"
#include "sigverify/sigverify.h"

using namespace sigverify;

namespace {

std::vector<GroupRow> random_rows(std::mt19937_64& rng, std::size_t n, GroupKind kind) {
    std::vector<GroupRow> rows(n);
    for (GroupRow& r : rows) {
        r.block_fk = rng() % 9 == 0 ? 0xFFFFFFu : std::uint32_t(rng() % 6);
        r.group = std::uint16_t(rng() % 5);
        r.mn = kind == GroupKind::multisig ? std::uint8_t((rng() % 3) << 4 | rng() % 5) : std::uint8_t(rng() % 4);
    }
    return rows;
}

}  // namespace

TEST_CASE("public group and block verdicts equal the reference's on random groups", "[api][groups]") {
    std::mt19937_64 rng(14);
    for (GroupKind kind : {GroupKind::multisig, GroupKind::threshold}) {
        for (int round = 0; round < 200; ++round) {
            const std::size_t n = rng() % 60;
            const std::vector<GroupRow> rows = random_rows(rng, n, kind);
            std::vector<std::uint8_t> verdicts(n);
            for (auto& v : verdicts) v = rng() % 5 != 0;
            std::vector<reference::GroupRow> ref_rows;
            for (const GroupRow& r : rows) ref_rows.push_back({r.mn, r.group, r.block_fk});
            const reference::GroupReport want = reference::compute_group_verdicts(
                kind == GroupKind::multisig ? reference::GroupKind::multisig : reference::GroupKind::threshold,
                ref_rows, verdicts);
            const GroupReport got = compute_group_verdicts(kind, rows, verdicts);
            REQUIRE(got.groups.size() == want.groups.size());
            for (std::size_t i = 0; i < got.groups.size(); ++i) {
                const GroupVerdict& g = got.groups[i];
                const reference::GroupVerdict& w = want.groups[i];
                CHECK((g.block_fk == w.block_fk && g.group == w.group && g.pass == w.pass && g.rows == w.rows &&
                       g.valid_rows == w.valid_rows && g.required == w.required && g.flags == w.flags));
            }
            REQUIRE(got.blocks.size() == want.blocks.size());
            CHECK(got.skipped_rows == want.skipped_rows);
            CHECK(got.failed_groups == want.failed_groups);
            CHECK(got.failed_blocks == want.failed_blocks);

            // The C ABI gives the same blocks.
            std::vector<sigverify_group_row> c_rows(n);
            for (std::size_t i = 0; i < n; ++i) c_rows[i] = {rows[i].mn, 0, rows[i].group, rows[i].block_fk};
            std::vector<sigverify_block_verdict> blocks(want.blocks.size() + 1);
            std::size_t count = 0;
            std::uint64_t failed = 0;
            REQUIRE(sigverify_block_verdicts(kind == GroupKind::multisig ? SIGVERIFY_GROUP_MULTISIG
                                                                          : SIGVERIFY_GROUP_THRESHOLD,
                                             c_rows.data(), verdicts.data(), n, blocks.data(), blocks.size(), &count,
                                             &failed) == SIGVERIFY_OK);
            REQUIRE(count == want.blocks.size());
            CHECK(failed == want.failed_blocks);
            for (std::size_t i = 0; i < count; ++i) {
                CHECK(blocks[i].block_fk == want.blocks[i].block_fk);
                CHECK(blocks[i].pass == (want.blocks[i].all_groups_pass ? 1 : 0));
                CHECK(got.blocks[i].pass == want.blocks[i].all_groups_pass);
                CHECK(blocks[i].groups == want.blocks[i].groups);
                CHECK(blocks[i].failed_groups == want.blocks[i].failed_groups);
            }
            if (count > 0) {
                std::size_t small = 0;
                CHECK(sigverify_block_verdicts(SIGVERIFY_GROUP_MULTISIG, c_rows.data(), verdicts.data(), n,
                                               blocks.data(), count - 1, &small, nullptr) == SIGVERIFY_E_TOO_LARGE);
                CHECK(small == count);
            }
        }
    }
}

TEST_CASE("the rules a node relies on: singles, 2-of-3 multisig, threshold with a failed row", "[api][groups]") {
    // Block 1: three single signatures, all valid. Block 2: two singles, one invalid.
    const std::uint32_t fks[] = {1, 1, 2, 1, 2};
    const std::vector<GroupRow> singles = single_signature_group_rows(fks);
    REQUIRE(singles.size() == 5);
    CHECK(singles[0].group != singles[1].group);  // each its own group
    const std::uint8_t single_ok[] = {1, 1, 0, 1, 1};
    GroupReport r = compute_group_verdicts(GroupKind::multisig, singles, single_ok);
    REQUIRE(r.blocks.size() == 2);
    CHECK(r.blocks[0].pass);
    CHECK(r.blocks[0].groups == 3);
    CHECK_FALSE(r.blocks[1].pass);
    CHECK(r.failed_blocks == 1);

    // 2-of-3 multisig in block 7: signature 0 tried against keys 0 and 1,
    // signature 1 against key 2. Key 0 fails but key 1 matches: passes.
    std::vector<GroupRow> ms = {{0x00, 4, 7}, {0x01, 4, 7}, {0x12, 4, 7}};
    const std::uint8_t ms_ok[] = {0, 1, 1};
    r = compute_group_verdicts(GroupKind::multisig, ms, ms_ok);
    REQUIRE(r.blocks.size() == 1);
    CHECK(r.blocks[0].pass);
    CHECK(r.groups[0].required == 2);
    // Signature 1 fails on its only key: the group and the block fail.
    const std::uint8_t ms_bad[] = {1, 1, 0};
    CHECK_FALSE(compute_group_verdicts(GroupKind::multisig, ms, ms_bad).blocks[0].pass);

    // Threshold 2-of-n in block 9 with three rows: one failed row fails the
    // block even though two verified (BIP-342).
    std::vector<GroupRow> th = {{2, 0, 9}, {2, 0, 9}, {2, 0, 9}};
    const std::uint8_t th_one_bad[] = {1, 1, 0};
    r = compute_group_verdicts(GroupKind::threshold, th, th_one_bad);
    CHECK_FALSE(r.blocks[0].pass);
    CHECK((r.groups[0].flags & kGroupFailedRow) != 0);
    const std::uint8_t th_ok[] = {1, 1, 1};
    CHECK(compute_group_verdicts(GroupKind::threshold, th, th_ok).blocks[0].pass);

    // The libbitcoin ECDSA correlate: id[3] (block_fk) || pair || group[2].
    const std::uint8_t correlate[] = {7, 0, 0, 0x12, 4, 0};
    const std::vector<GroupRow> from = group_rows_from_ecdsa_correlate(correlate);
    REQUIRE(from.size() == 1);
    CHECK((from[0].block_fk == 7 && from[0].mn == 0x12 && from[0].group == 4));
    sigverify_group_row c_row;
    REQUIRE(sigverify_group_rows_from_ecdsa_correlate(correlate, 1, &c_row) == SIGVERIFY_OK);
    CHECK((c_row.block_fk == 7 && c_row.mn == 0x12 && c_row.group == 4));
    sigverify_group_row c_singles[5];
    REQUIRE(sigverify_single_signature_group_rows(fks, 5, c_singles) == SIGVERIFY_OK);
    for (int i = 0; i < 5; ++i) CHECK((c_singles[i].group == singles[i].group && c_singles[i].block_fk == fks[i]));
}

TEST_CASE("public multisig pair codes equal the reference's, 17..20 keys included", "[api][groups]") {
    for (unsigned k = 0; k < 21; ++k)
        for (unsigned s = 0; s < 21; ++s) {
            const auto want = reference::encode_multisig_pair(s, k);
            REQUIRE(multisig_pair_code(s, k) == want);
            REQUIRE(sigverify_multisig_pair_code(s, k) == (want ? int(*want) : -1));  // the C twin
        }
    // A 2-of-18 group through the installed calls: signature 0 by key 16,
    // signature 1 by key 17 (band: signature i against keys i..i+16).
    std::vector<GroupRow> rows;
    std::vector<std::uint8_t> verdicts;
    for (unsigned s = 0; s < 2; ++s)
        for (unsigned k = s; k <= s + 16; ++k) {
            rows.push_back({*multisig_pair_code(s, k), 3, 9});
            verdicts.push_back(k == 16 + s);
        }
    GroupReport r = compute_group_verdicts(GroupKind::multisig, rows, verdicts);
    REQUIRE(r.groups.size() == 1);
    CHECK(r.groups[0].pass);
    CHECK(r.groups[0].required == 2);
    verdicts[rows.size() - 1] = 0;  // signature 1 against key 17
    r = compute_group_verdicts(GroupKind::multisig, rows, verdicts);
    CHECK_FALSE(r.groups[0].pass);
}
