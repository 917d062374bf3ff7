// SPDX-License-Identifier: MIT
// The confirmation rule (daemon/confirm/confirmation.hpp) through the real scheduler
// and CheckedBackend, with primaries that lie on purpose (no GPU needed).
//
// Multisig tables are built here from records whose verdicts are known by
// construction (really signed rows, and rows whose message was altered), with
// CHECKMULTISIG-like groups: signature i is tried against keys in order, and
// about half of the attempts are invalid, as in real blocks. Whatever the
// primary does, the client's GROUP verdicts (reference::compute_group_verdicts
// over the published row verdicts) must equal the true ones, and a primary
// caught lying is switched off.
#include <catch2/catch.hpp>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <vector>

#include "daemon/backends/checked_backend.hpp"
#include "daemon/confirm/confirmation.hpp"
#include "daemon/ops/metrics.hpp"
#include "daemon/schedule/scheduler.hpp"
#include "reference/group_verdicts.hpp"
#include "reference/row_generator.hpp"

using namespace sigverify;
using daemon::ChunkResult;
using daemon::ConfirmRule;
using daemon::CrossCheckPolicy;
using wire::Mode;

namespace {

// One row of a test table: a valid or broken record, and its tail.
struct Spec {
    bool valid;
    unsigned s, k;  // signature index, key index
    std::uint16_t group;
    std::uint32_t block;
};

struct Table {
    std::vector<std::uint8_t> rows;
    wire::RowSpan span;
    std::vector<std::uint8_t> truth;  // by construction
    std::map<std::uint64_t, std::size_t> index_of;  // first 8 message bytes -> row
};

std::uint64_t message_id(const std::uint8_t* record) {
    std::uint64_t id = 0;
    std::memcpy(&id, record, sizeof id);
    return id;
}

Table build(const std::vector<Spec>& spec, std::uint64_t seed = 5) {
    reference::GenOptions g;
    g.table = wire::Table::ecdsa;
    g.count = spec.size();
    g.invalid_rate = 0.0;
    g.high_s_rate = 0.0;
    g.seed = seed;
    g.threads = 1;
    const std::vector<std::uint8_t> signed_rows = reference::generate_rows(g);
    const std::size_t record = wire::kEcdsaRecordSize, in_stride = record + 3;
    const std::size_t stride = record + wire::canonical_tail_size(wire::Table::multisig);
    Table t;
    t.rows.resize(spec.size() * stride);
    t.truth.resize(spec.size());
    for (std::size_t i = 0; i < spec.size(); ++i) {
        std::uint8_t* row = t.rows.data() + i * stride;
        std::memcpy(row, signed_rows.data() + i * in_stride, record);
        if (!spec[i].valid) row[31] ^= 1;  // the message changed: the signature no longer verifies
        row[record] = std::uint8_t(spec[i].s << 4 | spec[i].k);
        wire::write_u16le(row + record + 1, spec[i].group);
        wire::write_u24le(row + record + 3, spec[i].block);
        t.truth[i] = spec[i].valid ? 1 : 0;
        t.index_of[message_id(row)] = i;
    }
    REQUIRE(t.index_of.size() == spec.size());
    t.span = wire::RowSpan{wire::RecordKind::ecdsa, stride - record, wire::SigEncoding::opaque, t.rows.data(),
                           spec.size()};
    return t;
}

// CHECKMULTISIG-like groups: m of n keys; signature i signed by key k_i
// (increasing), tried against the keys after k_{i-1} up to k_i, so every
// attempt before the matching key is invalid. A failing group has one
// signature whose matching attempt is broken too.
std::vector<Spec> multisig_groups(unsigned groups, double failing, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::vector<Spec> spec;
    for (unsigned g = 0; g < groups; ++g) {
        const unsigned n = 3 + unsigned(rng() % 3), m = 1 + unsigned(rng() % 2);
        std::vector<unsigned> keys(n);
        for (unsigned k = 0; k < n; ++k) keys[k] = k;
        std::shuffle(keys.begin(), keys.end(), rng);
        keys.resize(m);
        std::sort(keys.begin(), keys.end());
        const bool fails = std::uniform_real_distribution<>(0, 1)(rng) < failing;
        const unsigned broken = unsigned(rng() % m);
        const std::uint32_t block = 100 + g / 50;
        unsigned next = 0;
        for (unsigned i = 0; i < m; ++i) {
            for (unsigned k = next; k <= keys[i]; ++k)
                spec.push_back({k == keys[i] && !(fails && i == broken), i, k, std::uint16_t(g % 50), block});
            next = keys[i] + 1;
        }
    }
    return spec;
}

reference::GroupReport groups_of(const Table& t, const std::vector<std::uint8_t>& verdicts) {
    return reference::compute_group_verdicts(reference::GroupKind::multisig,
                                             reference::group_rows_from_rows(t.span, reference::GroupKind::multisig),
                                             verdicts);
}

std::vector<bool> passes(const reference::GroupReport& r) {
    std::vector<bool> out;
    for (const auto& g : r.groups) out.push_back(g.pass);
    return out;
}

// libsecp256k1's verdicts, then corrupt(job row, verdict) applied to each.
class LyingPrimary final : public daemon::Backend {
public:
    LyingPrimary(const Table& t, unsigned workers) : table_(t), workers_(workers), cpu_(workers) {}
    std::function<std::uint8_t(std::size_t row, std::uint8_t verdict)> corrupt;

