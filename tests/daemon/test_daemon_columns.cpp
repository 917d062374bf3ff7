// SPDX-License-Identifier: MIT
// Column batches end to end through a real sigverifyd (Opcode::verify_columns):
// for all four tables (ecdsa and multisig as ECDSA columns, schnorr and
// threshold as Schnorr columns), both ECDSA encodings, both modes and sizes 0,
// 1, 7 and 3001 (larger than the arena), the column path through the daemon is
// compared with the row path through the daemon and with verdicts known
// without any verifier of the product (make_known_rows; the daemon's CPU
// backend and the local fallback run the libsecp256k1 reference, so the
// reference cannot judge them), verdict by verdict (results) and byte by byte
// (collect), from concurrent client processes. Also: the zero-copy column API,
// the local fallback, and the C ABI compiled as C.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "reference/columns.hpp"
#include "support/first_differences.hpp"

using namespace sigverify;
using namespace sigverify::test;
using reference::ColumnTable;
using reference::CorrelateLayout;
using wire::Mode;
using wire::RecordKind;
using wire::SigEncoding;
using wire::Table;

extern "C" int c_abi_columns_check(const char* dir, const unsigned char* em, const unsigned char* ek,
                                   const unsigned char* es, unsigned char* ecorr, size_t etail, int encoding,
                                   const unsigned char* sm, const unsigned char* sk, const unsigned char* ss,
                                   unsigned char* scorr, size_t stail, size_t n, unsigned char* eresults,
                                   unsigned char* sresults, unsigned char* eresults_local,
                                   unsigned long long counts[4]);

namespace {

const Table kTables[] = {Table::ecdsa, Table::multisig, Table::schnorr, Table::threshold};

BatchResult send_columns(Client& c, ColumnTable& t, Mode mode, std::uint8_t* results) {
    const bool ecdsa = t.kind == RecordKind::ecdsa;
    if (mode == Mode::results)
        return ecdsa ? c.verify_ecdsa_columns(t.message.data(), t.key.data(), t.signature.data(), t.count, results,
                                              t.encoding)
                     : c.verify_schnorr_columns(t.message.data(), t.key.data(), t.signature.data(), t.count, results);
    std::uint8_t* corr = t.tail_size != 0 ? t.correlate.data() : nullptr;
    return ecdsa ? c.collect_ecdsa_columns(t.message.data(), t.key.data(), t.signature.data(), corr, t.count,
                                           t.tail_size, t.encoding)
                 : c.collect_schnorr_columns(t.message.data(), t.key.data(), t.signature.data(), corr, t.count,
                                             t.tail_size);
}

std::string counts_text(const BatchResult& r) {
    return std::to_string(r.valid) + "/" + std::to_string(r.invalid);
}

// One differential case; returns "" when the three paths agree, else what differed.
std::string differential(Client& c, Table table, Mode mode, SigEncoding enc, std::size_t n, std::uint64_t seed,
                         CorrelateLayout layout) {
    const std::string what = std::string(wire::to_string(table)) + " " + std::string(wire::to_string(enc)) + " " +
                             (mode == Mode::results ? "results" : "collect") + " layout " +
                             std::string(reference::to_string(layout)) + " n=" + std::to_string(n) + ": ";
    // 1. Known verdicts (make_known_rows: no verifier of the product involved).
    KnownRows known = make_known_rows(table, n, enc, seed);
    auto& rows = known.rows;
    const wire::RowSpan span = span_of(table, enc, rows, n);
    const std::vector<std::uint8_t>& expected = known.expected;
    struct {
        std::uint64_t valid, invalid;
    } t{known.valid, known.invalid};

    // 2. The row path through the daemon.
    std::vector<std::uint8_t> row_results(n, 0xAA), row_copy = rows;
    const BatchResult rr = send(c, table, mode, enc, row_copy, n, row_results.data());
    if (!rr.ok() || rr.local_rows != 0) return what + "row path: " + std::string(shm::to_string(rr.status));
    if (rr.valid != t.valid || rr.invalid != t.invalid) return what + "row path counts " + counts_text(rr);

    // 3. The column path through the daemon.
    ColumnTable cols = reference::rows_to_columns(span, layout, table);
    const ColumnTable pristine = cols;
    std::vector<std::uint8_t> col_results(n, 0xAA);
    const BatchResult cr = send_columns(c, cols, mode, col_results.data());
    if (!cr.ok()) return what + "column path: " + std::string(shm::to_string(cr.status)) + " " + c.last_error();
    if (cr.local_rows != 0) return what + "column path verified locally, not by the daemon";
    if (cr.valid != t.valid || cr.invalid != t.invalid)
        return what + "column path counts " + counts_text(cr) + ", known " + std::to_string(t.valid) + "/" +
               std::to_string(t.invalid);
    if (cols.message != pristine.message || cols.key != pristine.key || cols.signature != pristine.signature)
        return what + "the daemon wrote into a read-only column";

    if (mode == Mode::results) {
        for (std::size_t i = 0; i < n; ++i) {
            if (col_results[i] != expected[i] || row_results[i] != expected[i])
                return what + "row " + std::to_string(i) + ": columns " + std::to_string(col_results[i]) + ", rows " +
                       std::to_string(row_results[i]) + ", known " + std::to_string(expected[i]);
        }
        return "";
    }
    // Collect: valid rows' correlate entries zeroed, invalid rows' untouched...
    const std::size_t tail = cols.tail_size;
    for (std::size_t i = 0; i < n; ++i) {
        for (std::size_t b = 0; b < tail; ++b) {
            const std::size_t at = i * tail + b;
            const std::uint8_t want = expected[i] ? 0 : pristine.correlate[at];
            if (cols.correlate[at] != want)
                return what + "row " + std::to_string(i) + " correlate byte " + std::to_string(b) + " is " +
                       std::to_string(cols.correlate[at]) + ", want " + std::to_string(want);
        }
    }
    // ...and with the row tail as correlate, byte-identical to the row path's collected tails.
    if (layout == CorrelateLayout::tail) {
        const std::size_t record = wire::record_size(span.kind);
        const std::size_t stride = span.row_stride();
        for (std::size_t i = 0; i < n; ++i)
            if (std::memcmp(row_copy.data() + i * stride + record, cols.correlate.data() + i * tail, tail) != 0)
                return what + "row " + std::to_string(i) + ": collected correlate differs from the row path's tail";
    }
    return "";
}

}  // namespace

