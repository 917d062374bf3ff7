// SPDX-License-Identifier: MIT
// The reference verifier against direct libsecp256k1 calls on generated rows,
// plus the mode/encoding/tail_size contracts and hand-made edge cases.
#include <catch2/catch.hpp>

#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <vector>

#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"
#include "support/row_span.hpp"

using namespace sigverify;
using reference::GenOptions;
using reference::GenReport;
using wire::Mode;
using wire::RecordKind;
using wire::RowSpan;
using wire::SigEncoding;
using wire::Table;
using test::span_of;

namespace {

const Table kTables[] = {Table::ecdsa, Table::multisig, Table::schnorr, Table::threshold};

// An independent statement of the verdict rules, straight on libsecp256k1.
struct Direct {
    secp256k1_context* ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
    ~Direct() { secp256k1_context_destroy(ctx); }

    bool ecdsa(const std::uint8_t* rec, SigEncoding enc) const {
        std::uint8_t compact[64];
        for (int i = 0; i < 64; ++i)
            compact[i] = enc == SigEncoding::compact ? rec[65 + i] : rec[65 + (i < 32 ? 31 - i : 95 - i)];
        secp256k1_pubkey key;
        secp256k1_ecdsa_signature sig, low;
        if (!secp256k1_ec_pubkey_parse(ctx, &key, rec + 32, 33)) return false;
        if (!secp256k1_ecdsa_signature_parse_compact(ctx, &sig, compact)) return false;
        secp256k1_ecdsa_signature_normalize(ctx, &low, &sig);
        return secp256k1_ecdsa_verify(ctx, &low, rec, &key) == 1;
    }
    bool schnorr(const std::uint8_t* rec) const {
        secp256k1_xonly_pubkey key;
        if (!secp256k1_xonly_pubkey_parse(ctx, &key, rec + 32)) return false;
        return secp256k1_schnorrsig_verify(ctx, rec + 64, rec, 32, &key) == 1;
    }
};

// Rows per table and encoding: SIGVERIFY_REFERENCE_ROWS, else enough for every
// mutation kind and high-S to occur thousands of times. Volume is the long
// step's: test_kernel_long holds this verifier to the independent kernel math
// on far more rows.
std::size_t rows_per_table() {
    const char* v = std::getenv("SIGVERIFY_REFERENCE_ROWS");
    return v != nullptr && *v != '\0' ? std::strtoull(v, nullptr, 10) : 20'000;
}

}  // namespace

TEST_CASE("generated rows of every table and encoding agree with direct libsecp256k1 calls", "[differential]") {
    reference::Verifier verifier(2);
    Direct direct;
    for (Table t : kTables) {
        for (SigEncoding enc : {SigEncoding::opaque, SigEncoding::compact}) {
            if (wire::record_kind(t) == RecordKind::schnorr && enc == SigEncoding::compact) continue;
            GenOptions o;
            o.table = t;
            o.count = rows_per_table();
            o.encoding = enc;
            o.invalid_rate = 0.3;
            o.high_s_rate = 0.25;
            o.seed = 7 + unsigned(t);
            reference::GenReport report;
            auto rows = reference::generate_rows(o, &report);
            const std::size_t ks = wire::canonical_tail_size(t);
            const RowSpan span = span_of(rows, t, ks, enc);
            REQUIRE(span.count == o.count);
            std::vector<std::uint8_t> results(span.count, 0xAA);
            const auto tally = verifier.verify(span, results.data());
            std::size_t mismatches = 0, valid = 0;
            for (std::size_t i = 0; i < span.count; ++i) {
                const bool want = span.kind == RecordKind::ecdsa ? direct.ecdsa(span.row(i), enc) : direct.schnorr(span.row(i));
                mismatches += results[i] != (want ? 1 : 0);
                valid += want;
            }
            INFO(wire::to_string(t) << " " << wire::to_string(enc));
            CHECK(mismatches == 0);
            CHECK(tally.valid == valid);
            CHECK(tally.rows() == span.count);
            // The generator really produced both kinds of row.
            CHECK(report.mutated > o.count / 5);
            CHECK(valid > o.count / 4);
            CHECK(tally.invalid >= report.mutated * 9 / 10);
            if (span.kind == RecordKind::ecdsa) CHECK(report.high_s > o.count / 5);
        }
    }
}

TEST_CASE("opaque and compact encodings give identical verdicts", "[differential]") {
    reference::Verifier verifier(2);
    for (Table t : {Table::ecdsa, Table::multisig}) {
        GenOptions o;
        o.table = t;
        o.count = 5'000;  // the same signatures in both encodings; the case above holds each to libsecp256k1
        o.invalid_rate = 0.4;
        o.high_s_rate = 0.3;
        o.seed = 99;
        o.encoding = SigEncoding::opaque;
        auto opaque = reference::generate_rows(o);
        o.encoding = SigEncoding::compact;
        auto compact = reference::generate_rows(o);
        const std::size_t ks = wire::canonical_tail_size(t);
        std::vector<std::uint8_t> r1(o.count), r2(o.count);
        verifier.verify(span_of(opaque, t, ks, SigEncoding::opaque), r1.data());
        verifier.verify(span_of(compact, t, ks, SigEncoding::compact), r2.data());
        CHECK(r1 == r2);
        // Reading opaque rows as compact must not give the same answers.
        std::vector<std::uint8_t> wrong(o.count);
        verifier.verify(span_of(opaque, t, ks, SigEncoding::compact), wrong.data());
        CHECK(wrong != r1);
    }
}