    std::string name() const override { return "lying"; }
    unsigned concurrency() const override { return workers_; }
    std::size_t preferred_chunk_rows() const override { return 64; }
    ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override {
        ChunkResult r;
        r.tally = cpu_[worker].run(records, 0, records.count, Mode::results, verdicts);
        if (corrupt)
            for (std::size_t i = 0; i < records.count; ++i) {
                const auto it = table_.index_of.find(message_id(records.row(i)));
                if (it != table_.index_of.end()) verdicts[i] = corrupt(it->second, verdicts[i]);
            }
        return r;
    }

private:
    const Table& table_;
    unsigned workers_;
    std::vector<reference::RowVerifier> cpu_;
};

struct Sink final : daemon::JobSink {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    shm::Status status = shm::Status::ok;
    void finish_job(std::uint32_t, shm::Status s, const reference::Tally&) override {
        std::lock_guard lock(mutex);
        done = true;
        status = s;
        cv.notify_all();
    }
};

struct Run {
    std::vector<std::uint8_t> results;
    daemon::Metrics metrics;
    bool primary_enabled = true;
    std::uint64_t rechecked = 0, mismatches = 0, unconfirmed = 0;
};

struct Setup {
    unsigned workers = 2;
    std::size_t chunk_rows = 64;
    CrossCheckPolicy policy{0, 0, 0};  // no samples unless a test asks: the rule alone decides
    ConfirmRule rule = ConfirmRule::groups;
    std::uint8_t table = static_cast<std::uint8_t>(wire::Table::multisig);
    daemon::Backend* fallback = nullptr;  // the scheduler's CPU fallback (null: a CpuBackend of `workers`)
};

// One results-mode job of t (rows, or its libbitcoin columns) through a
// scheduler over CheckedBackend(primary) with a CPU fallback.
void run(Table& t, const Setup& setup, const std::function<std::uint8_t(std::size_t, std::uint8_t)>& corrupt, Run& out,
         reference::ColumnTable* columns = nullptr) {
    auto primary = std::make_unique<LyingPrimary>(t, setup.workers);
    primary->corrupt = corrupt;
    daemon::CheckedBackend checked(std::move(primary), setup.chunk_rows, setup.policy);
    daemon::CpuBackend cpu(setup.workers);
    daemon::Scheduler scheduler(checked, setup.fallback != nullptr ? setup.fallback : &cpu, setup.chunk_rows);
    scheduler.set_metrics(&out.metrics);
    scheduler.start();
    Sink sink;
    std::shared_ptr<daemon::JobQueue> q = scheduler.make_queue(sink, 1);
    out.results.assign(t.span.count, 0);
    daemon::Job& j = q->job(0);
    if (columns != nullptr) {
        j.is_columns = true;
        j.rows = wire::RowSpan{wire::RecordKind::ecdsa, 0, wire::SigEncoding::opaque, nullptr, t.span.count};
        j.columns = columns->view();
    } else {
        j.rows = t.span;
    }
    j.mode = Mode::results;
    j.results = out.results.data();
    j.table = setup.table;
    j.confirm = setup.rule;
    scheduler.submit(q, 0);
    {
        std::unique_lock lock(sink.mutex);
        REQUIRE(sink.cv.wait_for(lock, std::chrono::seconds(60), [&] { return sink.done; }));
        REQUIRE(sink.status == shm::Status::ok);
    }
    scheduler.stop();
    out.primary_enabled = checked.primary_enabled();
    out.rechecked = checked.counters().rows_rechecked;
    out.mismatches = checked.counters().mismatches;
    out.unconfirmed = checked.counters().invalid_unconfirmed;
}

std::size_t count_invalid(const std::vector<std::uint8_t>& v) {
    return std::size_t(std::count(v.begin(), v.end(), std::uint8_t(0)));
}

}  // namespace

