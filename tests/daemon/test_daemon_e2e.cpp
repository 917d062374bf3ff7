// SPDX-License-Identifier: MIT
// End to end through a real sigverifyd: several client processes at once, all
// four tables, both modes, both ECDSA encodings, batch sizes 0, 1, 7, 3000
// (larger than the arena) and 100k, compared with verdicts known without any
// verifier of the product (batch_check.hpp's make_known_rows); and the vendored
// BIP-340 and Wycheproof vectors, judged by the vector files' own verdicts.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "support/first_differences.hpp"
#include "ops/ops_helpers.hpp"
#include "support/test_vectors.hpp"

using namespace sigverify;
using namespace sigverify::test;

namespace {

// "" when got equals the verdicts the vector file states, else how many rows
// differ and the first few, each with the vector case it came from.
std::string vector_differences(const VectorRows& v, const std::vector<std::uint8_t>& got, const char* how) {
    const std::string diff = first_differences(got, v.expected);
    if (diff.empty()) return "";
    std::string out = v.name + " (" + how + "): " + diff;
    for (std::size_t i = 0, shown = 0; i < v.count() && shown < 5; ++i) {
        if (got[i] == v.expected[i]) continue;
        out += "\n  row " + std::to_string(i) + ": " + v.labels[i] + "; the daemon says " +
               (got[i] == 1 ? "valid" : got[i] == 0 ? "invalid" : "neither (" + std::to_string(got[i]) + ")");
        ++shown;
    }
    return out;
}

// The verdicts a collect left in the rows, by the collect rule: 1 where the
// tail was zeroed, 0 where it is unchanged, 2 where the record was written or
// the tail changed otherwise. (The tails start non-zero, so 1 and 0 cannot be
// confused.)
std::vector<std::uint8_t> collected_verdicts(const VectorRows& v, const std::vector<std::uint8_t>& after) {
    std::vector<std::uint8_t> out(v.count());
    for (std::size_t i = 0; i < v.count(); ++i) {
        const std::uint8_t* was = v.row(i);
        const std::uint8_t* now = after.data() + i * v.stride;
        const bool record_kept = std::memcmp(was, now, v.record) == 0;
        const bool zeroed = std::all_of(now + v.record, now + v.stride, [](std::uint8_t b) { return b == 0; });
        const bool kept = std::memcmp(was + v.record, now + v.record, v.tail) == 0;
        out[i] = !record_kept ? 2 : zeroed ? 1 : kept ? 0 : 2;
    }
    return out;
}

}  // namespace

TEST_CASE("four tables, both modes and encodings, from concurrent client processes", "[daemon][e2e]") {
    // 256 KiB arena: 3000 ECDSA rows (396 KB) cannot fit in one piece.
    DaemonProcess d({"--arena-size", "256K", "--cpu-threads", "2"});
    const wire::Table tables[] = {wire::Table::ecdsa, wire::Table::multisig, wire::Table::schnorr,
                                  wire::Table::threshold};
    std::vector<pid_t> children;
    for (wire::Table table : tables) {
        children.push_back(run_in_child([&, table] {
            auto c = Client::connect(options_for(d, to_string(table).data()));
            if (c->arena_size() != 256 * 1024) return false;
            if (c->max_batch_rows(wire::record_kind(table), wire::canonical_tail_size(table)) >= 3000) return false;
            const bool ecdsa = wire::record_kind(table) == wire::RecordKind::ecdsa;
            std::uint64_t seed = 100 + static_cast<std::uint64_t>(table) * 1000;
            for (wire::Mode mode : {wire::Mode::results, wire::Mode::collect}) {
                for (wire::SigEncoding enc : {wire::SigEncoding::opaque, wire::SigEncoding::compact}) {
                    if (!ecdsa && enc == wire::SigEncoding::compact) continue;
                    for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(3000)})
                        if (!check_batch(*c, table, mode, enc, n, ++seed)) return false;
                }
            }
            return true;
        }));
    }
    // And a 100k-row collect batch (compact multisig: the other mode, encoding
    // and table than the 100k case below), split over the small arena.
    children.push_back(run_in_child([&] {
        auto c = Client::connect(options_for(d, "collect-100k"));
        return check_batch(*c, wire::Table::multisig, wire::Mode::collect, wire::SigEncoding::compact, 100000, 4242);
    }));
    for (pid_t p : children) CHECK(wait_child(p) == 0);
    CHECK(leftover_segments(d).empty());
}

