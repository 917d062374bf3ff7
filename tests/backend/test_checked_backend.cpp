// SPDX-License-Identifier: MIT
// CheckedBackend: a primary backend's verdicts are handed back only after
// libsecp256k1 agreed. Driven with a deliberately faulty primary (no GPU
// needed): wrong verdicts, garbage verdicts, errors, and a client that
// rewrites its rows while they are verified.
//
// As in the daemon, the checked backend gets the scheduler's private staged
// records (daemon::stage_rows) and private verdict bytes; what the client
// sees is then published by the one publish rule (wire::publish_verdicts).
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <functional>
#include <vector>

#include "daemon/backends/checked_backend.hpp"
#include "daemon/backends/host_kernel_backend.hpp"
#include "daemon/memory/staging.hpp"
#include "reference/row_generator.hpp"
#include "shm_protocol/verdict_publish.hpp"

using namespace sigverify;
using daemon::CheckedBackend;
using daemon::ChunkResult;
using daemon::CrossCheckPolicy;
using daemon::subspan;
using wire::Mode;

namespace {

// A CPU backend whose verdicts can be corrupted on purpose.
class FaultyBackend final : public daemon::Backend {
public:
    std::function<std::uint8_t(std::size_t row, std::uint8_t truth)> corrupt;  // row index within the call
    std::function<void()> during_verify;  // runs between reading and answering
    int fail_after_chunks = -1;           // this many good chunks, then errors
    std::atomic<int> chunks{0};

