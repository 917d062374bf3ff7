// SPDX-License-Identifier: MIT
// The confirmation rule end to end: real daemons (sigverifyd_lying, the
// daemon with a host-kernel "GPU" that lies on purpose, lying_gpu.hpp) with
// the DEFAULT rule (--confirm groups) and the DEFAULT sample rates (1 in 1024
// valid, 1 in 64 invalid of passing groups), real clients, real shared
// memory. What each case asserts is what a node needs: the row verdicts of
// ecdsa, schnorr and threshold tables, and the group and block verdicts of
// multisig tables, are libsecp256k1's (reference::RowVerifier,
// reference::compute_group_verdicts); the liar is switched off once a
// confirmation or a sample catches it; the stats socket says so.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "lying_gpu.hpp"
#include "ops/ops_helpers.hpp"
#include "stand_in_probe.hpp"
#include "reference/group_verdicts.hpp"
#include "support/first_differences.hpp"

using namespace sigverify;
using namespace sigverify::test;

namespace {

// A lying daemon: one host-kernel "GPU" (so once it is switched off every
// chunk goes to the CPU), every batch on it (--gpu-split off, --gpu-min-rows
// 1), and nothing else changed: confirm rule and sample rates are the defaults.
// The wait floor is raised so that a slow build (TSan: a 4,096-row call of
// the host kernel took over 10 s) is never taken for a hung GPU here: these
// cases are about lies (test_daemon_hung_gpu is about hangs).
class LyingDaemon : public cli::DaemonProcess {
public:
    explicit LyingDaemon(std::vector<std::string> lie) : cli::DaemonProcess(options(std::move(lie))) {}

private:
    static cli::DaemonProcessOptions options(std::vector<std::string> lie) {
        cli::DaemonProcessOptions o;
        o.binary = SIGVERIFYD_LYING_BIN;
        o.args = std::move(lie);
        for (const char* a : {"--backend", "host-kernel", "--gpus", "0", "--cpu-threads", "2", "--gpu-min-rows", "1",
                              "--gpu-split", "off", "--arena-size", "4M", "--gpu-wait-floor", "600"})
            o.args.push_back(a);
        o.temp_template = "/tmp/sigverifyd-test-XXXXXX";
        return o;
    }
};

bool switched_off(const cli::DaemonProcess& d) {
    return backend_line(d, "gpu0").find("switched off") != std::string::npos;
}

// Every counter that says the liar was caught and switched off. (Chunks
// that were already running when it was switched off may each count a
// mismatch of their own; the GPU is switched off once.)
void check_caught(const cli::DaemonProcess& d) {
    const std::string line = backend_line(d, "gpu0");
    INFO(line);
    CHECK(line.find("switched off") != std::string::npos);
    CHECK(line.find("disagrees with libsecp256k1") != std::string::npos);
    CHECK(metric(d, "sigverifyd_backend_crosscheck_mismatches_total{backend=\"gpu0\"}") >= 1);
    CHECK(metric(d, "sigverifyd_backend_enabled{backend=\"gpu0\",kind=\"gpu\"}") == 0);
    CHECK(metric(d, "sigverifyd_gpu_crosscheck_mismatches_total") == 1);
}

// libsecp256k1's verdict of every row.
std::vector<std::uint8_t> reference_verdicts(const wire::RowSpan& rows) {
    reference::RowVerifier v;
    std::vector<std::uint8_t> out(rows.count);
    for (std::size_t i = 0; i < rows.count; ++i) out[i] = v.verify_row(rows, i) ? 1 : 0;
    return out;
}

reference::GroupReport multisig_groups(const wire::RowSpan& rows, const std::vector<std::uint8_t>& verdicts) {
    const auto g = reference::group_rows_from_rows(rows, reference::GroupKind::multisig);
    return reference::compute_group_verdicts(reference::GroupKind::multisig, g, verdicts);
}

// "" when the two reports give every group and block the same verdict.
std::string group_differences(const reference::GroupReport& got, const reference::GroupReport& want) {
    if (got.groups.size() != want.groups.size() || got.blocks.size() != want.blocks.size())
        return "group/block counts differ";
    std::size_t groups = 0, blocks = 0;
    for (std::size_t i = 0; i < got.groups.size(); ++i) groups += got.groups[i].pass != want.groups[i].pass;
    for (std::size_t i = 0; i < got.blocks.size(); ++i) blocks += got.blocks[i].all_groups_pass != want.blocks[i].all_groups_pass;
    if (groups == 0 && blocks == 0) return "";
    return std::to_string(groups) + " group and " + std::to_string(blocks) + " block verdicts differ";
}

// n - s for a 32-byte little-endian scalar s (0 < s < n): the other valid
// s of an ECDSA signature (high-S rows are valid).
void negate_scalar_le(std::uint8_t* s) {
    static constexpr std::uint8_t kOrderBe[32] = {
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE,
        0xBA, 0xAE, 0xDC, 0xE6, 0xAF, 0x48, 0xA0, 0x3B, 0xBF, 0xD2, 0x5E, 0x8C, 0xD0, 0x36, 0x41, 0x41};
    int borrow = 0;
    for (int i = 0; i < 32; ++i) {
        const int d = int(kOrderBe[31 - i]) - int(s[i]) - borrow;
        s[i] = std::uint8_t(d & 0xFF);
        borrow = d < 0;
    }
}

// A multisig table where every signature is valid under a key the script
// lists twice (keys 0 and 1 are the same key), and fails against two others:
// rows (s 0, k 0) and (s 0, k 1) valid (one with the low, one with the high
// s, so the two records differ), (s 0, k 2) and (s 0, k 3) invalid. Four
// rows a group: with 4096-row chunks no group spans two chunks (a spanning
// group's INVALID rows are all confirmed, which would catch the liar too). Each group passes on
// either valid copy, so a false INVALID on one of them decides nothing: the
// groups rule leaves it unconfirmed, and only the 1 in 64 sample of INVALID
// verdicts of passing groups can see it. Each group is chosen so that exactly
// one of its two valid records is a target of the liar (lie_target with
// `every`): no group ever fails, whatever the liar does.
std::vector<std::uint8_t> twin_key_multisig(std::size_t groups, unsigned every, std::uint64_t seed) {
    reference::GenOptions g;
    g.table = wire::Table::ecdsa;
    g.count = groups * 12;
    g.seed = seed;
    g.threads = 1;
    const std::vector<std::uint8_t> pool = reference::generate_rows(g);  // all valid, low S
    const std::size_t stride = wire::stride(wire::RecordKind::ecdsa, wire::canonical_tail_size(wire::Table::ecdsa));
    std::vector<std::uint8_t> out;
    std::size_t next = 0;
    for (std::size_t made = 0; made < groups;) {
        if (next + 2 >= g.count) throw std::logic_error("twin_key_multisig: the pool ran out");
        wire::EcdsaRecord low, high;
        std::memcpy(&low, pool.data() + next * stride, sizeof low);
        const std::uint8_t* others[2] = {pool.data() + (next + 1) * stride,  // keys of the invalid attempts
                                         pool.data() + (next + 2) * stride};
        next += 3;
        high = low;
        negate_scalar_le(high.sig + 32);
        const bool a = lie_target(reinterpret_cast<const std::uint8_t*>(&low), sizeof low, every);
        const bool b = lie_target(reinterpret_cast<const std::uint8_t*>(&high), sizeof high, every);
        if (a == b) continue;
        for (std::uint8_t key = 0; key < 4; ++key) {
            wire::MultisigRow row{};
            row.record = key == 1 ? high : low;
            if (key >= 2) std::memcpy(row.record.point, others[key - 2] + offsetof(wire::EcdsaRecord, point), 33);
            row.mn = key;  // signature 0, key `key`
            wire::write_u16le(row.group, std::uint16_t(made % 1000));
            wire::write_u24le(row.block_fk, std::uint32_t(500 + made / 1000));
            const auto* bytes = reinterpret_cast<const std::uint8_t*>(&row);
            out.insert(out.end(), bytes, bytes + sizeof row);
        }
        ++made;
    }
    return out;
}

}  // namespace