TEST_CASE("collect zeroes exactly the tails of valid rows", "[differential][collect]") {
    reference::Verifier verifier(2);
    for (Table t : kTables) {
        for (std::size_t ks : {std::size_t(0), std::size_t(3), std::size_t(6), std::size_t(200)}) {
            GenOptions o;
            o.table = t;
            o.count = 1'000;  // every table and tail size; the kernel differential compares collect too
            o.tail_size = ks;
            o.invalid_rate = 0.35;
            o.high_s_rate = 0.2;
            o.seed = 1234 + ks;
            auto rows = reference::generate_rows(o);
            const auto original = rows;
            const RowSpan span = span_of(rows, t, ks, SigEncoding::opaque);
            std::vector<std::uint8_t> results(span.count);
            const auto by_results = verifier.verify(span, results.data());
            REQUIRE(rows == original);  // results mode never writes rows
            const auto by_collect = verifier.collect(span);
            CHECK(by_collect == by_results);
            std::vector<std::uint8_t> expected = original;
            const std::size_t stride = span.row_stride(), record = wire::record_size(span.kind);
            for (std::size_t i = 0; i < span.count; ++i)
                if (results[i]) std::memset(expected.data() + i * stride + record, 0, ks);
            INFO(wire::to_string(t) << " key_size " << ks);
            CHECK(rows == expected);
            CHECK(by_results.valid > 0);
            CHECK(by_results.invalid > 0);
        }
    }
}

TEST_CASE("thread count does not change verdicts; results are zeroed first", "[differential]") {
    GenOptions o;
    o.table = Table::schnorr;
    o.count = 5'000;
    o.invalid_rate = 0.5;
    auto rows = reference::generate_rows(o);
    const RowSpan span = span_of(rows, Table::schnorr, 3, SigEncoding::opaque);
    reference::Verifier one(1), two(2), four(4);
    std::vector<std::uint8_t> a(o.count, 0xEE), b(o.count, 0xEE), c(o.count, 0xEE);
    one.verify(span, a.data());
    two.verify(span, b.data());
    four.verify(span, c.data());
    CHECK(a == b);
    CHECK(a == c);
    for (auto v : a) REQUIRE(v <= 1);
    // Zeroed first: rows that all fail verification (every row mutated, and
    // rows of zero bytes that do not even parse) leave no byte of a results
    // buffer prefilled with 0xAA untouched, for every thread count.
    GenOptions bad = o;
    bad.invalid_rate = 1.0;
    GenReport report;
    auto failing = reference::generate_rows(bad, &report);
    REQUIRE(report.mutated == o.count);
    std::vector<std::uint8_t> zero_rows(o.count * (wire::record_size(wire::RecordKind::ecdsa) + 3), 0);
    const RowSpan failing_spans[] = {span_of(failing, Table::schnorr, 3, SigEncoding::opaque),
                                     span_of(zero_rows, Table::ecdsa, 3, SigEncoding::opaque)};
    for (const RowSpan& fs : failing_spans) {
        for (reference::Verifier* v : {&one, &two, &four}) {
            std::vector<std::uint8_t> res(o.count, 0xAA);
            const auto t = v->verify(fs, res.data());
            INFO(wire::to_string(fs.kind) << " threads " << v->threads());
            CHECK(t.valid == 0);
            CHECK(t.invalid == o.count);
            CHECK(std::count(res.begin(), res.end(), std::uint8_t(0)) == static_cast<std::ptrdiff_t>(o.count));
        }
    }
}

TEST_CASE("generator is deterministic and independent of threads", "[generator]") {
    GenOptions o;
    o.table = Table::multisig;
    o.count = 2'000;
    o.invalid_rate = 0.1;
    o.threads = 1;
    const auto a = reference::generate_rows(o);
    o.threads = 2;
    const auto b = reference::generate_rows(o);
    CHECK(a == b);
    o.seed = 2;
    CHECK(reference::generate_rows(o) != a);
    o.tail_size = 256;
    CHECK_THROWS_AS(reference::generate_rows(o), std::invalid_argument);
}