TEST_CASE("column batches through the daemon equal the row path and the known verdicts", "[daemon][columns][e2e]") {
    // 256 KiB arena: 3001 ECDSA column rows with a 6-byte correlate (136 bytes
    // a row with the result byte) cannot fit in one piece.
    DaemonProcess d({"--arena-size", "256K", "--cpu-threads", "2"});
    std::vector<pid_t> children;
    for (Table table : kTables) {
        children.push_back(run_in_child([&, table] {
            auto c = Client::connect(options_for(d, "columns-" + std::string(wire::to_string(table))));
            const RecordKind kind = wire::record_kind(table);
            const std::size_t tail = wire::canonical_tail_size(table);
            if (c->max_column_batch_rows(kind, tail) == 0 || c->max_column_batch_rows(kind, tail) >= 3001) {
                std::fprintf(stderr, "max_column_batch_rows %zu: 3001 rows must need several pieces\n",
                             c->max_column_batch_rows(kind, tail));
                return false;
            }
            std::uint64_t seed = 500 + static_cast<std::uint64_t>(table) * 1000;
            for (SigEncoding enc : {SigEncoding::opaque, SigEncoding::compact}) {
                if (kind == RecordKind::schnorr && enc == SigEncoding::compact) continue;
                for (std::size_t n : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(3001)}) {
                    struct Case {
                        Mode mode;
                        CorrelateLayout layout;
                    };
                    // libbitcoin's correlate layout cannot be rebuilt for threshold,
                    // but rows -> columns works for every table.
                    for (Case k : {Case{Mode::results, CorrelateLayout::none}, Case{Mode::collect, CorrelateLayout::tail},
                                   Case{Mode::collect, CorrelateLayout::libbitcoin}}) {
                        const std::string err = differential(*c, table, k.mode, enc, n, ++seed, k.layout);
                        if (!err.empty()) {
                            std::fprintf(stderr, "%s\n", err.c_str());
                            return false;
                        }
                    }
                }
            }
            return true;
        }));
    }
    for (pid_t p : children) CHECK(wait_child(p) == 0);
    // The daemon served them all and is still up.
    CHECK(kill(d.pid(), 0) == 0);
    CHECK(leftover_segments(d).empty());
}