TEST_CASE("a GPU that calls valid rows invalid: every such verdict of an ecdsa, schnorr or threshold table is "
          "confirmed, the GPU is switched off at once",
          "[daemon][lying][strict]") {
    for (wire::Table table : {wire::Table::ecdsa, wire::Table::schnorr, wire::Table::threshold}) {
        INFO(wire::to_string(table));
        LyingDaemon d({"--lie", "false-invalid", "--lie-every", "16"});
        auto c = connect_to(d, "strict");
        const KnownRows k = make_known_rows(table, 600, wire::SigEncoding::opaque, 41 + unsigned(table));
        std::vector<std::uint8_t> rows = k.rows, got(k.expected.size(), 0xAA);
        const BatchResult r = send(*c, table, wire::Mode::results, wire::SigEncoding::opaque, rows, got.size(), got.data());
        REQUIRE(r.ok());
        CHECK(r.local_rows == 0);
        CHECK(first_differences(got, k.expected) == "");
        check_caught(d);
    }
}

TEST_CASE("a GPU that calls needed multisig attempts invalid: their groups fail, are confirmed, group and block "
          "verdicts stay true and the GPU is switched off",
          "[daemon][lying][groups]") {
    // Generated groups: each signature is valid under exactly one of its keys,
    // so every valid attempt is needed; 5 % of the rows are broken. The liar
    // lies on 1 record in 1024: the table is the first (by seed) whose valid
    // rows hold 1 to 3 of its targets, so the 1-in-64 sample of INVALID
    // verdicts would most likely miss them: what catches them is that their
    // groups fail and so are confirmed.
    constexpr unsigned kEvery = 1024;
    reference::GenOptions g;
    g.table = wire::Table::multisig;
    g.count = 3000;
    g.invalid_rate = 0.05;
    g.threads = 1;
    std::vector<std::uint8_t> rows, want;
    std::size_t targets = 0;
    for (g.seed = 2828; targets < 1 || targets > 3; ++g.seed) {
        rows = reference::generate_rows(g);
        want = reference_verdicts(span_of(wire::Table::multisig, wire::SigEncoding::opaque, rows, g.count));
        targets = 0;
        for (std::size_t i = 0; i < g.count; ++i)
            targets += want[i] == 1 && lie_target(rows.data() + i * sizeof(wire::MultisigRow), sizeof(wire::EcdsaRecord), kEvery);
    }
    const wire::RowSpan span = span_of(wire::Table::multisig, wire::SigEncoding::opaque, rows, g.count);
    const reference::GroupReport want_groups = multisig_groups(span, want);
    REQUIRE(want_groups.failed_groups > 0);
    REQUIRE(want_groups.failed_groups < want_groups.groups.size());

    LyingDaemon d({"--lie", "false-invalid", "--lie-every", std::to_string(kEvery)});
    auto c = connect_to(d, "needed");
    std::vector<std::uint8_t> got(g.count, 0xAA);
    const BatchResult r = send(*c, wire::Table::multisig, wire::Mode::results, wire::SigEncoding::opaque, rows,
                               g.count, got.data());
    REQUIRE(r.ok());
    CHECK(group_differences(multisig_groups(span, got), want_groups) == "");
    std::printf("needed multisig attempts: seed %llu, %zu valid rows the liar lies on\n",
                (unsigned long long)g.seed - 1, targets);
    check_caught(d);
    // Once it is off, every row verdict is libsecp256k1's.
    std::fill(got.begin(), got.end(), 0xAA);
    REQUIRE(send(*c, wire::Table::multisig, wire::Mode::results, wire::SigEncoding::opaque, rows, g.count, got.data()).ok());
    CHECK(first_differences(got, want) == "");
}