    std::string name() const override { return "faulty"; }
    unsigned concurrency() const override { return 2; }
    std::size_t preferred_chunk_rows() const override { return 1000; }
    ChunkResult verify(unsigned, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override {
        if (fail_after_chunks >= 0 && chunks.fetch_add(1) >= fail_after_chunks) return {shm::Status::backend_error, {}};
        REQUIRE(records.tail_size == 0);  // it verifies the scheduler's private, tail-less copy
        ChunkResult r;
        r.tally = cpu_.run(records, 0, records.count, Mode::results, verdicts);
        if (during_verify) during_verify();
        if (corrupt)
            for (std::size_t i = 0; i < records.count; ++i) verdicts[i] = corrupt(i, verdicts[i]);
        return r;
    }

private:
    reference::RowVerifier cpu_;
};

// The client's rows (with their tails), as they lie in its arena.
struct Data {
    std::vector<std::uint8_t> rows;
    wire::RowSpan span;
};

Data make(wire::Table t, std::size_t n, double invalid_rate, std::uint64_t seed = 3) {
    reference::GenOptions o;
    o.table = t;
    o.count = n;
    o.invalid_rate = invalid_rate;
    o.high_s_rate = 0.2;
    o.seed = seed;
    Data d{reference::generate_rows(o), {}};
    d.span = wire::RowSpan{wire::record_kind(t), wire::canonical_tail_size(t), wire::SigEncoding::opaque, d.rows.data(), n};
    return d;
}

// The scheduler's first step: the records copied out of the client's rows.
struct Staged {
    std::vector<std::uint8_t> records;
    wire::RowSpan span;
};

Staged stage(const Data& d) {
    Staged s;
    s.records.resize(d.span.count * wire::record_size(d.span.kind));
    s.span = daemon::stage_rows(d.span, 0, d.span.count, s.records.data());
    return s;
}

std::vector<std::uint8_t> truth(const wire::RowSpan& span) {
    std::vector<std::uint8_t> r(span.count);
    reference::Verifier(2).verify(span, r.data());
    return r;
}

// Rows [begin, end) of `before` as collect mode must leave them: tails of the valid rows zeroed.
void check_collected(const Data& d, const std::vector<std::uint8_t>& before, const std::vector<std::uint8_t>& expected,
                     std::size_t begin, std::size_t end) {
    const std::size_t stride = d.span.row_stride(), record = wire::record_size(d.span.kind);
    for (std::size_t i = begin; i < end; ++i) {
        std::vector<std::uint8_t> want(before.begin() + i * stride, before.begin() + (i + 1) * stride);
        if (expected[i]) std::fill(want.begin() + record, want.end(), 0);
        REQUIRE(std::equal(want.begin(), want.end(), d.rows.begin() + i * stride));
    }
}

}  // namespace

TEST_CASE("an honest primary: verdicts and collected tails equal libsecp256k1's", "[crosscheck]") {
    for (auto t : {wire::Table::ecdsa, wire::Table::multisig, wire::Table::schnorr, wire::Table::threshold}) {
        auto d = make(t, 3000, 0.2);
        const auto expected = truth(d.span);
        const Staged s = stage(d);
        auto primary = std::make_unique<FaultyBackend>();
        CheckedBackend checked(std::move(primary), 700, CrossCheckPolicy{1024});
        REQUIRE(checked.concurrency() == 2);
        REQUIRE(checked.preferred_chunk_rows() == 700);

        std::vector<std::uint8_t> verdicts(d.span.count, 0xEE);
        const ChunkResult r = checked.verify(1, s.span, verdicts.data());
        REQUIRE(r.status == shm::Status::ok);
        CHECK(verdicts == expected);
        std::uint64_t invalid = 0;
        for (auto v : expected) invalid += v == 0;
        CHECK(r.tally.invalid == invalid);
        CHECK(r.tally.valid == d.span.count - invalid);
        // Every invalid verdict was re-verified.
        CHECK(checked.counters().rows_rechecked >= invalid);
        CHECK(checked.counters().mismatches == 0);

        // Collect: publishing the checked verdicts zeroes exactly the valid rows' tails.
        const auto before = d.rows;
        wire::publish_verdicts(Mode::collect, wire::row_tails(d.span), nullptr, 0, verdicts.data(), d.span.count);
        check_collected(d, before, expected, 0, d.span.count);
        CHECK(checked.primary_enabled());
    }
}

TEST_CASE("a valid row called invalid is caught, nothing is handed back, the primary is switched off", "[crosscheck]") {
    auto d = make(wire::Table::ecdsa, 2000, 0.1);
    const auto expected = truth(d.span);
    const Staged s = stage(d);
    std::size_t victim = 0;
    while (!expected[victim]) ++victim;
    auto primary = std::make_unique<FaultyBackend>();
    primary->corrupt = [victim](std::size_t i, std::uint8_t v) { return i == victim % 500 ? std::uint8_t(0) : v; };
    std::string reason;
    CheckedBackend checked(std::move(primary), 500, CrossCheckPolicy{0}, [&](const std::string& r) { reason = r; });
    std::vector<std::uint8_t> verdicts(d.span.count, 0xEE);
    const ChunkResult r = checked.verify(0, s.span, verdicts.data());
    CHECK(r.status == shm::Status::backend_error);
    CHECK_FALSE(checked.primary_enabled());
    CHECK(checked.counters().mismatches == 1);
    CHECK(reason.find("disagrees with libsecp256k1") != std::string::npos);
    // The failing piece handed back nothing (the scheduler publishes nothing
    // and re-runs the chunk on the CPU).
    const std::size_t piece = victim / 500 * 500;
    for (std::size_t i = piece; i < piece + 500; ++i) REQUIRE(verdicts[i] == 0xEE);
    // From now on every chunk is refused, so the CPU fallback takes over.
    CHECK(checked.verify(1, subspan(s.span, 0, 10), verdicts.data()).status == shm::Status::backend_error);
    CHECK(checked.counters().refused_chunks >= 1);
}

TEST_CASE("an invalid row called valid is caught by the valid-row sample", "[crosscheck]") {
    auto d = make(wire::Table::schnorr, 1000, 0.3);
    const Staged s = stage(d);
    auto primary = std::make_unique<FaultyBackend>();
    primary->corrupt = [](std::size_t, std::uint8_t) { return std::uint8_t(1); };  // everything "valid"
    CheckedBackend checked(std::move(primary), 1000, CrossCheckPolicy{1});
    std::vector<std::uint8_t> verdicts(d.span.count, 0xEE);
    const ChunkResult r = checked.verify(0, s.span, verdicts.data());
    CHECK(r.status == shm::Status::backend_error);
    CHECK(checked.counters().mismatches == 1);
    // No "valid" came back, so no tail can be zeroed on the primary's word.
    CHECK(verdicts == std::vector<std::uint8_t>(d.span.count, 0xEE));
}

TEST_CASE("with the default 1-in-1024 sample, a primary that accepts everything is found and switched off", "[crosscheck]") {
    // The documented trade-off of sampling: a false VALID is caught only when
    // a sampled row hits it, so a few chunks may be published before the
    // primary is switched off (valid_sample_every = 1 closes that window; the
    // test above shows it). Here 30% of the rows are invalid, about 4 rows in
    // each 4096-row chunk are sampled: the fault is found within a few chunks.
    auto d = make(wire::Table::ecdsa, 8192, 0.3);
    const Staged s = stage(d);
    auto primary = std::make_unique<FaultyBackend>();
    primary->corrupt = [](std::size_t, std::uint8_t) { return std::uint8_t(1); };
    CheckedBackend checked(std::move(primary), 4096, CrossCheckPolicy{});
    std::vector<std::uint8_t> verdicts(d.span.count, 0xEE);
    std::size_t chunks = 0;
    while (checked.primary_enabled() && chunks < 60) {
        const std::size_t b = (chunks++ % 2) * 4096;
        checked.verify(0, subspan(s.span, b, b + 4096), verdicts.data() + b);
    }
    CHECK_FALSE(checked.primary_enabled());
    CHECK(checked.counters().mismatches == 1);
    CHECK(checked.counters().rows_rechecked > 0);
}

TEST_CASE("garbage verdict bytes are mismatches", "[crosscheck]") {
    auto d = make(wire::Table::ecdsa, 300, 0.0);
    const Staged s = stage(d);
    auto primary = std::make_unique<FaultyBackend>();
    primary->corrupt = [](std::size_t i, std::uint8_t v) { return i == 17 ? std::uint8_t(2) : v; };
    CheckedBackend checked(std::move(primary), 300, CrossCheckPolicy{0});
    std::vector<std::uint8_t> verdicts(300);
    CHECK(checked.verify(0, s.span, verdicts.data()).status == shm::Status::backend_error);
    CHECK(checked.counters().mismatches == 1);
}

TEST_CASE("a primary error fails the chunk and disables the primary", "[crosscheck]") {
    auto d = make(wire::Table::threshold, 2000, 0.1);
    const Staged s = stage(d);
    auto primary = std::make_unique<FaultyBackend>();
    primary->fail_after_chunks = 2;
    CheckedBackend checked(std::move(primary), 500, CrossCheckPolicy{});
    std::vector<std::uint8_t> verdicts(d.span.count, 0xEE);
    CHECK(checked.verify(0, subspan(s.span, 0, 1000), verdicts.data()).status == shm::Status::ok);
    CHECK(checked.verify(0, subspan(s.span, 1000, 2000), verdicts.data() + 1000).status ==
          shm::Status::backend_error);
    CHECK(checked.counters().primary_errors == 1);
    CHECK_FALSE(checked.primary_enabled());
    const auto expected = truth(d.span);
    CHECK(std::equal(verdicts.begin(), verdicts.begin() + 1000, expected.begin()));
}

TEST_CASE("a client rewriting its rows during verification cannot cause a mismatch", "[crosscheck]") {
    // The scheduler stages the records out of the client's rows first, and the
    // primary and libsecp256k1 both judge that private copy, so garbage written
    // into the client's rows mid-verification never switches the primary off
    // (which a hostile client could otherwise use against everyone); it can
    // only change the client's own verdicts, and here not even those.
    auto d = make(wire::Table::ecdsa, 1000, 0.2);
    const auto expected = truth(d.span);
    const auto original = d.rows;
    const Staged s = stage(d);  // daemon::stage_rows, as the scheduler does
    auto primary = std::make_unique<FaultyBackend>();
    std::uint8_t* shared_rows = d.rows.data();
    const std::size_t bytes = d.rows.size();
    std::uint32_t x = 12345;
    primary->during_verify = [&] {
        for (std::size_t i = 0; i < bytes; ++i) shared_rows[i] = std::uint8_t(x = x * 1103515245u + 12345u);
    };
    CheckedBackend checked(std::move(primary), 250, CrossCheckPolicy{1});
    std::vector<std::uint8_t> verdicts(d.span.count);
    const ChunkResult r = checked.verify(0, s.span, verdicts.data());
    CHECK(d.rows != original);  // the client really did scribble
    CHECK(r.status == shm::Status::ok);
    CHECK(checked.counters().mismatches == 0);
    CHECK(checked.primary_enabled());
    CHECK(verdicts == expected);
}

TEST_CASE("bad arguments are refused without touching anything", "[crosscheck]") {
    auto d = make(wire::Table::ecdsa, 10, 0.0);
    const Staged s = stage(d);
    CheckedBackend checked(std::make_unique<FaultyBackend>(), 100, CrossCheckPolicy{});
    std::vector<std::uint8_t> verdicts(10, 0xEE);
    CHECK(checked.verify(2, s.span, verdicts.data()).status == shm::Status::backend_error);  // no such worker
    wire::RowSpan bad = s.span;
    bad.tail_size = wire::kMaxTailSize + 1;  // not a valid span
    CHECK(checked.verify(0, bad, verdicts.data()).status == shm::Status::backend_error);
    CHECK(checked.verify(0, s.span, nullptr).status == shm::Status::backend_error);
    CHECK(verdicts == std::vector<std::uint8_t>(10, 0xEE));
    CHECK(checked.primary_enabled());
}

TEST_CASE("pieces below cpu_below_rows are verified on the CPU and never reach the primary", "[crosscheck]") {
    for (auto t : {wire::Table::ecdsa, wire::Table::schnorr}) {
        auto d = make(t, 64, 0.3, 11);
        const auto expected = truth(d.span);
        const Staged s = stage(d);
        auto primary = std::make_unique<FaultyBackend>();
        FaultyBackend& faulty = *primary;
        faulty.fail_after_chunks = 0;  // any call to the primary fails (and would switch it off)
        CheckedBackend checked(std::move(primary), 100, CrossCheckPolicy{1024, 16});

        std::vector<std::uint8_t> verdicts(d.span.count, 0xEE);
        // 15-row and 1-row pieces: below the threshold, the CPU answers.
        REQUIRE(checked.verify(0, subspan(s.span, 0, 15), verdicts.data()).status == shm::Status::ok);
        REQUIRE(checked.verify(1, subspan(s.span, 15, 16), verdicts.data() + 15).status == shm::Status::ok);
        CHECK(std::equal(verdicts.begin(), verdicts.begin() + 16, expected.begin()));
        CHECK(faulty.chunks == 0);
        CHECK(checked.counters().rows_small == 16);
        CHECK(checked.primary_enabled());

        // Collect below the threshold: publishing zeroes exactly the valid rows' tails.
        const auto before = d.rows;
        REQUIRE(checked.verify(0, subspan(s.span, 16, 26), verdicts.data() + 16).status == shm::Status::ok);
        wire::publish_verdicts(Mode::collect, wire::row_tails(d.span), nullptr, 16, verdicts.data() + 16, 10);
        check_collected(d, before, expected, 16, 26);

        // A 16-row piece is the primary's: here it fails, and the chunk with it.
        CHECK(checked.verify(0, subspan(s.span, 26, 42), verdicts.data() + 26).status == shm::Status::backend_error);
        CHECK(faulty.chunks == 1);
        CHECK_FALSE(checked.primary_enabled());
    }
}

TEST_CASE("backends mark progress for the watchdog in pieces of a chunk, and CheckedBackend passes it on",
          "[crosscheck][progress]") {
    // Issue 29.3: a long chunk must not look like a hung worker. 2,500 rows:
    // the CPU backend marks every 1,024 rows (3 marks), the host twin of the
    // kernel every 256 (10), CheckedBackend its primary's marks plus one per
    // 1,024 confirmations (all 2,500 rows invalid: 2 more).
    const Data valid = make(wire::Table::ecdsa, 2500, 0.0);
    const Staged s = stage(valid);
    std::vector<std::uint8_t> verdicts(2500);
    std::atomic<std::uint64_t> progress{0};

    daemon::CpuBackend cpu(1);
    cpu.set_progress(&progress);
    REQUIRE(cpu.verify(0, s.span, verdicts.data()).status == shm::Status::ok);
    CHECK(progress == 3);

    progress = 0;
    daemon::HostKernelBackend host(0, 1);
    host.set_progress(&progress);
    REQUIRE(host.verify(0, s.span, verdicts.data()).status == shm::Status::ok);
    CHECK(progress == 10);
    CHECK(verdicts == truth(s.span));

    const Data broken = make(wire::Table::ecdsa, 2500, 1.0, 4);
    const Staged b = stage(broken);
    progress = 0;
    CheckedBackend checked(std::make_unique<daemon::HostKernelBackend>(0, 1), 4096, CrossCheckPolicy{0, 0, 0});
    checked.set_progress(&progress);
    REQUIRE(checked.verify(0, b.span, verdicts.data()).status == shm::Status::ok);
    CHECK(checked.counters().rows_rechecked == 2500);
    CHECK(progress == 10 + 2);
}