TEST_CASE("an honest primary: exact verdicts, and far fewer rows confirmed than under strict", "[confirm]") {
    Table t = build(multisig_groups(400, 0.1, 1));
    const std::size_t invalid = count_invalid(t.truth);
    INFO(invalid << " of " << t.span.count << " rows invalid");
    REQUIRE(invalid > t.span.count * 2 / 5);  // CHECKMULTISIG-like: about half the attempts fail

    Run groups;
    Setup s;
    s.policy = CrossCheckPolicy{1024, 0, 64};
    run(t, s, {}, groups);
    CHECK(groups.results == t.truth);
    CHECK(groups.primary_enabled);
    CHECK(groups.metrics.confirm_batches_groups == 1);
    CHECK(groups.unconfirmed > 0);
    // Only the invalid rows of failing (and chunk-spanning) groups, and samples.
    CHECK(groups.rechecked < invalid / 2);

    Run strict;
    s.rule = ConfirmRule::strict;
    run(t, s, {}, strict);
    CHECK(strict.results == t.truth);
    CHECK(strict.metrics.confirm_batches_strict == 1);
    CHECK(strict.rechecked >= invalid);
    CHECK(strict.unconfirmed == 0);

    // Tables the groups rule does not know fall back to strict.
    Run unlabelled;
    s.rule = ConfirmRule::groups;
    s.table = shm::kTableUnspecified;
    run(t, s, {}, unlabelled);
    CHECK(unlabelled.metrics.confirm_batches_strict == 1);
    CHECK(unlabelled.rechecked >= invalid);
}

TEST_CASE("a needed valid row called invalid is confirmed, caught, and the group verdict stays right", "[confirm]") {
    Table t = build(multisig_groups(200, 0.0, 2));
    const auto truth_groups = passes(groups_of(t, t.truth));
    REQUIRE(std::all_of(truth_groups.begin(), truth_groups.end(), [](bool p) { return p; }));
    // Every valid row matches its signature's only key: flipping one fails its group.
    const std::size_t victim = std::size_t(std::find(t.truth.begin() + 300, t.truth.end(), 1) - t.truth.begin());
    Run r;
    run(t, Setup{}, [&](std::size_t row, std::uint8_t v) { return row == victim ? std::uint8_t(0) : v; }, r);
    CHECK_FALSE(r.primary_enabled);
    CHECK(r.mismatches == 1);
    CHECK(r.metrics.cpu_fallback_chunks >= 1);
    CHECK(r.results == t.truth);
    CHECK(passes(groups_of(t, r.results)) == truth_groups);
}

TEST_CASE("an invalid verdict invented in a failing group is caught", "[confirm]") {
    Table t = build(multisig_groups(200, 0.5, 3));
    const auto truth_report = groups_of(t, t.truth);
    // A valid row of a failing group.
    const auto rows = reference::group_rows_from_rows(t.span, reference::GroupKind::multisig);
    std::size_t victim = t.span.count;
    for (std::size_t i = 0; i < t.span.count && victim == t.span.count; ++i) {
        if (!t.truth[i]) continue;
        for (const auto& g : truth_report.groups)
            if (!g.pass && g.group == rows[i].group && g.block_fk == rows[i].block_fk) victim = i;
    }
    REQUIRE(victim < t.span.count);
    Run r;
    run(t, Setup{}, [&](std::size_t row, std::uint8_t v) { return row == victim ? std::uint8_t(0) : v; }, r);
    CHECK_FALSE(r.primary_enabled);
    CHECK(r.results == t.truth);
    CHECK(passes(groups_of(t, r.results)) == passes(truth_report));
}

TEST_CASE("an invalid row called valid is caught by the valid sample", "[confirm]") {
    Table t = build(multisig_groups(200, 0.3, 4));
    const std::size_t victim = std::size_t(std::find(t.truth.begin() + 200, t.truth.end(), 0) - t.truth.begin());
    Setup s;
    s.policy = CrossCheckPolicy{1, 0, 0};
    Run r;
    run(t, s, [&](std::size_t row, std::uint8_t v) { return row == victim ? std::uint8_t(1) : v; }, r);
    CHECK_FALSE(r.primary_enabled);
    CHECK(r.results == t.truth);
}

