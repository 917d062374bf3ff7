// SPDX-License-Identifier: MIT
// contrib/libbitcoin's sigverifyd branch (sigverifyd_branch.hpp), compiled
// into the patched batch_verify against a stand-in of libbitcoin's newest
// batch headers (newer_shim/), run against a real daemon: libbitcoin's packed
// 129- and 128-byte rows and its older columns get the known verdicts
// (checked against libsecp256k1) in libbitcoin's convention (empty = all
// valid), from the call after the one that connects; with no daemon the branch answers false and the CPU step verifies;
// an answer whose counts do not add up is never taken.
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "daemon_fixture.hpp"
#include "known_tables.hpp"
#include "libbitcoin_batch_shim.hpp"
#include "packed_rows.hpp"

using namespace sigverify;
using namespace sigverify::test;
namespace lb = libbitcoin::system;

namespace {

// The CPU step of the patched order: libsecp256k1 on the packed rows, in
// libbitcoin's convention; counts its calls.
struct CpuStep {
    int* calls;
    template <class Batch>
    void operator()(lb::data_chunk& results, const lb::stopper&, const Batch& batch) const {
        ++*calls;
        using Row = typename Batch::row_t;
        constexpr bool ecdsa = sizeof(Row) == wire::kEcdsaRecordSize;
        const std::size_t n = batch.rows.size(), kw = ecdsa ? 33 : 32;
        std::vector<std::uint8_t> d(n * 32), k(n * kw), s(n * 64);
        for (std::size_t i = 0; i < n; ++i) {
            std::memcpy(d.data() + i * 32, batch.rows[i].digest.data(), 32);
            std::memcpy(k.data() + i * kw, batch.rows[i].point.data(), kw);
            std::memcpy(s.data() + i * 64, batch.rows[i].signature.data(), 64);
        }
        wire::ColumnSpan b;
        b.kind = ecdsa ? wire::RecordKind::ecdsa : wire::RecordKind::schnorr;
        b.count = n;
        b.message = d.data();
        b.key = k.data();
        b.signature = s.data();
        results.assign(n, 0);
        reference::ColumnVerifier(1).verify(b, results.data());
        if (lbtc_call_site::all_ones(results)) results.clear();
    }
};

// Libbitcoin's convention back to one byte per row.
std::vector<std::uint8_t> expand(const lb::data_chunk& results, std::size_t n) {
    return results.empty() ? std::vector<std::uint8_t>(n, 1) : results;
}

}  // namespace