TEST_CASE("multisig tails follow libbitcoin's expansion", "[generator]") {
    GenOptions o;
    o.table = Table::multisig;
    o.count = 5'000;
    auto rows = reference::generate_rows(o);
    const RowSpan span = span_of(rows, Table::multisig, 6, SigEncoding::opaque);
    reference::RowVerifier v;
    // Within a group, signature i is tried against keys i..i+(n-m) and exactly
    // one of those rows verifies.
    std::size_t i = 0, groups = 0;
    std::uint32_t last_block = 0;
    while (i < span.count) {
        const auto* row = reinterpret_cast<const wire::MultisigRow*>(span.row(i));
        const auto block = wire::read_u24le(row->block_fk);
        const auto group = wire::read_u16le(row->group);
        CHECK(block >= last_block);
        last_block = block;
        std::size_t j = i;
        std::map<int, int> valid_per_sig;
        while (j < span.count) {
            const auto* r = reinterpret_cast<const wire::MultisigRow*>(span.row(j));
            if (wire::read_u24le(r->block_fk) != block || wire::read_u16le(r->group) != group) break;
            const int sig = r->mn >> 4, key = r->mn & 0xF;
            CHECK(key >= sig);
            valid_per_sig[sig] += v.verify_row(span, j);
            ++j;
        }
        if (j < span.count) {  // the last group may be cut short by count
            for (const auto& [sig, n] : valid_per_sig) CHECK(n == 1);
            ++groups;
        }
        i = j;
    }
    CHECK(groups > 100);
}

namespace {
// A fresh valid ECDSA record (compact encoding) to break in one way.
wire::EcdsaRecord valid_ecdsa() {
    GenOptions o;
    o.table = Table::ecdsa;
    o.count = 1;
    o.encoding = SigEncoding::compact;
    auto rows = reference::generate_rows(o);
    wire::EcdsaRecord r;
    std::memcpy(&r, rows.data(), sizeof r);
    return r;
}
const std::uint8_t kN[32] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE,
                             0xBA, 0xAE, 0xDC, 0xE6, 0xAF, 0x48, 0xA0, 0x3B, 0xBF, 0xD2, 0x5E, 0x8C, 0xD0, 0x36, 0x41, 0x41};
}  // namespace

TEST_CASE("ECDSA edge cases", "[edge][ecdsa]") {
    reference::RowVerifier v;
    const auto ok = valid_ecdsa();
    auto check = [&](const wire::EcdsaRecord& r) { return v.verify_ecdsa(reinterpret_cast<const std::uint8_t*>(&r), SigEncoding::compact); };
    REQUIRE(check(ok));

    SECTION("high-S is valid, and the row is not modified") {
        wire::EcdsaRecord r = ok;
        int borrow = 0;  // s <- n - s
        for (int i = 31; i >= 0; --i) {
            int d = int(kN[i]) - int(ok.sig[32 + i]) - borrow;
            borrow = d < 0;
            r.sig[32 + i] = std::uint8_t(d + (borrow ? 256 : 0));
        }
        const wire::EcdsaRecord before = r;
        CHECK(check(r));
        CHECK(std::memcmp(&before, &r, sizeof r) == 0);
    }
    SECTION("r = 0, s = 0, r = n, s = n, s = 2^256 - 1 are invalid") {
        for (int half : {0, 1}) {
            wire::EcdsaRecord r = ok;
            std::memset(r.sig + 32 * half, 0, 32);
            CHECK_FALSE(check(r));
            std::memcpy(r.sig + 32 * half, kN, 32);
            CHECK_FALSE(check(r));
            std::memset(r.sig + 32 * half, 0xFF, 32);
            CHECK_FALSE(check(r));
        }
    }
    SECTION("bad prefixes and x >= p are invalid") {
        for (std::uint8_t prefix : {0x00, 0x01, 0x04, 0x05, 0x06, 0x07, 0xFF}) {
            wire::EcdsaRecord r = ok;
            r.point[0] = prefix;
            CHECK_FALSE(check(r));
        }
        wire::EcdsaRecord r = ok;
        std::memset(r.point + 1, 0xFF, 32);
        CHECK_FALSE(check(r));
        // The other parity of the same x is a different key.
        r = ok;
        r.point[0] ^= 1;
        CHECK_FALSE(check(r));
    }
}

TEST_CASE("Schnorr edge cases", "[edge][schnorr]") {
    GenOptions o;
    o.table = Table::schnorr;
    o.count = 1;
    auto rows = reference::generate_rows(o);
    wire::SchnorrRecord ok;
    std::memcpy(&ok, rows.data(), sizeof ok);
    reference::RowVerifier v;
    auto check = [&](const wire::SchnorrRecord& r) { return v.verify_schnorr(reinterpret_cast<const std::uint8_t*>(&r)); };
    REQUIRE(check(ok));
    wire::SchnorrRecord r = ok;
    std::memcpy(r.sig + 32, kN, 32);
    CHECK_FALSE(check(r));  // s = n
    r = ok;
    std::memset(r.sig, 0xFF, 32);
    CHECK_FALSE(check(r));  // R.x >= p
    r = ok;
    std::memset(r.xonly, 0xFF, 32);
    CHECK_FALSE(check(r));  // key x >= p
    r = ok;
    r.hash[0] ^= 1;
    CHECK_FALSE(check(r));
}