TEST_CASE("an unneeded invalid verdict in a passing group changes no group verdict; the invalid sample catches it",
          "[confirm]") {
    // Signature 0 matches keys 0 and 1, signature 1 matches key 2: the group
    // passes whether (0, 1) is valid or not.
    std::vector<Spec> spec = {{true, 0, 0, 7, 9}, {true, 0, 1, 7, 9}, {false, 1, 1, 7, 9}, {true, 1, 2, 7, 9}};
    for (const Spec& x : multisig_groups(50, 0.2, 5)) spec.push_back(x);
    Table t = build(spec);
    const auto truth_groups = passes(groups_of(t, t.truth));
    const auto lie = [](std::size_t row, std::uint8_t v) { return row == 1 ? std::uint8_t(0) : v; };

    Run unsampled;
    run(t, Setup{}, lie, unsampled);
    CHECK(unsampled.primary_enabled);  // nothing decided by that verdict was confirmed
    CHECK(unsampled.unconfirmed >= 1);
    CHECK(unsampled.results[1] == 0);  // the row verdict is the primary's ...
    CHECK(passes(groups_of(t, unsampled.results)) == truth_groups);  // ... the group verdicts are the true ones

    Setup s;
    s.policy = CrossCheckPolicy{0, 0, 1};  // every invalid verdict of passing groups sampled
    Run sampled;
    run(t, s, lie, sampled);
    CHECK_FALSE(sampled.primary_enabled);
    CHECK(sampled.results == t.truth);
}

TEST_CASE("a group split over chunks is judged whole: the first chunk's rows are re-verified at the end",
          "[confirm]") {
    // Chunk A (rows 0-1) holds signature 0's attempts, chunk B (row 2)
    // signature 1's. Truly the group passes with keys 0 < 1. The primary
    // calls (0, 0) invalid: chunk A alone still passes (signature 0 matched
    // by key 2), so it confirms nothing, yet with B the group would fail
    // (key 2 is not before key 1). The job-end repair re-verifies A's rows.
    std::vector<Spec> spec = {{true, 0, 0, 3, 4}, {true, 0, 2, 3, 4}, {true, 1, 1, 3, 4}};
    Table t = build(spec);
    Setup s;
    s.workers = 1;  // chunks in order: A registers the group first
    s.chunk_rows = 2;
    Run r;
    run(t, s, [](std::size_t row, std::uint8_t v) { return row == 0 ? std::uint8_t(0) : v; }, r);
    CHECK(r.primary_enabled);  // a repair blames nobody
    CHECK(r.metrics.confirm_repaired_rows == 1);  // A's INVALID row; its VALID one stands
    CHECK(r.results == t.truth);
    CHECK(passes(groups_of(t, r.results)) == std::vector<bool>{true});
}

// The scheduler's CPU fallback, counting the rows each worker had it verify.
// With an honest primary and no batch split the job-end group repair is its
// only use.
class CountingFallback final : public daemon::Backend {
public:
    explicit CountingFallback(unsigned workers) : cpu_(workers), rows_(workers) {}
    std::string name() const override { return "counting cpu"; }
    unsigned concurrency() const override { return cpu_.concurrency(); }
    std::size_t preferred_chunk_rows() const override { return cpu_.preferred_chunk_rows(); }
    ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override {
        rows_[worker] += records.count;  // one counter a worker: no other thread writes it
        return cpu_.verify(worker, records, verdicts);
    }
    const std::vector<std::uint64_t>& rows() const { return rows_; }

private:
    daemon::CpuBackend cpu_;
    std::vector<std::uint64_t> rows_;
};

TEST_CASE("the job-end repair of one batch is handed out to every worker, each wanted row verified once",
          "[confirm][repair]") {
    // tests/reliability/spanning_groups.hpp's long_repair_groups as a table:
    // group g's attempts (0, 0) (valid) to (0, 7) (invalid, a signature
    // check each) are rows 8g..8g+7, its attempt (0, 8) (invalid) row 8G + g.
    // 64-row chunks of the first part hold whole groups, which pass there;
    // the last part's chunks meet every group again, so the repair
    // re-verifies 7 INVALID rows of each, 7,168 in all: ~0.3 s of one core,
    // 128 first chunks to rescan. Before, the worker that finished the last
    // chunk repaired alone while the other waited.
    constexpr unsigned kGroups = 1024;
    std::vector<Spec> spec;
    for (unsigned g = 0; g < kGroups; ++g)
        for (unsigned k = 0; k < 8; ++k) spec.push_back({k == 0, 0, k, std::uint16_t(g), 7});
    for (unsigned g = 0; g < kGroups; ++g) spec.push_back({false, 0, 8, std::uint16_t(g), 7});
    Table t = build(spec);
    CountingFallback fallback(2);
    Setup s;
    s.workers = 2;
    s.chunk_rows = 64;
    s.fallback = &fallback;
    Run r;
    run(t, s, nullptr, r);
    CHECK(r.metrics.confirm_repaired_rows == 7 * kGroups);
    CHECK(fallback.rows()[0] + fallback.rows()[1] == 7 * kGroups);  // each wanted row once
    INFO("rows repaired by worker 0: " << fallback.rows()[0] << ", by worker 1: " << fallback.rows()[1]);
    CHECK(fallback.rows()[0] > 0);
    CHECK(fallback.rows()[1] > 0);
    CHECK(r.results == t.truth);
    CHECK(passes(groups_of(t, r.results)) == std::vector<bool>(kGroups, true));
}