TEST_CASE("collect zeroes the tails of rows known valid and only those; high-S rows are valid", "[daemon][e2e][collect]") {
    DaemonProcess d({"--arena-size", "256K", "--cpu-threads", "2"});
    auto c = Client::connect(options_for(d, "known-collect"));
    for (wire::Table table : {wire::Table::ecdsa, wire::Table::multisig, wire::Table::schnorr, wire::Table::threshold}) {
        for (wire::SigEncoding enc : {wire::SigEncoding::opaque, wire::SigEncoding::compact}) {
            if (wire::record_kind(table) == wire::RecordKind::schnorr && enc == wire::SigEncoding::compact) continue;
            const std::size_t n = 60;
            KnownRows known = make_known_rows(table, n, enc, 7000 + static_cast<unsigned>(table));
            REQUIRE(known.invalid > 0);
            if (wire::record_kind(table) == wire::RecordKind::ecdsa) REQUIRE(known.high_s > 0);
            // Tails are never zero to begin with, so a wrongly zeroed one shows.
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t b = 0; b < known.tail; ++b) REQUIRE(known.rows[i * known.stride + known.record + b] != 0);
            const std::vector<std::uint8_t> want = collect_expectation(known);  // records never written
            INFO(wire::to_string(table) << " " << wire::to_string(enc));
            const BatchResult r = send(*c, table, wire::Mode::collect, enc, known.rows, n, nullptr);
            REQUIRE(r.ok());
            CHECK(r.local_rows == 0);
            CHECK(r.valid == known.valid);
            CHECK(r.invalid == known.invalid);
            CHECK(first_entry_differences(known.rows.data(), want, known.stride, known.expected) == "");
            // And results mode gives the known verdicts.
            CHECK(check_batch(*c, table, wire::Mode::results, enc, n, 7050 + static_cast<unsigned>(table)));
        }
    }
}