TEST_CASE("column collect zeroes the correlate entries of rows known valid and only those", "[daemon][columns][collect]") {
    DaemonProcess d({"--arena-size", "256K", "--cpu-threads", "2"});
    auto c = Client::connect(options_for(d, "known-collect"));
    for (Table table : kTables) {
        for (SigEncoding enc : {SigEncoding::opaque, SigEncoding::compact}) {
            if (wire::record_kind(table) == RecordKind::schnorr && enc == SigEncoding::compact) continue;
            const std::size_t n = 60;
            KnownRows known = make_known_rows(table, n, enc, 7100 + static_cast<unsigned>(table));
            REQUIRE(known.invalid > 0);
            REQUIRE(known.valid > 0);
            if (wire::record_kind(table) == RecordKind::ecdsa) REQUIRE(known.high_s > 0);
            const wire::RowSpan span = span_of(table, enc, known.rows, n);
            ColumnTable cols = reference::rows_to_columns(span, CorrelateLayout::tail);
            REQUIRE(cols.tail_size == known.tail);
            const ColumnTable pristine = cols;
            const BatchResult r = send_columns(*c, cols, Mode::collect, nullptr);
            INFO(wire::to_string(table) << " " << wire::to_string(enc));
            REQUIRE(r.ok());
            CHECK(r.local_rows == 0);
            CHECK(r.valid == known.valid);
            CHECK(r.invalid == known.invalid);
            CHECK(first_entry_differences(cols.correlate.data(),
                                          collect_expectation(known, pristine.correlate, cols.tail_size), cols.tail_size,
                                          known.expected) == "");
        }
    }
}

TEST_CASE("a collect with no correlate column writes nothing and still counts", "[daemon][columns]") {
    DaemonProcess d({"--arena-size", "256K", "--cpu-threads", "2"});
    auto c = Client::connect(options_for(d, "no-correlate"));
    KnownRows known = make_known_rows(Table::schnorr, 500, SigEncoding::opaque, 77);
    const wire::RowSpan span = span_of(Table::schnorr, SigEncoding::opaque, known.rows, 500);
    ColumnTable cols = reference::rows_to_columns(span, CorrelateLayout::none);
    REQUIRE(cols.tail_size == 0);
    const ColumnTable pristine = cols;
    const BatchResult r =
        c->collect_schnorr_columns(cols.message.data(), cols.key.data(), cols.signature.data(), nullptr, 500, 0);
    REQUIRE(r.ok());
    CHECK(r.local_rows == 0);
    // Only the counts tell what the daemon found: they must be the known ones.
    CHECK(r.valid == known.valid);
    CHECK(r.invalid == known.invalid);
    REQUIRE(known.valid > 0);
    REQUIRE(known.invalid > 0);
    CHECK((cols.message == pristine.message && cols.key == pristine.key && cols.signature == pristine.signature));
}

TEST_CASE("zero-copy column batches: reserve, write in place, submit, wait", "[daemon][columns]") {
    DaemonProcess d({"--arena-size", "256K", "--cpu-threads", "2", "--chunk-rows", "64"});
    auto c = Client::connect(options_for(d, "zero-copy"));
    const std::size_t n = 900;
    for (Table table : {Table::multisig, Table::threshold}) {
        const RecordKind kind = wire::record_kind(table);
        const SigEncoding enc = kind == RecordKind::ecdsa ? SigEncoding::compact : SigEncoding::opaque;
        KnownRows known = make_known_rows(table, n, enc, 90 + static_cast<unsigned>(table));
        const wire::RowSpan span = span_of(table, enc, known.rows, n);
        ColumnTable cols = reference::rows_to_columns(span, CorrelateLayout::tail);
        const std::size_t tail = cols.tail_size;
        const std::size_t kw = wire::column_key_width(kind);
        const std::vector<std::uint8_t> collected = collect_expectation(known, cols.correlate, tail);
        INFO(wire::to_string(table));

        ColumnBatch b;
        CHECK(c->reserve_columns(kind, tail, c->max_column_batch_rows(kind, tail) + 1, b) == Status::too_large);
        for (Mode mode : {Mode::results, Mode::collect}) {
            REQUIRE(c->reserve_columns(kind, tail, n, b) == Status::ok);
            REQUIRE(b.tail_size == tail);
            REQUIRE(b.count == n);
            REQUIRE(b.correlate != nullptr);
            // The parts are disjoint and inside one allocation, in order.
            CHECK(b.key >= b.message + n * 32);
            CHECK(b.signature >= b.key + n * kw);
            CHECK(b.correlate >= b.signature + n * 64);
            CHECK(b.results >= b.correlate + n * tail);
            std::memcpy(b.message, cols.message.data(), n * 32);
            std::memcpy(b.key, cols.key.data(), n * kw);
            std::memcpy(b.signature, cols.signature.data(), n * 64);
            std::memcpy(b.correlate, cols.correlate.data(), n * tail);
            std::memset(b.results, 0xAA, n);
            REQUIRE(c->submit(b, mode, enc, static_cast<std::uint8_t>(table)) == Status::ok);
            const BatchResult r = c->wait(b);
            REQUIRE(r.ok());
            CHECK(r.local_rows == 0);
            CHECK(r.valid == known.valid);
            CHECK(r.invalid == known.invalid);
            if (mode == Mode::results)
                CHECK(first_differences(std::vector<std::uint8_t>(b.results, b.results + n), known.expected) == "");
            else
                CHECK(first_entry_differences(b.correlate, collected, tail, known.expected) == "");
            if (mode == Mode::collect) CHECK(std::memcmp(b.message, cols.message.data(), n * 32) == 0);
            c->release(b);
        }
    }
    // Bad arguments are refused on the client side.
    ColumnBatch b;
    CHECK(c->reserve_columns(RecordKind::ecdsa, 256, 1, b) == Status::invalid_argument);
    std::uint8_t res[1];
    CHECK(c->verify_ecdsa_columns(nullptr, nullptr, nullptr, 1, res).status == Status::invalid_argument);
    CHECK(c->verify_ecdsa_columns(nullptr, nullptr, nullptr, 0, res).ok());
    std::uint8_t m[32] = {}, k[33] = {}, s[64] = {};
    CHECK(c->verify_ecdsa_columns(m, k, s, 1, res, static_cast<SigEncoding>(5)).status == Status::invalid_argument);
    CHECK(c->collect_ecdsa_columns(m, k, s, nullptr, 1, 6).status == Status::invalid_argument);  // no correlate
    res[0] = 0xAA;
    const BatchResult one = c->verify_ecdsa_columns(m, k, s, 1, res);  // an all-zero row: invalid, not an error
    CHECK(one.ok());
    CHECK(one.invalid == 1);
    CHECK(res[0] == 0);
}