TEST_CASE("the job-end repair's last piece decides verdicts: every group of it stays true", "[confirm][repair]") {
    // The test above sees a dropped repair piece only in a row count: its
    // repaired rows are truly invalid. Here each repaired row decides its
    // group. Group g: rows 2g (0, 0) and 2g+1 (0, 2), both valid, then row
    // 2G + g (1, 1), valid: truly the group passes (keys 0 < 1). The primary
    // calls every (0, 0) invalid. A first-part chunk (64 rows, 32 whole
    // groups) still passes each group on (0, 2) and confirms nothing; with
    // (1, 1) the group would fail (key 2 is not before key 1). So only the
    // job-end repair of the first part's chunks (one 64-row piece each, the
    // last one rows 192-255) gives the true verdicts: any piece left out
    // fails the groups of its chunk.
    constexpr unsigned kGroups = 128;
    std::vector<Spec> spec;
    for (unsigned g = 0; g < kGroups; ++g) {
        spec.push_back({true, 0, 0, std::uint16_t(g), 9});
        spec.push_back({true, 0, 2, std::uint16_t(g), 9});
    }
    for (unsigned g = 0; g < kGroups; ++g) spec.push_back({true, 1, 1, std::uint16_t(g), 9});
    Table t = build(spec);
    REQUIRE(passes(groups_of(t, t.truth)) == std::vector<bool>(kGroups, true));
    Setup s;
    s.workers = 1;  // chunks in order: the first part registers every group first
    s.chunk_rows = 64;
    Run r;
    run(t, s, [&](std::size_t row, std::uint8_t v) { return row < 2 * kGroups && row % 2 == 0 ? std::uint8_t(0) : v; },
        r);
    CHECK(r.primary_enabled);  // a repair blames nobody
    CHECK(r.unconfirmed == kGroups);  // no chunk confirmed a lie: only the repair can
    CHECK(r.results == t.truth);
    const std::vector<bool> got = passes(groups_of(t, r.results));
    REQUIRE(got.size() == kGroups);
    // The last piece's groups (96-127) by name, then all.
    CHECK(std::vector<bool>(got.begin() + 96, got.end()) == std::vector<bool>(32, true));
    CHECK(got == std::vector<bool>(kGroups, true));
}

TEST_CASE("small chunks and several workers: group verdicts stay exact", "[confirm]") {
    Table t = build(multisig_groups(300, 0.2, 6));
    const auto truth_groups = passes(groups_of(t, t.truth));
    // A primary that drops every valid verdict of signature 0 at key 0:
    // caught wherever it decides a group, harmless where it does not.
    const auto lie = [&](std::size_t row, std::uint8_t v) {
        const std::uint8_t mn = t.span.row(row)[wire::kEcdsaRecordSize];
        return mn == 0 ? std::uint8_t(0) : v;
    };
    for (std::size_t chunk : {std::size_t(5), std::size_t(64)}) {
        Setup s;
        s.chunk_rows = chunk;
        Run r;
        run(t, s, lie, r);
        CHECK(passes(groups_of(t, r.results)) == truth_groups);
    }
}

TEST_CASE("libbitcoin multisig columns use the groups rule through the correlate", "[confirm]") {
    Table t = build(multisig_groups(200, 0.2, 7));
    reference::ColumnTable columns =
        reference::rows_to_columns(t.span, reference::CorrelateLayout::libbitcoin, wire::Table::multisig);
    const std::size_t invalid = count_invalid(t.truth);
    Run honest;
    run(t, Setup{}, {}, honest, &columns);
    CHECK(honest.results == t.truth);
    CHECK(honest.metrics.confirm_batches_groups == 1);
    CHECK(honest.rechecked < invalid / 2);

    const std::size_t victim = std::size_t(std::find(t.truth.begin() + 100, t.truth.end(), 1) - t.truth.begin());
    Run lying;
    run(t, Setup{}, [&](std::size_t row, std::uint8_t v) { return row == victim ? std::uint8_t(0) : v; }, lying,
        &columns);
    CHECK(passes(groups_of(t, lying.results)) == passes(groups_of(t, t.truth)));
}

