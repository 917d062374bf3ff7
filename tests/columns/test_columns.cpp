// SPDX-License-Identifier: MIT
// Column batches against the row path: the same verdicts on the same data for
// all four tables, both ECDSA encodings, both modes (collect byte by byte),
// any thread count; conversions round-trip; bad column sizes are rejected.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "reference/columns.hpp"
#include "reference/parallel_for.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"

using namespace sigverify;
using wire::ColumnSpan;
using reference::ColumnError;
using reference::ColumnTable;
using reference::ColumnVerifier;
using reference::CorrelateLayout;
using wire::Mode;
using wire::RecordKind;
using wire::RowSpan;
using wire::SigEncoding;
using wire::Table;

namespace {

const Table kTables[] = {Table::ecdsa, Table::multisig, Table::schnorr, Table::threshold};

struct Generated {
    std::vector<std::uint8_t> rows;
    RowSpan span;
};

Generated generate(Table t, SigEncoding enc, std::size_t count, std::uint64_t seed, double invalid_rate = 0.3) {
    reference::GenOptions o;
    o.table = t;
    o.count = count;
    o.encoding = enc;
    o.invalid_rate = invalid_rate;
    o.high_s_rate = 0.25;
    o.seed = seed;
    Generated g;
    g.rows = reference::generate_rows(o);
    g.span = RowSpan{wire::record_kind(t), wire::canonical_tail_size(t), enc, g.rows.data(), count};
    return g;
}

}  // namespace