TEST_CASE("without a daemon, column batches fall back to local verification", "[daemon][columns]") {
    ClientOptions o;
    o.runtime_dir = "/nonexistent-sigverify-columns";
    o.fallback = Fallback::local;
    o.local_threads = 2;
    auto c = Client::connect(o);
    REQUIRE_FALSE(c->connected());
    const std::size_t n = 400;
    // The local fallback runs the reference verifier itself: only known verdicts can judge it.
    KnownRows known = make_known_rows(Table::ecdsa, n, SigEncoding::opaque, 55);
    const wire::RowSpan span = span_of(Table::ecdsa, SigEncoding::opaque, known.rows, n);
    std::vector<std::uint8_t> got(n, 0xAA);
    ColumnTable cols = reference::rows_to_columns(span, CorrelateLayout::libbitcoin, Table::ecdsa);
    const std::vector<std::uint8_t> collected = collect_expectation(known, cols.correlate, cols.tail_size);
    const BatchResult r =
        c->verify_ecdsa_columns(cols.message.data(), cols.key.data(), cols.signature.data(), n, got.data());
    REQUIRE(r.ok());
    CHECK(r.local_rows == n);
    CHECK(first_differences(got, known.expected) == "");
    CHECK(r.valid == known.valid);
    CHECK(r.invalid == known.invalid);
    const BatchResult k = c->collect_ecdsa_columns(cols.message.data(), cols.key.data(), cols.signature.data(),
                                                   cols.correlate.data(), n, cols.tail_size);
    REQUIRE(k.ok());
    CHECK(k.valid == known.valid);
    CHECK(first_entry_differences(cols.correlate.data(), collected, cols.tail_size, known.expected) == "");

    // Without the fallback: unreachable, results zeroed (fail closed).
    ClientOptions none = o;
    none.fallback = Fallback::none;
    Status st;
    std::string msg;
    CHECK(Client::connect(none, st, msg) == nullptr);
    CHECK(st == Status::unreachable);
}

