// SPDX-License-Identifier: MIT
// The CPU lanes' BIP-340 verifier (kernels/lanes/, schnorr_verify8) row by
// row against libsecp256k1 (reference::RowVerifier), every recheck resolved
// by the exact path as the backends do: generated valid and invalid rows, the
// official BIP-340 vectors, hostile encodings (R.x >= p, s >= n, keys off the
// curve or >= p, random bytes) and rows that drive the ladder into a
// degenerate addition; each width in turn, also forced by SIGVERIFY_LANES.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "host_rows.hpp"
#include "kernels/kernel_math.hpp"
#include "kernels/lanes/lanes.hpp"
#include "lanes_widths.hpp"
#include "reference/reference_verifier.hpp"
#include "support/test_vectors.hpp"

using namespace sigverify;
using namespace sigverify::kernels;
using namespace sigverify::kernels::lanes;

namespace {

constexpr std::size_t kRec = 128;  // SchnorrRecord bytes, no tail

std::vector<Width> widths() { return sigverify::kernel_test::lane_widths(); }

struct Tally {
    std::size_t rows = 0, valid = 0, rechecks = 0;
};

// Every 8 rows (rows.size() a multiple of 8 * stride) through the lanes at
// width w, against libsecp256k1 row by row.
Tally check_rows(Width w, const std::vector<u8>& rows, std::size_t stride) {
    static const reference::RowVerifier ref;
    Tally t;
    const std::size_t n = rows.size() / stride;
    REQUIRE(n % 8 == 0);
    for (std::size_t i = 0; i < n; i += 8) {
        const u8* rec[8];
        for (int l = 0; l < 8; ++l) rec[l] = rows.data() + (i + l) * stride;
        u8 v[8];
        schnorr_verify8(w, rec, v);
        for (int l = 0; l < 8; ++l) {
            INFO("row " << i + l << " width " << width_name(w));
            REQUIRE(v[l] <= 2);
            if (w == Width::scalar) REQUIRE(v[l] != 2);
            t.rechecks += v[l] == 2;
            const bool got = resolve_verdict32(v[l], rec[l], wire::RecordKind::schnorr, wire::SigEncoding::compact);
            const bool want = ref.verify_schnorr(rec[l]);
            REQUIRE(got == want);
            t.valid += want;
            ++t.rows;
        }
    }
    return t;
}

std::vector<u8> generated(std::size_t count, double invalid_rate, std::uint64_t seed) {
    kernel_test::HostGenOptions o;
    o.table = wire::Table::schnorr;
    o.count = count;
    o.tail_size = 0;
    o.invalid_rate = invalid_rate;
    o.seed = seed;
    return kernel_test::host_generate_rows(o);
}

// A valid BIP-340 signature by key d (even-y P = d G) on msg with nonce k.
void sign(u8* row, Sc d, Sc k, const u8 msg[32]) {
    Ge p = kernel_test::detail::mul_g(d);
    if (fe_is_odd(p.y)) sc_neg(d, d);
    const Ge r = kernel_test::detail::mul_g(k);
    if (fe_is_odd(r.y)) sc_neg(k, k);
    std::memcpy(row + kRecHash, msg, 32);
    fe_get_b32(row + kRecKey, p.x);
    fe_get_b32(row + kSchnorrSig, r.x);
    u8 eb[32];
    bip340_challenge(eb, row + kSchnorrSig, row + kRecKey, msg);
    Sc e, s;
    sc_set_bytes(e, eb, ByteOrder::big);
    sc_mul(s, e, d);
    sc_add(s, s, k);
    sc_get_b32(row + kSchnorrSig + 32, s);
}

}  // namespace

TEST_CASE("lanes BIP-340 verdicts equal libsecp256k1 row by row on generated rows") {
    const auto rows = generated(1600, 0.3, 11);
    for (Width w : widths()) {
        const Tally t = check_rows(w, rows, kRec);
        CHECK(t.rows == 1600);
        CHECK(t.valid > 1000);
        CHECK(t.valid < 1300);
        CHECK(t.rechecks == 0);  // no generated row meets a degenerate addition
    }
}

TEST_CASE("lanes BIP-340 on the official vectors, each width forced by SIGVERIFY_LANES") {
    const auto set = test::load_bip340();
    REQUIRE(set.cases.size() == 15);
    std::vector<u8> rows;
    std::vector<bool> expected;
    while (rows.size() / kRec % 8 != 0 || rows.empty()) {
        for (const auto& c : set.cases) {
            const u8* rec = reinterpret_cast<const u8*>(&c.record);
            rows.insert(rows.end(), rec, rec + kRec);
            expected.push_back(c.expected_valid);
        }
    }
    for (const char* forced : {"scalar", "ifma8", "ifma4"}) {
        setenv("SIGVERIFY_LANES", forced, 1);
        const Width w = chosen_width();
        if (std::string(forced) == "ifma8" && !cpu_has_ifma8()) WARN("no IFMA: ifma8 falls back to scalar");
        if (std::string(forced) == "ifma4" && !cpu_has_ifma4()) WARN("no IFMA with VL: ifma4 falls back to scalar");
        check_rows(w, rows, kRec);
        for (std::size_t i = 0; i < expected.size(); i += 8) {
            const u8* rec[8];
            for (int l = 0; l < 8; ++l) rec[l] = rows.data() + (i + l) * kRec;
            u8 v[8];
            schnorr_verify8(w, rec, v);
            for (int l = 0; l < 8; ++l) {
                INFO("vector " << (i + l) % set.cases.size() << " width " << forced);
                CHECK(resolve_verdict32(v[l], rec[l], wire::RecordKind::schnorr, wire::SigEncoding::compact) ==
                      expected[i + l]);
            }
        }
    }
    unsetenv("SIGVERIFY_LANES");
}