TEST_CASE("column path gives the row path's verdicts on generated rows of every table", "[columns][differential]") {
    reference::Verifier rows_verifier(2);
    ColumnVerifier columns_verifier(2);
    reference::RowVerifier single;
    for (Table t : kTables) {
        for (SigEncoding enc : {SigEncoding::opaque, SigEncoding::compact}) {
            if (wire::record_kind(t) == RecordKind::schnorr && enc == SigEncoding::compact) continue;
            DYNAMIC_SECTION(wire::to_string(t) << " " << wire::to_string(enc)) {
                Generated g = generate(t, enc, 8'000, 31 + unsigned(t) * 2 + unsigned(enc));
                const RowSpan& span = g.span;

                // Results mode.
                std::vector<std::uint8_t> row_results(span.count, 0xAA), col_results(span.count, 0xAA);
                const auto row_tally = rows_verifier.verify(span, row_results.data());
                ColumnTable table = reference::rows_to_columns(span, CorrelateLayout::tail);
                const ColumnSpan batch = table.view();
                REQUIRE(batch.check() == ColumnError::none);
                REQUIRE(batch.count == span.count);
                const auto col_tally = columns_verifier.verify(batch, col_results.data());
                CHECK(col_tally == row_tally);
                CHECK(col_results == row_results);
                // The data are mixed enough to mean something.
                CHECK(row_tally.valid > span.count / 5);  // multisig: most rows pair a signature with another key
                CHECK(row_tally.invalid > span.count / 10);
                for (std::uint8_t r : col_results) REQUIRE((r == 0 || r == 1));

                // Single-threaded range API over two halves agrees too.
                std::vector<std::uint8_t> halves(span.count, 0xAA);
                auto t1 = reference::run_columns(single, batch, 0, span.count / 2, Mode::results, halves.data());
                t1 += reference::run_columns(single, batch, span.count / 2, span.count, Mode::results, halves.data());
                CHECK(t1 == row_tally);
                CHECK(halves == row_results);

                // Collect mode with the row tail as correlate: byte-identical to
                // the row path's collected tails.
                std::vector<std::uint8_t> collected_rows = g.rows;
                RowSpan collected_span = span;
                collected_span.data = collected_rows.data();
                const auto row_collect = rows_verifier.collect(collected_span);
                const auto col_collect = columns_verifier.collect(batch);
                CHECK(row_collect == row_tally);
                CHECK(col_collect == row_tally);
                const std::size_t ks = span.tail_size, record = wire::record_size(span.kind);
                std::size_t tail_mismatches = 0;
                for (std::size_t i = 0; i < span.count; ++i)
                    if (std::memcmp(collected_span.row(i) + record, table.correlate.data() + i * ks, ks) != 0)
                        ++tail_mismatches;
                CHECK(tail_mismatches == 0);
                // The other columns are never written.
                ColumnTable pristine = reference::rows_to_columns(span, CorrelateLayout::tail);
                CHECK(table.message == pristine.message);
                CHECK(table.key == pristine.key);
                CHECK(table.signature == pristine.signature);

                // Collect with libbitcoin's correlate layout: valid rows zeroed,
                // invalid rows untouched, byte by byte.
                ColumnTable lb = reference::rows_to_columns(span, CorrelateLayout::libbitcoin, t);
                REQUIRE(lb.tail_size == reference::libbitcoin_correlate_size(span.kind));
                const std::vector<std::uint8_t> before = lb.correlate;
                const auto lb_tally = columns_verifier.collect(lb.view());
                CHECK(lb_tally == row_tally);
                std::size_t bad = 0;
                for (std::size_t i = 0; i < span.count; ++i) {
                    for (std::size_t b = 0; b < lb.tail_size; ++b) {
                        const std::size_t at = i * lb.tail_size + b;
                        const std::uint8_t want = row_results[i] ? 0 : before[at];
                        if (lb.correlate[at] != want) ++bad;
                    }
                    // Every entry starts non-zero (block ids >= 100000), so a
                    // zero entry is a write, never a coincidence.
                    REQUIRE(std::any_of(before.begin() + std::ptrdiff_t(i * lb.tail_size),
                                        before.begin() + std::ptrdiff_t((i + 1) * lb.tail_size),
                                        [](std::uint8_t v) { return v != 0; }));
                }
                CHECK(bad == 0);
            }
        }
    }
}

TEST_CASE("thread counts do not change column verdicts", "[columns]") {
    Generated g = generate(Table::multisig, SigEncoding::opaque, 3'000, 77);
    ColumnTable table = reference::rows_to_columns(g.span, CorrelateLayout::none);
    REQUIRE(table.tail_size == 0);
    std::vector<std::uint8_t> want(g.span.count);
    ColumnVerifier(1).verify(table.view(), want.data());
    for (unsigned threads : {2u, 3u, 7u}) {
        std::vector<std::uint8_t> got(g.span.count, 0xAA);
        ColumnVerifier v(threads);
        CHECK(v.threads() == threads);
        v.verify(table.view(), got.data());
        CHECK(got == want);
    }
    // Collect with no correlate writes nothing but still counts.
    const auto tally = ColumnVerifier(2).collect(table.view());
    CHECK(tally.rows() == g.span.count);
    CHECK(tally.valid == std::size_t(std::count(want.begin(), want.end(), 1)));
}

TEST_CASE("the ECDSA encoding of a column batch is honoured", "[columns]") {
    Generated g = generate(Table::ecdsa, SigEncoding::opaque, 500, 5, 0.0);
    ColumnTable table = reference::rows_to_columns(g.span, CorrelateLayout::none);
    ColumnVerifier v(2);
    std::vector<std::uint8_t> results(500);
    CHECK(v.verify(table.view(), results.data()).valid == 500);
    table.encoding = SigEncoding::compact;  // the same bytes read the other way
    CHECK(v.verify(table.view(), results.data()).valid == 0);
}

TEST_CASE("rows and columns convert both ways without loss", "[columns]") {
    for (Table t : kTables) {
        Generated g = generate(t, SigEncoding::compact, 700, 9 + unsigned(t));
        ColumnTable tail = reference::rows_to_columns(g.span, CorrelateLayout::tail);
        CHECK(reference::columns_to_rows(tail.view(), CorrelateLayout::tail) == g.rows);
        // Columns are the record fields in order.
        const std::size_t kw = wire::column_key_width(g.span.kind);
        CHECK(std::memcmp(tail.message.data() + 32 * 5, g.span.row(5), 32) == 0);
        CHECK(std::memcmp(tail.key.data() + kw * 5, g.span.row(5) + 32, kw) == 0);
        CHECK(std::memcmp(tail.signature.data() + 64 * 5, g.span.row(5) + 32 + kw, 64) == 0);

        ColumnTable lb = reference::rows_to_columns(g.span, CorrelateLayout::libbitcoin, t);
        if (t == Table::threshold) {
            CHECK_THROWS_AS(reference::columns_to_rows(lb.view(), CorrelateLayout::libbitcoin, t),
                            std::invalid_argument);
        } else {
            CHECK(reference::columns_to_rows(lb.view(), CorrelateLayout::libbitcoin, t) == g.rows);
        }
        // Without a correlate the rows have no tail.
        const auto bare = reference::columns_to_rows(lb.view(), CorrelateLayout::none);
        CHECK(bare.size() == g.span.count * wire::record_size(g.span.kind));
    }
    // The libbitcoin ECDSA correlate of a multisig row: id = block_fk, pair = mn, group.
    Generated ms = generate(Table::multisig, SigEncoding::opaque, 50, 3);
    ColumnTable lb = reference::rows_to_columns(ms.span, CorrelateLayout::libbitcoin, Table::multisig);
    for (std::size_t i = 0; i < 50; ++i) {
        const auto* row = reinterpret_cast<const wire::MultisigRow*>(ms.span.row(i));
        const auto c = reference::read_ecdsa_correlate(lb.correlate.data() + 6 * i);
        CHECK(c.id == wire::read_u24le(row->block_fk));
        CHECK(c.pair == row->mn);
        CHECK(c.group == wire::read_u16le(row->group));
    }
    // Layout/table mismatches are refused.
    CHECK_THROWS_AS(reference::rows_to_columns(ms.span, CorrelateLayout::libbitcoin), std::invalid_argument);
    CHECK_THROWS_AS(reference::rows_to_columns(ms.span, CorrelateLayout::libbitcoin, Table::schnorr),
                    std::invalid_argument);
    CHECK_THROWS_AS(reference::rows_to_columns(ms.span, CorrelateLayout::libbitcoin, Table::ecdsa),
                    std::invalid_argument);  // tail_size 6 is not the ecdsa table's tail
}

TEST_CASE("bad column sizes and fields are rejected before anything is written", "[columns]") {
    std::vector<std::uint8_t> msg(10 * 32), key33(10 * 33), key32(10 * 32), sig(10 * 64), corr(10 * 6);
    ColumnSpan b;
    using reference::bind_columns;
    const auto bind = [&](RecordKind kind, std::size_t tail, std::size_t msg_n, std::size_t key_n, std::size_t sig_n,
                          std::size_t corr_n) {
        auto& key = kind == RecordKind::ecdsa ? key33 : key32;
        return bind_columns(kind, SigEncoding::opaque, tail, {msg.data(), msg_n}, {key.data(), key_n},
                            {sig.data(), sig_n}, {corr.data(), corr_n}, b);
    };
    CHECK(bind(RecordKind::ecdsa, 6, 320, 330, 640, 60) == ColumnError::none);
    CHECK(b.count == 10);
    CHECK(bind(RecordKind::schnorr, 6, 320, 320, 640, 60) == ColumnError::none);
    CHECK(bind(RecordKind::ecdsa, 0, 320, 330, 640, 0) == ColumnError::none);
    CHECK(bind(RecordKind::ecdsa, 6, 319, 330, 640, 60) == ColumnError::message_size);
    CHECK(bind(RecordKind::ecdsa, 6, 320, 320, 640, 60) == ColumnError::key_size);  // x-only width for ECDSA
    CHECK(bind(RecordKind::schnorr, 6, 320, 330, 640, 60) == ColumnError::key_size);
    CHECK(bind(RecordKind::ecdsa, 6, 320, 329, 640, 60) == ColumnError::key_size);
    CHECK(bind(RecordKind::ecdsa, 6, 320, 330, 576, 60) == ColumnError::signature_size);
    CHECK(bind(RecordKind::ecdsa, 6, 320, 330, 641, 60) == ColumnError::signature_size);
    CHECK(bind(RecordKind::ecdsa, 6, 320, 330, 640, 54) == ColumnError::correlate_size);
    CHECK(bind(RecordKind::ecdsa, 6, 320, 330, 640, 0) == ColumnError::correlate_size);
    CHECK(bind(RecordKind::ecdsa, 0, 320, 330, 640, 6) == ColumnError::correlate_size);
    CHECK(bind(RecordKind::ecdsa, 3, 320, 330, 640, 60) == ColumnError::correlate_size);  // 60 = 20 * 3
    CHECK(bind(RecordKind::ecdsa, 256, 320, 330, 640, 60) == ColumnError::bad_tail_size);
    CHECK(bind(RecordKind(7), 6, 320, 330, 640, 60) == ColumnError::bad_kind);
    // The failed binds left the last good batch alone.
    CHECK(b.count == 10);
    CHECK(b.tail_size == 0);

    // Fields checked on a hand-made view.
    ColumnSpan v;
    v.count = 4;
    v.message = msg.data();
    v.key = key33.data();
    v.signature = sig.data();
    CHECK(v.check() == ColumnError::none);
    v.tail_size = 6;
    CHECK(v.check() == ColumnError::null_column);  // correlate missing
    v.correlate = corr.data();
    CHECK(v.check() == ColumnError::none);
    v.encoding = SigEncoding(9);
    CHECK(v.check() == ColumnError::bad_encoding);
    v.encoding = SigEncoding::compact;
    v.key = nullptr;
    CHECK(v.check() == ColumnError::null_column);
    v.key = key33.data();
    v.count = SIZE_MAX / 64;  // the row stride 129 + 6 overflows first
    CHECK(v.check() == ColumnError::too_many_rows);
    v.count = SIZE_MAX / 135 + 1;  // stride 129 + 6 = 135
    CHECK(v.check() == ColumnError::too_many_rows);
    v.count = SIZE_MAX / 135;
    CHECK(v.check() == ColumnError::none);
    v.count = SIZE_MAX / 135 + 1;

    // The verifier refuses such a batch and writes nothing.
    std::vector<std::uint8_t> results(4, 0xAA);
    ColumnVerifier verifier(2);
    CHECK_THROWS_AS(verifier.verify(v, results.data()), std::invalid_argument);
    v.count = 4;
    v.message = nullptr;
    CHECK_THROWS_AS(verifier.verify(v, results.data()), std::invalid_argument);
    CHECK(results == std::vector<std::uint8_t>(4, 0xAA));
    v.message = msg.data();
    CHECK_THROWS_AS(verifier.verify(v, nullptr), std::invalid_argument);
    // All-zero rows are invalid and reported as such, results zeroed first.
    CHECK(verifier.verify(v, results.data()) == reference::Tally{0, 4});
    CHECK(results == std::vector<std::uint8_t>(4, 0));
    // Empty batch: nothing to do, null columns allowed.
    CHECK(verifier.verify(ColumnSpan{}, nullptr).rows() == 0);
}

TEST_CASE("WorkerPool::parallel_for covers every index exactly once and rethrows", "[columns][pool]") {
    for (unsigned threads : {1u, 2u, 5u}) {
        reference::WorkerPool pool(threads);
        CHECK(pool.size() == threads);
        for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(7), std::size_t(100'003)}) {
            std::vector<std::atomic<int>> hits(count);
            std::vector<std::atomic<int>> per_worker(threads);
            // Catch assertions are not thread-safe: workers only count, the test thread checks.
            std::atomic<int> bad_ranges{0};
            pool.parallel_for(count, 7, [&](unsigned w, std::size_t begin, std::size_t end) {
                if (!(begin < end && end <= count && w < threads)) {
                    ++bad_ranges;
                    return;
                }
                per_worker[w] += 1;
                for (std::size_t i = begin; i < end; ++i) hits[i] += 1;
            });
            CHECK(bad_ranges == 0);
            std::size_t wrong = 0;
            for (auto& h : hits) wrong += h.load() != 1;
            CHECK(wrong == 0);
        }
        CHECK_THROWS_AS(pool.parallel_for(1000, 10,
                                          [](unsigned, std::size_t begin, std::size_t end) {
                                              if (begin <= 500 && 500 < end) throw std::runtime_error("row 500");
                                          }),
                        std::runtime_error);
        // The pool survives a failed job.
        std::atomic<std::size_t> sum{0};
        pool.parallel_for(1000, 10, [&](unsigned, std::size_t b, std::size_t e) { sum += e - b; });
        CHECK(sum == 1000);
    }
}