TEST_CASE("the C ABI column calls, compiled as C", "[daemon][columns][c-abi]") {
    DaemonProcess d({"--arena-size", "64K", "--cpu-threads", "2"});
    const std::size_t n = 700;  // 700 x (129 + 6 + 1) bytes: larger than the 64 KiB arena
    KnownRows ek = make_known_rows(Table::multisig, n, SigEncoding::compact, 61);
    KnownRows sk = make_known_rows(Table::schnorr, n, SigEncoding::opaque, 62);
    const wire::RowSpan espan = span_of(Table::multisig, SigEncoding::compact, ek.rows, n);
    const wire::RowSpan sspan = span_of(Table::schnorr, SigEncoding::opaque, sk.rows, n);
    ColumnTable e = reference::rows_to_columns(espan, CorrelateLayout::libbitcoin, Table::multisig);
    ColumnTable s = reference::rows_to_columns(sspan, CorrelateLayout::libbitcoin, Table::schnorr);
    const std::vector<std::uint8_t> ecollected = collect_expectation(ek, e.correlate, e.tail_size);
    const std::vector<std::uint8_t> scollected = collect_expectation(sk, s.correlate, s.tail_size);
    std::vector<std::uint8_t> eres(n, 0xAA), sres(n, 0xAA), eres_local(n, 0xAA);
    unsigned long long counts[4] = {};
    REQUIRE(c_abi_columns_check(d.dir().c_str(), e.message.data(), e.key.data(), e.signature.data(),
                                e.correlate.data(), e.tail_size, 1 /* compact */, s.message.data(), s.key.data(),
                                s.signature.data(), s.correlate.data(), s.tail_size, n, eres.data(), sres.data(),
                                eres_local.data(), counts) == 0);
    CHECK(first_differences(eres, ek.expected) == "");
    CHECK(first_differences(sres, sk.expected) == "");
    CHECK(first_differences(eres_local, ek.expected) == "");
    CHECK(counts[0] == ek.valid);
    CHECK(counts[1] == ek.invalid);
    CHECK(counts[2] == sk.valid);
    CHECK(counts[3] == sk.invalid);
    CHECK(first_entry_differences(e.correlate.data(), ecollected, e.tail_size, ek.expected) == "");
    CHECK(first_entry_differences(s.correlate.data(), scollected, s.tail_size, sk.expected) == "");
}

TEST_CASE("daemon SIGKILLed during column batches: error or local fallback within 1 s", "[daemon][columns][faults]") {
    using Clock = std::chrono::steady_clock;
    // The CPU backend by name: the lanes (AUTO on IFMA) would end the batch before the kill.
    DaemonProcess d({"--backend", "cpu", "--cpu-threads", "1", "--arena-size", "512K"});
    const std::size_t n = 30000;  // seconds of work on one thread
    KnownRows known = make_known_rows(Table::multisig, n, SigEncoding::opaque, 12);
    const std::vector<std::uint8_t>& expected = known.expected;
    const wire::RowSpan span = span_of(Table::multisig, SigEncoding::opaque, known.rows, n);
    const ColumnTable cols = reference::rows_to_columns(span, CorrelateLayout::libbitcoin, Table::multisig);
    ColumnTable collected = cols;
    const std::vector<std::uint8_t> want_collected = collect_expectation(known, cols.correlate, cols.tail_size);

    auto strict = Client::connect(options_for(d, "strict-columns"));
    ClientOptions fo = options_for(d, "fallback-columns");
    fo.fallback = Fallback::local;
    fo.local_threads = 1;
    auto tolerant = Client::connect(fo);

    std::vector<std::uint8_t> got_strict(n, 0xAA);
    BatchResult r_strict, r_tolerant;
    std::atomic<std::int64_t> t_strict{0};
    std::thread a([&] {
        r_strict = strict->verify_ecdsa_columns(cols.message.data(), cols.key.data(), cols.signature.data(), n,
                                                got_strict.data());
        t_strict = Clock::now().time_since_epoch().count();
    });
    std::thread b([&] {
        r_tolerant = tolerant->collect_ecdsa_columns(collected.message.data(), collected.key.data(),
                                                     collected.signature.data(), collected.correlate.data(), n, 6);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(800));  // mid-batch
    const auto t_kill = Clock::now();
    REQUIRE(kill(d.pid(), SIGKILL) == 0);
    a.join();
    const double strict_after_kill =
        std::chrono::duration<double>(Clock::duration(t_strict.load()) - t_kill.time_since_epoch()).count();
    b.join();
    d.stop(SIGKILL);  // reap

    CHECK(r_strict.status == Status::disconnected);
    CHECK(strict_after_kill < 1.0);
    // Fail closed: every verdict the call left behind is 0 or the right one.
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < n; ++i) wrong += got_strict[i] != 0 && got_strict[i] != expected[i];
    CHECK(wrong == 0);

    // Collect with the fallback: part by the daemon, the rest locally, byte for byte the collect rule.
    REQUIRE(r_tolerant.ok());
    CHECK(r_tolerant.local_rows > 0);
    CHECK(r_tolerant.local_rows < n);
    CHECK(r_tolerant.valid == known.valid);
    CHECK(r_tolerant.invalid == known.invalid);
    CHECK(first_entry_differences(collected.correlate.data(), want_collected, 6, expected) == "");
    CHECK(leftover_segments(d).empty());
}