TEST_CASE("a GPU that invents invalid attempts that decide nothing: group and block verdicts stay true, and the "
          "invalid sample catches it",
          "[daemon][lying][groups]") {
    // One lie per group: 1024 lies in 4096 rows; the 1-in-64 sample misses
    // all of them with probability (63/64)^1024 < 1e-7.
    LyingDaemon d({"--lie", "false-invalid", "--lie-every", "4"});
    auto c = connect_to(d, "twins");
    const std::size_t groups = 1024;
    std::vector<std::uint8_t> rows = twin_key_multisig(groups, 4, 77);
    const std::size_t n = groups * 4;
    const wire::RowSpan span = span_of(wire::Table::multisig, wire::SigEncoding::opaque, rows, n);
    const std::vector<std::uint8_t> want = reference_verdicts(span);
    const reference::GroupReport want_groups = multisig_groups(span, want);
    REQUIRE(want_groups.failed_groups == 0);

    std::vector<std::uint8_t> got(n, 0xAA);
    const BatchResult r = send(*c, wire::Table::multisig, wire::Mode::results, wire::SigEncoding::opaque, rows, n,
                               got.data());
    REQUIRE(r.ok());
    CHECK(group_differences(multisig_groups(span, got), want_groups) == "");
    // A row verdict may be wrong only as an unconfirmed false INVALID of a
    // passing group (what the groups rule allows), never the other way.
    std::size_t false_valid = 0, false_invalid = 0;
    for (std::size_t i = 0; i < n; ++i) {
        false_valid += got[i] == 1 && want[i] == 0;
        false_invalid += got[i] == 0 && want[i] == 1;
    }
    std::printf("twin-key multisig: %zu unconfirmed false INVALID row verdicts before the sample caught the GPU\n",
                false_invalid);
    CHECK(false_valid == 0);
    check_caught(d);
}