TEST_CASE("a 100k-row batch does not starve another client's 1-row batches", "[daemon][e2e]") {
    DaemonProcess d({"--cpu-threads", "2"});
    const pid_t child = run_in_child([&] {
        auto big = Client::connect(options_for(d, "big"));
        auto small = Client::connect(options_for(d, "small"));
        const std::size_t n = 100000;
        KnownRows known = make_known_rows(wire::Table::ecdsa, n, wire::SigEncoding::opaque, 7);
        auto& rows = known.rows;
        KnownRows one = make_known_rows(wire::Table::schnorr, 1, wire::SigEncoding::opaque, 8);  // row 0: valid
        std::vector<std::uint8_t> got(n);
        std::atomic<bool> done{false};
        BatchResult r;
        std::thread t([&] {
            r = big->verify_ecdsa(rows.data(), n, 3, got.data());
            done = true;
        });
        std::vector<double> lat;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        while (!done) {
            std::uint8_t res = 0xAA;
            const auto t0 = std::chrono::steady_clock::now();
            const BatchResult s = small->verify_schnorr(one.rows.data(), 1, 3, &res);
            lat.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            if (!s.ok() || res != one.expected[0]) {
                std::fprintf(stderr, "1-row batch failed: %s res=%d\n", shm::to_string(s.status).data(), res);
                t.join();
                return false;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        t.join();
        const double worst = lat.empty() ? 0 : *std::max_element(lat.begin(), lat.end());
        std::fprintf(stderr, "100k batch: %zu one-row batches meanwhile, worst latency %.1f ms\n", lat.size(),
                     worst * 1e3);
        if (!r.ok() || r.local_rows != 0) return false;
        const std::string diff = first_differences(got, known.expected);
        if (!diff.empty() || r.valid != known.valid || r.invalid != known.invalid) {
            std::fprintf(stderr, "100k verdicts differ from the known ones: %s; counts %llu/%llu, known %llu/%llu\n",
                         diff.c_str(), (unsigned long long)r.valid, (unsigned long long)r.invalid,
                         (unsigned long long)known.valid, (unsigned long long)known.invalid);
            return false;
        }
        // The big batch takes seconds; a starved 1-row batch would wait for all of it.
        return lat.size() >= 5 && worst < 0.5;
    });
    CHECK(wait_child(child) == 0);
}

TEST_CASE("zero-copy path: reserve in the arena, fill, submit several, poll and wait", "[daemon][e2e]") {
    DaemonProcess d({"--arena-size", "1M"});
    auto c = Client::connect(options_for(d, "zero-copy"));
    std::uint64_t rtt = 0;
    REQUIRE(c->ping(&rtt) == Status::ok);
    CHECK(rtt > 0);

    const wire::Table tables[] = {wire::Table::ecdsa, wire::Table::schnorr, wire::Table::multisig};
    const std::size_t n = 500;
    std::vector<KnownRows> rows;
    RowBatch batches[3];
    for (int i = 0; i < 3; ++i) {
        const wire::Table t = tables[i];
        rows.push_back(make_known_rows(t, n, wire::SigEncoding::compact, 40 + i));
        REQUIRE(c->reserve(wire::record_kind(t), wire::canonical_tail_size(t), n, batches[i]) == Status::ok);
        std::memcpy(batches[i].rows, rows.back().rows.data(), rows.back().rows.size());
    }
    for (int i = 0; i < 3; ++i)
        REQUIRE(c->submit(batches[i], i == 2 ? wire::Mode::collect : wire::Mode::results,
                          wire::SigEncoding::compact) == Status::ok);
    const BatchResult first = c->poll(batches[0]);
    CHECK((first.status == Status::pending || first.status == Status::ok));
    for (int i = 0; i < 3; ++i) {
        const KnownRows& k = rows[i];
        INFO(wire::to_string(tables[i]));
        const BatchResult r = c->wait(batches[i]);
        REQUIRE(r.ok());
        CHECK(r.valid == k.valid);
        CHECK(r.invalid == k.invalid);
        if (i < 2)
            CHECK(first_differences(std::vector<std::uint8_t>(batches[i].results, batches[i].results + n), k.expected) == "");
        else
            CHECK(first_entry_differences(batches[i].rows, collect_expectation(k), k.stride, k.expected) == "");
        c->release(batches[i]);
    }
    RowBatch huge;
    CHECK(c->reserve(wire::RecordKind::ecdsa, 3, c->max_batch_rows(wire::RecordKind::ecdsa, 3) + 1, huge) ==
          Status::too_large);
    // The arena is reusable after release: a batch of the maximum size fits.
    RowBatch max;
    REQUIRE(c->reserve(wire::RecordKind::schnorr, 0, c->max_batch_rows(wire::RecordKind::schnorr, 0), max, false) ==
            Status::ok);
    // The arena is full now: a non-blocking reserve says so, a bounded one times out.
    RowBatch more;
    CHECK(c->reserve(wire::RecordKind::schnorr, 0, 10, more, false) == Status::ring_full);
    ClientOptions bounded = options_for(d, "bounded");
    bounded.batch_timeout = std::chrono::milliseconds(100);
    auto c2 = Client::connect(bounded);
    RowBatch all;
    REQUIRE(c2->reserve(wire::RecordKind::ecdsa, 3, c2->max_batch_rows(wire::RecordKind::ecdsa, 3), all) == Status::ok);
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(c2->reserve(wire::RecordKind::ecdsa, 3, 1, more) == Status::timeout);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
    c2->release(all);
    c->release(max);
    CHECK(c->reserve(wire::RecordKind::schnorr, 0, 10, more, false) == Status::ok);
    c->release(more);
}

TEST_CASE("one client used from several threads at once", "[daemon][e2e]") {
    DaemonProcess d({"--arena-size", "256K"});
    auto c = Client::connect(options_for(d, "threads"));
    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < 3; ++i) {
        threads.emplace_back([&, i] {
            const wire::Table t = i == 1 ? wire::Table::threshold : wire::Table::ecdsa;
            for (std::size_t n : {std::size_t(1), std::size_t(700), std::size_t(2500)})
                if (!check_batch(*c, t, i == 2 ? wire::Mode::collect : wire::Mode::results,
                                 wire::SigEncoding::opaque, n, 900 + 10 * i + n))
                    ++failures;
        });
    }
    for (auto& t : threads) t.join();
    CHECK(failures == 0);
}

namespace {

// The vendored vectors, turned into rows as the unit tests do
// (tests/support/test_vectors.hpp), through a real daemon and client: the
// daemon's backend is judged by the vectors' own verdicts, not by another
// verifier.
void check_vectors_through(const DaemonProcess& d) {
    auto c = Client::connect(options_for(d, "vectors"));
    std::vector<VectorRows> sets;
    sets.push_back(bip340_rows(load_bip340(), "BIP-340"));
    // The 2019 draft's TRUE signatures (square-y R) are invalid under final
    // BIP-340 (vectors/bip340/README.md): a backend implementing the draft is caught.
    VectorRows draft = bip340_rows(load_bip340("test-vectors-draft-2019.csv"), "BIP-340 draft 2019");
    std::fill(draft.expected.begin(), draft.expected.end(), 0);
    for (auto& label : draft.labels) label += ", invalid under final BIP-340";
    sets.push_back(draft);
    struct File {
        const char* name;
        WycheproofFormat format;
        bool bitcoin_variant;
    };
    for (const File f : {File{"ecdsa_secp256k1_sha256_test.json", WycheproofFormat::der, false},
                         File{"ecdsa_secp256k1_sha256_p1363_test.json", WycheproofFormat::p1363, false},
                         File{"ecdsa_secp256k1_sha256_bitcoin_test.json", WycheproofFormat::der, true}}) {
        const WycheproofSet set = load_wycheproof(f.name, f.format);
        for (wire::SigEncoding enc : {wire::SigEncoding::compact, wire::SigEncoding::opaque})
            sets.push_back(wycheproof_rows(set, f.bitcoin_variant, enc,
                                           std::string(f.name) + " " + std::string(wire::to_string(enc))));
    }
    std::size_t sent = 0;
    for (const VectorRows& v : sets) {
        INFO(v.name);
        REQUIRE(v.count() > 0);
        const std::size_t n = v.count(), valid = v.valid();

        std::vector<std::uint8_t> rows = v.rows, got(n, 0xAA);
        const BatchResult r = send(*c, v.table, wire::Mode::results, v.encoding, rows, n, got.data());
        REQUIRE(r.ok());
        CHECK(r.local_rows == 0);
        CHECK(vector_differences(v, got, "results") == "");
        CHECK(r.valid == valid);
        CHECK(r.invalid == n - valid);

        std::vector<std::uint8_t> collected = v.rows;
        const BatchResult k = send(*c, v.table, wire::Mode::collect, v.encoding, collected, n, nullptr);
        REQUIRE(k.ok());
        CHECK(k.local_rows == 0);
        CHECK(vector_differences(v, collected_verdicts(v, collected), "collect") == "");
        CHECK(k.valid == valid);
        sent += n;
    }
    // Pinned, so a loader that silently drops cases shows: 15 + 15 BIP-340
    // rows, and each Wycheproof case with a consensus verdict in both encodings.
    CHECK(sent == 1592);
}

// Every GPU of a daemon still on, with no cross-check mismatch and no error
// ("" when so; else the stats line of each GPU that is not).
std::string gpus_not_clean(const DaemonProcess& d) {
    const std::string backends = stats_command(d.dir(), "backends");
    std::string out;
    std::size_t gpus = 0;
    for (std::size_t at = 0; at < backends.size();) {
        const std::size_t end = std::min(backends.find('\n', at), backends.size());
        const std::string line = backends.substr(at, end - at);
        at = end + 1;
        if (line.find("kind=gpu") == std::string::npos && line.find("kind=lanes") == std::string::npos) continue;
        ++gpus;
        if (line.find("self_test=\"passed\"") == std::string::npos ||
            line.find("crosscheck_mismatches=0 ") == std::string::npos || line.find(" errors=0 ") == std::string::npos)
            out += line + "\n";
    }
    return gpus == 0 ? "no GPU in: " + backends : out;
}

// The line of a stats `backends` answer that holds `what`, "" when none does.
std::string backend_line_of(const std::string& backends, const std::string& what) {
    const std::size_t at = backends.find(what);
    if (at == std::string::npos) return "";
    const std::size_t begin = backends.rfind('\n', at);
    const std::size_t from = begin == std::string::npos ? 0 : begin + 1;
    return backends.substr(from, backends.find('\n', at) - from);
}

// The daemon's GPU path — per-GPU CheckedBackend, striping, the batch split,
// the confirmation rules — with the kernels' host twin in each GPU's place.
// --cross-check-sample 1 and --cross-check-invalid-sample 1: libsecp256k1
// re-checks every verdict the kernel math gives, so a kernel bug switches a
// "GPU" off and shows in the stats even where the client's verdicts are
// still right (the CPU fallback re-ran the chunk). --gpu-min-rows 1 and
// --gpu-split off: even 1-row batches reach the kernel math.
std::vector<std::string> host_kernel_args(std::vector<std::string> more = {}) {
    std::vector<std::string> a = gpu_path_args("0,1");
    for (const char* o : {"--cpu-threads", "2", "--cross-check-sample", "1", "--cross-check-invalid-sample", "1",
                          "--gpu-min-rows", "1", "--gpu-split", "off", "--arena-size", "4M"})
        a.push_back(o);
    a.insert(a.end(), more.begin(), more.end());
    return a;
}

}  // namespace

TEST_CASE("the BIP-340 and Wycheproof vectors through a daemon get the verdicts the vector files state", "[daemon][e2e][vectors]") {
    // --gpu-min-rows 1: on a GPU build even the 15-row BIP-340 batches go to
    // the GPU (by default batches under 32 rows are verified by libsecp256k1 on the CPU).
    DaemonProcess d({"--arena-size", "256K", "--cpu-threads", "2", "--gpu-min-rows", "1"});
    check_vectors_through(d);
}

TEST_CASE("the GPU path with the kernel math on the CPU: vectors and known rows, no GPU switched off", "[daemon][e2e][gpu-path]") {
    DaemonProcess d(host_kernel_args());
    check_vectors_through(d);
    CHECK(gpus_not_clean(d) == "");

    // Known rows of the four tables (high-S rows valid, broken rows invalid),
    // in batches of 1 row to 1,500, results and collect.
    auto c = Client::connect(options_for(d, "known"));
    for (wire::Table table : {wire::Table::ecdsa, wire::Table::multisig, wire::Table::schnorr, wire::Table::threshold}) {
        for (std::size_t n : {std::size_t(1), std::size_t(40), std::size_t(1500)}) {
            INFO(wire::to_string(table) << ", " << n << " rows");
            const KnownRows k = make_known_rows(table, n, wire::SigEncoding::opaque, 900 + n);
            std::vector<std::uint8_t> rows = k.rows, got(n, 0xAA);
            REQUIRE(send(*c, table, wire::Mode::results, wire::SigEncoding::opaque, rows, n, got.data()).ok());
            CHECK(first_differences(got, k.expected) == "");
            std::vector<std::uint8_t> collected = k.rows;
            REQUIRE(send(*c, table, wire::Mode::collect, wire::SigEncoding::opaque, collected, n, nullptr).ok());
            CHECK(first_differences(collected, collect_expectation(k)) == "");
        }
    }
    CHECK(gpus_not_clean(d) == "");
    // Both "GPUs" took work.
    const std::string backends = stats_command(d.dir(), "backends");
    if (test_on_lanes()) {  // one device, the lanes, and it took the work
        const std::string line = backend_line_of(backends, "kind=lanes");
        CHECK(line != "");
        CHECK(line.find("rows_confirmed=0 ") == std::string::npos);
        return;
    }
    CHECK(backends.find("backend=gpu0") != std::string::npos);
    CHECK(backends.find("backend=gpu1") != std::string::npos);
}