TEST_CASE("mark_rows_to_confirm marks exactly the invalid rows of the groups the group rule fails", "[confirm]") {
    // Random groups and verdicts against reference::compute_group_verdicts.
    std::mt19937_64 rng(11);
    for (int round = 0; round < 200; ++round) {
        daemon::ChunkGroups g;
        const std::size_t n = 1 + rng() % 60;
        g.key.resize(n);
        g.mn.resize(n);
        g.spanning.assign(n, 0);
        g.count = n;
        std::vector<reference::GroupRow> rows(n);
        std::vector<std::uint8_t> verdicts(n);
        for (std::size_t i = 0; i < n; ++i) {
            // Odd rounds: pairs of up to 20 keys (codes beyond the nibbles, multisig_pair.hpp).
            const unsigned s = unsigned(rng() % 3), k = std::min(19u, s + unsigned(rng() % 18));
            const std::uint8_t mn = round % 2 ? *reference::encode_multisig_pair(s, k)
                                              : std::uint8_t(rng() % 3 << 4 | rng() % 4);
            rows[i] = {mn, std::uint16_t(rng() % 4), std::uint32_t(rng() % 2)};
            g.key[i] = (std::uint64_t(rows[i].block_fk) << 16) | rows[i].group;
            g.mn[i] = rows[i].mn;
            verdicts[i] = rng() % 2;
        }
        std::vector<std::uint8_t> need(n);
        std::vector<std::pair<daemon::GroupKey, std::uint32_t>> order;
        daemon::mark_rows_to_confirm(g, verdicts.data(), need.data(), order);
        const auto report = reference::compute_group_verdicts(reference::GroupKind::multisig, rows, verdicts);
        for (std::size_t i = 0; i < n; ++i) {
            bool group_passes = false;
            for (const auto& v : report.groups)
                if (v.block_fk == rows[i].block_fk && v.group == rows[i].group) group_passes = v.pass;
            REQUIRE(need[i] == ((!group_passes && verdicts[i] == 0) ? 1 : 0));
        }
    }
}

TEST_CASE("GroupLedger: a group met by a second chunk is spanning and the first chunk's rows are repaired",
          "[confirm]") {
    daemon::GroupLedger ledger;
    daemon::ChunkGroups a, b;
    a.key = {1, 2, 1, daemon::kNoGroup};  // key 1 twice in one chunk is not spanning
    b.key = {3, 2};
    for (auto* g : {&a, &b}) {
        g->mn.assign(g->key.size(), 0);
        g->spanning.assign(g->key.size(), 9);
        g->count = g->key.size();
    }
    ledger.register_chunk(0, 4, a);
    CHECK(a.spanning == std::vector<std::uint8_t>{0, 0, 0, 9});  // no-group rows are not touched
    ledger.register_chunk(4, 6, b);
    CHECK(b.spanning == std::vector<std::uint8_t>{0, 1});
    const auto repairs = ledger.take_repairs();
    // Chunk a (rows 0-4) is to be rescanned, once, for its rows of group 2 only.
    REQUIRE(repairs.ranges().size() == 1);
    CHECK(repairs.ranges()[0].begin == 0);
    CHECK(repairs.ranges()[0].end == 4);
    CHECK(repairs.wanted(2, repairs.ranges()[0]));
    CHECK_FALSE(repairs.wanted(1, repairs.ranges()[0]));
    CHECK_FALSE(repairs.wanted(3, daemon::GroupLedger::Range{4, 6}));
    CHECK(ledger.take_repairs().ranges().empty());  // taken once
}

TEST_CASE("GroupLedger: many groups spanning the same chunks list each first chunk once", "[confirm]") {
    // 1,000 groups, each in chunks [0, 1000) and [1000, 2000): one range to
    // rescan, not one per group (the quadratic repair of issue 29.3).
    daemon::GroupLedger ledger;
    daemon::ChunkGroups a, b;
    for (auto* g : {&a, &b}) {
        for (daemon::GroupKey k = 0; k < 1000; ++k) g->key.push_back(k * 7 % 1000);
        g->mn.assign(1000, 0);
        g->spanning.assign(1000, 0);
        g->count = 1000;
    }
    ledger.register_chunk(0, 1000, a);
    ledger.register_chunk(1000, 2000, b);
    CHECK(std::count(b.spanning.begin(), b.spanning.end(), 1) == 1000);
    const auto repairs = ledger.take_repairs();
    REQUIRE(repairs.ranges().size() == 1);
    CHECK(repairs.ranges()[0].begin == 0);
    for (daemon::GroupKey k = 0; k < 1000; ++k) CHECK(repairs.wanted(k, repairs.ranges()[0]));
}