TEST_CASE("lanes BIP-340 on hostile rows: R.x >= p, s >= n, keys off the curve or >= p, random bytes") {
    std::mt19937_64 rng(77);
    auto rows = generated(768, 0.0, 12);  // valid rows, then one field spoiled per row
    const u8 p_bytes[32] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE, 0xFF, 0xFF, 0xFC, 0x2F};
    const u8 n_bytes[32] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                            0xFF, 0xFF, 0xFF, 0xFF, 0xFE, 0xBA, 0xAE, 0xDC, 0xE6, 0xAF, 0x48,
                            0xA0, 0x3B, 0xBF, 0xD2, 0x5E, 0x8C, 0xD0, 0x36, 0x41, 0x41};
    for (std::size_t i = 0; i < 768; ++i) {
        u8* r = rows.data() + i * kRec;
        switch (i % 8) {
            case 0: std::memcpy(r + kSchnorrSig, p_bytes, 32); break;            // R.x = p
            case 1: std::memset(r + kSchnorrSig, 0xFF, 32); break;               // R.x > p
            case 2: std::memcpy(r + kSchnorrSig + 32, n_bytes, 32); break;       // s = n
            case 3: std::memset(r + kSchnorrSig + 32, 0xFF, 32); break;          // s > n
            case 4: std::memcpy(r + kRecKey, p_bytes, 32); break;                // key x = p
            case 5: for (int b = 0; b < 32; ++b) r[kRecKey + b] = static_cast<u8>(rng()); break;  // maybe off curve
            case 6: for (std::size_t b = 0; b < kRec; ++b) r[b] = static_cast<u8>(rng()); break;  // all random
            default: break;                                                      // valid, as a control
        }
    }
    // a key of x = 5 is off the curve (5^3 + 7 = 132 is not a square mod p)
    u8* off = rows.data() + 13 * kRec;
    std::memset(off + kRecKey, 0, 32);
    off[kRecKey + 31] = 5;
    for (Width w : widths()) {
        const Tally t = check_rows(w, rows, kRec);
        CHECK(t.valid >= 96);  // the controls
    }
}

TEST_CASE("lanes BIP-340 rows that meet a degenerate ladder addition are rechecked, never misjudged") {
    // Key x = G.x (P = G, even y). The ladder adds, from the first window on,
    // the four-bit digits of |k1| (table of +-P) and |k2| (lambda P), where
    // -e = k1 + k2 lambda, and after every kGWindow bits a digit of s's low
    // half (table of G): with |k2|'s top kGWindow bits zero the accumulator
    // is then +-A G, A the top kGWindow bits of |k1|; an s whose digit is A
    // makes the next addition one of equal or opposite points. s is free in
    // an invalid row: these rows are invalid, and valid rows by the key d = 1
    // are mixed in as controls.
    std::vector<u8> rows;
    std::mt19937_64 rng(5);
    const Ge g = ge_generator();
    std::size_t wanted = 0, valid = 0;
    while (rows.size() < 64 * kRec) {
        std::vector<u8> row(kRec);
        for (auto& b : row) b = static_cast<u8>(rng());
        if (rows.size() / kRec % 4 == 0) {  // a valid control
            Sc k;
            sc_set_bytes(k, row.data() + 64, ByteOrder::big);
            sign(row.data(), sc_one(), k, row.data());
            rows.insert(rows.end(), row.begin(), row.end());
            ++valid;
            continue;
        }
        fe_get_b32(row.data() + kRecKey, g.x);
        u8 eb[32];
        bip340_challenge(eb, row.data() + kSchnorrSig, row.data() + kRecKey, row.data() + kRecHash);
        Sc e, k1, k2;
        sc_set_bytes(e, eb, ByteOrder::big);
        sc_neg(e, e);
        sc_split_lambda(k1, k2, e);
        if (sc_is_high(k1)) sc_neg(k1, k1);
        if (sc_is_high(k2)) sc_neg(k2, k2);
        const u64 top_a = k1.v[1] >> (64 - kGWindow), top_b = k2.v[1] >> (64 - kGWindow);
        if (top_b != 0 || top_a == 0) continue;
        Sc s;
        sc_set_bytes(s, row.data() + kSchnorrSig + 32, ByteOrder::big);
        s.v[1] = (s.v[1] & (~0ull >> kGWindow)) | (top_a << (64 - kGWindow));
        s.v[3] &= 0x7FFFFFFFFFFFFFFFull;  // s < n
        sc_get_b32(row.data() + kSchnorrSig + 32, s);
        rows.insert(rows.end(), row.begin(), row.end());
        ++wanted;
    }
    for (Width w : widths()) {
        const Tally t = check_rows(w, rows, kRec);
        CHECK(t.valid == valid);
        if (w != Width::scalar) CHECK(t.rechecks >= wanted);
    }
}