TEST_CASE("a GPU that calls invalid rows valid is caught by the valid sample; until then every wrong verdict is a "
          "false VALID on a lied row, and afterwards there is none",
          "[daemon][lying][sample]") {
    // Every invalid row called valid: a quarter of the rows, 512 lies per
    // 2048-row batch; the 1-in-1024 sample misses 40 batches' lies with
    // probability (1023/1024)^20480 < 3e-9. This is the trade-off of
    // docs/security.md: a false VALID is caught only when it is sampled.
    LyingDaemon d({"--lie", "false-valid", "--lie-every", "1"});
    auto c = connect_to(d, "false-valid");
    std::size_t batches = 0, wrong = 0;
    while (!switched_off(d) && batches < 40) {
        const KnownRows k = make_known_rows(wire::Table::ecdsa, 2048, wire::SigEncoding::opaque, 300 + batches);
        std::vector<std::uint8_t> rows = k.rows, got(k.expected.size(), 0xAA);
        REQUIRE(send(*c, wire::Table::ecdsa, wire::Mode::results, wire::SigEncoding::opaque, rows, got.size(),
                     got.data()).ok());
        ++batches;
        for (std::size_t i = 0; i < got.size(); ++i) {
            if (got[i] == k.expected[i]) continue;
            ++wrong;
            INFO("batch " << batches << " row " << i);
            REQUIRE(got[i] == 1);  // a false INVALID would be a confirmation failure
            REQUIRE(k.expected[i] == 0);
        }
    }
    std::printf("false-valid GPU: %s after %zu batch(es); %zu false VALID verdicts reached the client before\n",
                switched_off(d) ? "switched off" : "STILL ON", batches, wrong);
    check_caught(d);
    const KnownRows k = make_known_rows(wire::Table::ecdsa, 2048, wire::SigEncoding::opaque, 999);
    std::vector<std::uint8_t> rows = k.rows, got(k.expected.size(), 0xAA);
    REQUIRE(send(*c, wire::Table::ecdsa, wire::Mode::results, wire::SigEncoding::opaque, rows, got.size(), got.data()).ok());
    CHECK(first_differences(got, k.expected) == "");
}