// --- Groups that span chunks (issue 28.1) ------------------------------------
// A 2-of-4 group whose keys 1 and 3 are the same key: signature 0 (made by
// that key) verifies under both, signature 1 only under key 2. Truly it
// passes (signature 0 at key 1, signature 1 at key 2); with (0, 1) called
// invalid it fails (signature 0 at key 3 leaves no key after it for
// signature 1): (0, 1) is a needed valid row. One worker and 2-row chunks
// run the chunks in order, so the first chunk registers the group.
namespace {

constexpr std::uint16_t kDupGroup = 5;
constexpr std::uint32_t kDupBlock = 7;

Spec dup_row(unsigned s, unsigned k) {
    const bool valid = (s == 0 && (k == 1 || k == 3)) || (s == 1 && k == 2);
    return {valid, s, k, kDupGroup, kDupBlock};
}

std::size_t row_of(const std::vector<Spec>& spec, unsigned s, unsigned k) {
    for (std::size_t i = 0; i < spec.size(); ++i)
        if (spec[i].s == s && spec[i].k == k) return i;
    throw std::logic_error("row_of: no such attempt");
}

Setup one_worker_chunks_of(std::size_t rows) {
    Setup s;
    s.workers = 1;
    s.chunk_rows = rows;
    return s;
}

}  // namespace

TEST_CASE("spanning groups: a later chunk whose partial group passes while the whole group fails is confirmed",
          "[confirm][spanning]") {
    // Chunks A {(1,0), (1,2)}, B {(1,1), (1,3)}, C {(0,1), (0,3)}. The
    // primary calls C's (0, 1) invalid. C alone passes (signature 0 at key 3)
    // so, judged alone, C would confirm nothing; the group spans three chunks,
    // C's rows carry the spanning flag, and every INVALID of them is confirmed.
    const std::vector<Spec> spec = {dup_row(1, 0), dup_row(1, 2), dup_row(1, 1),
                                    dup_row(1, 3), dup_row(0, 1), dup_row(0, 3)};
    Table t = build(spec);
    REQUIRE(passes(groups_of(t, t.truth)) == std::vector<bool>{true});
    const std::size_t victim = row_of(spec, 0, 1);
    REQUIRE(victim / 2 == 2);  // in the third chunk
    Run r;
    run(t, one_worker_chunks_of(2),
        [&](std::size_t row, std::uint8_t v) { return row == victim ? std::uint8_t(0) : v; }, r);
    CHECK_FALSE(r.primary_enabled);  // caught by the confirmation
    CHECK(r.mismatches == 1);
    CHECK(r.results == t.truth);
    CHECK(passes(groups_of(t, r.results)) == std::vector<bool>{true});
}

TEST_CASE("spanning groups: a first chunk whose partial group passes while the whole group fails is repaired",
          "[confirm][spanning]") {
    // Chunks A {(0,1), (0,3)}, B {(1,0), (1,2)}, C {(1,1), (1,3)}. The
    // primary calls A's (0, 1) invalid; A alone passes (signature 0 at key 3),
    // so A confirms nothing. B and C find the group spanning; the job-end
    // repair re-verifies A's INVALID rows of it, and the group passes.
    const std::vector<Spec> spec = {dup_row(0, 1), dup_row(0, 3), dup_row(1, 0),
                                    dup_row(1, 2), dup_row(1, 1), dup_row(1, 3)};
    Table t = build(spec);
    const std::size_t victim = row_of(spec, 0, 1);
    REQUIRE(victim / 2 == 0);
    Run r;
    run(t, one_worker_chunks_of(2),
        [&](std::size_t row, std::uint8_t v) { return row == victim ? std::uint8_t(0) : v; }, r);
    CHECK(r.primary_enabled);  // a repair blames nobody
    CHECK(r.mismatches == 0);
    CHECK(r.metrics.confirm_repaired_rows == 1);  // A's one INVALID row of the group (its VALID one stands)
    CHECK(r.results == t.truth);
    CHECK(passes(groups_of(t, r.results)) == std::vector<bool>{true});
}

TEST_CASE("spanning groups: a later chunk whose partial group fails while the whole group passes",
          "[confirm][spanning]") {
    // Chunks A {(0,1), (1,2)} (passes alone), B {(1,0), (1,1)} and
    // C {(1,3), (0,3)}: B alone fails (signature 1 has no valid key), the
    // whole group passes (signature 0 at key 1, signature 1 at key 2, both
    // in A). The primary calls C's valid (0, 3) invalid, which decides
    // nothing: C is spanning, so the lie is confirmed and caught anyway.
    const std::vector<Spec> spec = {dup_row(0, 1), dup_row(1, 2), dup_row(1, 0),
                                    dup_row(1, 1), dup_row(1, 3), dup_row(0, 3)};
    Table t = build(spec);
    const std::size_t unneeded = row_of(spec, 0, 3);
    Run honest;
    run(t, one_worker_chunks_of(2), {}, honest);
    CHECK(honest.results == t.truth);
    CHECK(honest.primary_enabled);
    CHECK(honest.metrics.confirm_repaired_rows == 0);  // A had no INVALID row of it

    Run lying;
    run(t, one_worker_chunks_of(2),
        [&](std::size_t row, std::uint8_t v) { return row == unneeded ? std::uint8_t(0) : v; }, lying);
    CHECK_FALSE(lying.primary_enabled);
    CHECK(lying.results == t.truth);
    CHECK(passes(groups_of(t, lying.results)) == std::vector<bool>{true});
}

