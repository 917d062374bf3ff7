// SPDX-License-Identifier: MIT
// Group verdicts of generated tables with real signatures (expanded the way
// libbitcoin expands them) against the brute force of group_oracle.hpp, row
// mutations that flip exactly one group and its block, and single signatures
// as one-row groups of their own.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "group_oracle.hpp"
#include "reference/columns.hpp"
#include "reference/group_verdicts.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"

using namespace sigverify;
using namespace sigverify::test;
using wire::RowSpan;
using wire::SigEncoding;
using wire::Table;

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