TEST_CASE("a GPU that calls invalid multisig and threshold rows valid is caught by the valid sample on the default "
          "rule; until then every wrong verdict is a false VALID on an invalid row, and afterwards there is none",
          "[daemon][lying][sample]") {
    // As the ecdsa case above, on the two tables whose confirmation differs
    // from it: multisig under the groups rule (a chunk whose groups all pass
    // confirms nothing; only the VALID sample can see a false VALID) and
    // threshold under strict. Generated rows (multisig: CHECKMULTISIG-like
    // groups, each signature valid under one key), 2048 a batch; every
    // invalid row is a lie, so the 1-in-1024 sample misses 40 batches' lies
    // with probability far below 1e-9 (multisig: most rows are invalid
    // attempts; threshold: a quarter).
    for (wire::Table table : {wire::Table::multisig, wire::Table::threshold}) {
        INFO(wire::to_string(table));
        LyingDaemon d({"--lie", "false-valid", "--lie-every", "1"});
        auto c = connect_to(d, "false-valid");
        auto rows_of = [&](std::uint64_t seed) {
            reference::GenOptions g;
            g.table = table;
            g.count = 2048;
            g.invalid_rate = 0.25;
            g.seed = seed;
            g.threads = 1;
            return reference::generate_rows(g);
        };
        std::size_t batches = 0, wrong = 0;
        while (!switched_off(d) && batches < 40) {
            std::vector<std::uint8_t> rows = rows_of(700 + batches);
            const wire::RowSpan span = span_of(table, wire::SigEncoding::opaque, rows, 2048);
            const std::vector<std::uint8_t> want = reference_verdicts(span);
            std::vector<std::uint8_t> got(want.size(), 0xAA);
            REQUIRE(send(*c, table, wire::Mode::results, wire::SigEncoding::opaque, rows, got.size(), got.data()).ok());
            ++batches;
            for (std::size_t i = 0; i < got.size(); ++i) {
                if (got[i] == want[i]) continue;
                ++wrong;
                INFO("batch " << batches << " row " << i);
                REQUIRE(got[i] == 1);  // a false INVALID would be a confirmation failure
                REQUIRE(want[i] == 0);
            }
        }
        std::printf("false-valid GPU, %s: %s after %zu batch(es); %zu false VALID verdicts reached the client before\n",
                    std::string(wire::to_string(table)).c_str(), switched_off(d) ? "switched off" : "STILL ON", batches,
                    wrong);
        check_caught(d);
        std::vector<std::uint8_t> rows = rows_of(999);
        const wire::RowSpan span = span_of(table, wire::SigEncoding::opaque, rows, 2048);
        const std::vector<std::uint8_t> want = reference_verdicts(span);
        std::vector<std::uint8_t> got(want.size(), 0xAA);
        REQUIRE(send(*c, table, wire::Mode::results, wire::SigEncoding::opaque, rows, got.size(), got.data()).ok());
        CHECK(first_differences(got, want) == "");
        if (table == wire::Table::multisig)
            CHECK(group_differences(multisig_groups(span, got), multisig_groups(span, want)) == "");
    }
}

TEST_CASE("a GPU that lies only on rows read in place: the verdicts stay libsecp256k1's, each caught lie is "
          "counted, and the client's later batches are staged out of the liar's reach",
          "[daemon][lying][in-place]") {
    LyingDaemon d({"--lie", "false-invalid", "--lie-every", "16", "--lie-in-place-only"});
    const std::string rewritten_metric = "sigverifyd_backend_rows_rewritten_total{backend=\"gpu0\"}";
    auto batch = [&](Client& c, wire::Table table, std::uint64_t seed) {
        INFO(wire::to_string(table) << " seed " << seed);
        const KnownRows k = make_known_rows(table, 600, wire::SigEncoding::opaque, seed);
        std::vector<std::uint8_t> rows = k.rows, got(k.expected.size(), 0xAA);
        REQUIRE(send(c, table, wire::Mode::results, wire::SigEncoding::opaque, rows, got.size(), got.data()).ok());
        CHECK(first_differences(got, k.expected) == "");
    };
    // A disagreement on rows read in place is judged on a private copy, where
    // this liar tells the truth: the daemon takes it for the client rewriting
    // its rows (rows_rewritten; had the copy disagreed too, the GPU would have
    // been switched off), gives the row libsecp256k1's verdict, and stages
    // that client's later batches, so the liar never sees its rows in place
    // again.
    auto c = connect_to(d, "in-place");
    batch(*c, wire::Table::ecdsa, 61);
    const long long first = metric(d, rewritten_metric);
    CHECK(first >= 1);
    for (std::uint64_t seed : {62, 63}) batch(*c, wire::Table::ecdsa, seed);
    batch(*c, wire::Table::threshold, 64);
    CHECK(metric(d, rewritten_metric) == first);
    // A new session's rows are read in place again: its first batch meets
    // the liar too, and gets the true verdicts all the same.
    auto c2 = connect_to(d, "in-place-2");
    batch(*c2, wire::Table::schnorr, 65);
    const long long second = metric(d, rewritten_metric);
    CHECK(second > first);
    std::printf("in-place liar: rows_rewritten %lld after the first session, %lld after the second; %s\n", first,
                second, backend_line(d, "gpu0").c_str());
}