namespace {

// Random m-of-n groups with repeated keys: key k of a group is one of a few
// key identities (so a key may be listed twice), signature s is made by one
// identity; attempt (s, k) is valid when they match. A random subset of the
// attempts is present.
std::vector<Spec> random_groups(std::mt19937_64& rng, unsigned groups) {
    std::vector<Spec> spec;
    for (unsigned g = 0; g < groups; ++g) {
        const unsigned n = 1 + unsigned(rng() % 6), m = 1 + unsigned(rng() % n);
        const unsigned identities = 1 + unsigned(rng() % n);
        std::vector<unsigned> key_id(n), signer(m);
        for (auto& id : key_id) id = unsigned(rng() % identities);
        for (auto& id : signer) id = unsigned(rng() % identities);
        const std::uint32_t block = 1 + g % 3;
        for (unsigned s = 0; s < m; ++s)
            for (unsigned k = 0; k < n; ++k)
                if (rng() % 10 < 7) spec.push_back({signer[s] == key_id[k], s, k, std::uint16_t(g), block});
    }
    return spec;
}

}  // namespace

TEST_CASE("spanning groups: random groups over random chunk boundaries keep their group verdicts",
          "[confirm][spanning]") {
    // Rows in group order, in a random order, or in group order with random
    // swaps; random chunk sizes, one or two workers; a primary that calls a
    // VALID row invalid. The published group verdicts must be
    // reference::compute_group_verdicts' over the true row verdicts, and a
    // row may differ from the truth only as a VALID row of a passing group
    // read invalid (an unneeded attempt, left unconfirmed).
    std::mt19937_64 rng(2801);
    unsigned lies_that_decided = 0;
    for (int round = 0; round < 96; ++round) {
        std::vector<Spec> spec = random_groups(rng, 24);
        const int layout = round % 3;
        if (layout == 1) std::shuffle(spec.begin(), spec.end(), rng);
        if (layout == 2)
            for (std::size_t swaps = spec.size() / 4; swaps-- > 0;)
                std::swap(spec[rng() % spec.size()], spec[rng() % spec.size()]);
        Table t = build(spec, 100 + std::uint64_t(round));
        // One lie a round, on a NEEDED valid row where there is one (its
        // flip alone fails its group): caught or repaired, or a group fails.
        // (More lies would mostly get the primary switched off at the first.)
        const auto truth_report = groups_of(t, t.truth);
        std::vector<std::size_t> needed, valid_rows;
        for (std::size_t i = 0; i < spec.size(); ++i) {
            if (!spec[i].valid) continue;
            valid_rows.push_back(i);
            std::vector<std::uint8_t> lied = t.truth;
            lied[i] = 0;
            if (passes(groups_of(t, lied)) != passes(truth_report)) needed.push_back(i);
        }
        REQUIRE_FALSE(valid_rows.empty());
        const std::size_t victim =
            needed.empty() ? valid_rows[rng() % valid_rows.size()] : needed[rng() % needed.size()];
        if (!needed.empty()) ++lies_that_decided;
        std::vector<bool> lie(spec.size());
        lie[victim] = true;

        Setup s;
        s.workers = 1 + unsigned(round % 2);
        s.chunk_rows = 1 + rng() % 24;
        INFO("round " << round << ", layout " << layout << ", " << spec.size() << " rows, chunks of "
                      << s.chunk_rows << ", " << s.workers << " workers");
        Run r;
        run(t, s, [&](std::size_t row, std::uint8_t v) { return lie[row] ? std::uint8_t(0) : v; }, r);
        REQUIRE(passes(groups_of(t, r.results)) == passes(truth_report));
        const auto rows = reference::group_rows_from_rows(t.span, reference::GroupKind::multisig);
        for (std::size_t i = 0; i < spec.size(); ++i) {
            if (r.results[i] == t.truth[i]) continue;
            INFO("row " << i);
            REQUIRE(t.truth[i] == 1);  // never an invalid row reported valid
            for (const auto& g : truth_report.groups)
                if (g.group == rows[i].group && g.block_fk == rows[i].block_fk) REQUIRE(g.pass);
        }
    }
    // The lies often decide a group: the rounds test the rule, not luck.
    CHECK(lies_that_decided >= 48);
}