TEST_CASE("the sigverifyd branch in libbitcoin's newest batch order", "[lbtc][contrib]") {
    const lbtc_call_site::Tables t = make_tables(3000, 77);
    REQUIRE(check_against_reference(t).empty());
    const PackedRows p = pack(t);
    const lb::ecdsa::batch ecdsa{std::span<const lb::ecdsa::batch::row_t>(p.ecdsa)};
    const lb::schnorr::batch schnorr{std::span<const lb::schnorr::batch::row_t>(p.schnorr)};
    const lb::stopper go{false};
    int cpu_calls = 0;
    const CpuStep cpu{&cpu_calls};

    // No daemon: the branch has no verdict, libbitcoin's own order answers.
    const std::string empty_dir = make_temp_dir();
    setenv("SIGVERIFY_RUNTIME_DIR", empty_dir.c_str(), 1);
    setenv("SIGVERIFY_LBTC_BATCH_TIMEOUT_MS", "5000", 1);
    lb::data_chunk direct{7};
    CHECK_FALSE(sigverify::libbitcoin_branch::try_verify(direct, go, ecdsa));
    CHECK(direct.empty());
    CHECK(lbtc_call_site::first_difference("no daemon ecdsa", expand(lb::batch_verify(go, ecdsa, cpu), p.ecdsa.size()),
                                           t.ecdsa_expected) == "");
    CHECK(cpu_calls == 1);

    // A daemon: every row is its verdict; the CPU step never runs.
    DaemonProcess d({"--cpu-threads", "2"});
    setenv("SIGVERIFY_RUNTIME_DIR", d.dir().c_str(), 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // past the branch's retry interval
    // The call that connects leaves its batch to libbitcoin's order (it
    // waited for the connect; it must not wait for a batch too).
    cpu_calls = 0;
    CHECK(lbtc_call_site::first_difference("connecting call", expand(lb::batch_verify(go, ecdsa, cpu), p.ecdsa.size()),
                                           t.ecdsa_expected) == "");
    CHECK(cpu_calls == 1);
    cpu_calls = 0;
    CHECK(lbtc_call_site::first_difference("rows ecdsa", expand(lb::batch_verify(go, ecdsa, cpu), p.ecdsa.size()),
                                           t.ecdsa_expected) == "");
    CHECK(lbtc_call_site::first_difference("rows schnorr",
                                           expand(lb::batch_verify(go, schnorr, cpu), p.schnorr.size()),
                                           t.schnorr_expected) == "");
    CHECK(cpu_calls == 0);
    lb::data_chunk answer;
    REQUIRE(sigverify::libbitcoin_branch::try_verify(answer, go, ecdsa));
    CHECK(answer.size() == p.ecdsa.size());  // some rows are invalid: one byte per row

    // The older column tables.
    std::vector<lb::ec_compressed> keys(p.ecdsa.size());
    std::vector<lb::hash_digest> digests(p.ecdsa.size());
    std::vector<lb::ec_signature> sigs(p.ecdsa.size());
    for (std::size_t i = 0; i < p.ecdsa.size(); ++i) {
        keys[i] = p.ecdsa[i].point;
        digests[i] = p.ecdsa[i].digest;
        sigs[i] = p.ecdsa[i].signature;
    }
    const lb::ecdsa::columns_batch columns{keys, digests, sigs};
    REQUIRE(sigverify::libbitcoin_branch::try_verify(answer, go, columns));
    CHECK(lbtc_call_site::first_difference("columns ecdsa", expand(answer, keys.size()), t.ecdsa_expected) == "");

    // All valid: libbitcoin's empty result.
    const lbtc_call_site::Tables v = make_tables(500, 78, true);
    const PackedRows pv = pack(v);
    const lb::schnorr::batch valid{std::span<const lb::schnorr::batch::row_t>(pv.schnorr)};
    REQUIRE(sigverify::libbitcoin_branch::try_verify(answer, go, valid));
    CHECK(answer.empty());

    // Cancelled before the call: an answer the caller discards, never a verdict of invalid.
    const lb::stopper stop{true};
    answer.assign(3, 0);
    CHECK(sigverify::libbitcoin_branch::try_verify(answer, stop, ecdsa));
    CHECK(answer.empty());
    remove_tree(empty_dir);
}

TEST_CASE("an answer whose counts or bytes disagree is not a verdict", "[lbtc][contrib]") {
    using sigverify::libbitcoin_branch::is_verdict;
    const std::uint8_t bytes[4] = {1, 0, 1, 1};
    BatchResult r;
    r.valid = 3;
    r.invalid = 1;
    CHECK(is_verdict(r, bytes, 4));
    r.valid = 4;
    r.invalid = 0;
    CHECK_FALSE(is_verdict(r, bytes, 4));  // counts say all valid, a byte says not
    r.valid = 3;
    r.invalid = 0;
    CHECK_FALSE(is_verdict(r, bytes, 4));  // counts do not cover the rows
    r.valid = 3;
    r.invalid = 1;
    r.status = Status::timeout;
    CHECK_FALSE(is_verdict(r, bytes, 4));
    const std::uint8_t odd[4] = {1, 2, 1, 0};
    r.status = Status::ok;
    r.valid = 2;
    r.invalid = 2;
    CHECK_FALSE(is_verdict(r, odd, 4));
}
