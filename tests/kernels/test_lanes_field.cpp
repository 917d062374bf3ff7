// SPDX-License-Identifier: MIT
// The CPU lanes' field primitives (kernels/lanes/) against kernels/field.hpp
// (itself proven against OpenSSL in test_kernel_math), element by element, on
// random and edge values, at every width this CPU runs; and the width choice
// (SIGVERIFY_LANES). Where the CPU lacks IFMA the 8-lane cases are skipped
// with a message, the scalar width still runs.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/lanes/lanes.hpp"
#include "lanes_widths.hpp"

using namespace sigverify::kernels;
using namespace sigverify::kernels::lanes;

namespace {

Fe from_words(u64 w3, u64 w2, u64 w1, u64 w0) { return Fe{{w0, w1, w2, w3}}; }

// Edge values, all < p: 0, 1, 2, p-1, p-2, (p-1)/2, 2^255, 2^52 - 1, limbs
// all ones below p, 0x1000003D0, values at every 52-bit limb boundary.
std::vector<Fe> edge_values() {
    const u64 f = ~0ull;
    std::vector<Fe> e = {
        from_words(0, 0, 0, 0),
        from_words(0, 0, 0, 1),
        from_words(0, 0, 0, 2),
        from_words(f, f, f, 0xFFFFFFFEFFFFFC2Eull),
        from_words(f, f, f, 0xFFFFFFFEFFFFFC2Dull),
        from_words(0x7FFFFFFFFFFFFFFFull, f, f, 0xFFFFFFFF7FFFFE17ull),
        from_words(1ull << 63, 0, 0, 0),
        from_words(0, 0, 0, (1ull << 52) - 1),
        from_words(f, f, f, 0xFFFFFFFEFFFFFC00ull),
        from_words(0, 0, 0, 0x1000003D0ull),
        from_words(0, 0, 1ull << 40, 0),
        from_words(0, 0, 0, 1ull << 52),
        from_words(0, 1ull << 40, 0, 0),
        from_words(1ull << 16, 0, 0, 0),
        from_words(0xFFFF000000000000ull, 0, 0, 0),
        from_words(f, f, 0, 0),
    };
    return e;
}

Fe random_fe(std::mt19937_64& rng) {
    for (;;) {
        Fe a{{rng(), rng(), rng(), rng()}};
        // keep values near the top half often, and reject >= p
        if (a.v[3] == ~0ull && a.v[2] == ~0ull && a.v[1] == ~0ull && a.v[0] >= 0xFFFFFFFEFFFFFC2Full) continue;
        return a;
    }
}

std::vector<Width> widths() { return sigverify::kernel_test::lane_widths(); }

// Runs op on inputs (padded to a multiple of 8) at width w and at the
// scalar width, and compares every element.
void check_op(Width w, FieldOp op, const std::vector<Fe>& a, const std::vector<Fe>& b) {
    REQUIRE(a.size() == b.size());
    REQUIRE(a.size() % 8 == 0);
    for (std::size_t i = 0; i < a.size(); i += 8) {
        Fe got[8], want[8];
        bool got_ok[8], want_ok[8];
        field_op8(w, op, &a[i], &b[i], got, got_ok);
        field_op8(Width::scalar, op, &a[i], &b[i], want, want_ok);
        for (int l = 0; l < 8; ++l) {
            INFO("op " << static_cast<int>(op) << " width " << width_name(w) << " element " << i + l);
            REQUIRE(fe_equal(got[l], want[l]));
            if (op == FieldOp::sqrt_ok) REQUIRE(got_ok[l] == want_ok[l]);
        }
    }
}

const FieldOp kOps[] = {FieldOp::mul, FieldOp::sqr, FieldOp::add, FieldOp::sub,
                        FieldOp::neg, FieldOp::inv, FieldOp::sqrt_ok, FieldOp::chain};

}  // namespace

TEST_CASE("lanes field ops equal the 64-bit field on every pair of edge values") {
    const auto e = edge_values();
    std::vector<Fe> a, b;
    for (const Fe& x : e)
        for (const Fe& y : e) {
            a.push_back(x);
            b.push_back(y);
        }
    while (a.size() % 8) {
        a.push_back(e[0]);
        b.push_back(e[1]);
    }
    for (Width w : widths())
        for (FieldOp op : kOps) check_op(w, op, a, b);
}

TEST_CASE("lanes field ops equal the 64-bit field on random values") {
    std::mt19937_64 rng(0x1a9e5);
    std::vector<Fe> a, b;
    for (int i = 0; i < 4096; ++i) {
        a.push_back(random_fe(rng));
        b.push_back(random_fe(rng));
    }
    for (Width w : widths())
        for (FieldOp op : kOps) check_op(w, op, a, b);
}

TEST_CASE("the lane width is the widest the CPU has unless SIGVERIFY_LANES forces one") {
    Width w;
    CHECK(parse_width("ifma8", w));
    CHECK(w == Width::ifma8);
    CHECK(parse_width("ifma4", w));
    CHECK(w == Width::ifma4);
    CHECK(width_name(Width::ifma4) == "ifma4");
    CHECK(parse_width("scalar", w));
    CHECK(w == Width::scalar);
    CHECK_FALSE(parse_width("avx9", w));
    // The default prefers ifma8 (ifma4 needs all it needs, and VL).
    const Width widest = cpu_has_ifma8() ? Width::ifma8 : Width::scalar;
    unsetenv("SIGVERIFY_LANES");
    CHECK(chosen_width() == widest);
    setenv("SIGVERIFY_LANES", "scalar", 1);
    CHECK(chosen_width() == Width::scalar);
    setenv("SIGVERIFY_LANES", "ifma8", 1);
    CHECK(chosen_width() == (cpu_has_ifma8() ? Width::ifma8 : Width::scalar));
    setenv("SIGVERIFY_LANES", "ifma4", 1);
    CHECK(chosen_width() == (cpu_has_ifma4() ? Width::ifma4 : Width::scalar));
    setenv("SIGVERIFY_LANES", "bogus", 1);
    CHECK(chosen_width() == widest);
    unsetenv("SIGVERIFY_LANES");
}

namespace {

Ge random_point(std::mt19937_64& rng) {
    for (;;) {
        Ge g;
        if (ge_set_xo(g, random_fe(rng), (rng() & 1) != 0)) return g;
    }
}

// The same point in Jacobian form on a random nonzero Z.
Gej on_random_z(const Ge& g, std::mt19937_64& rng) {
    Fe z = random_fe(rng);
    if (fe_is_zero(z)) z = fe_one();
    Fe z2, z3;
    fe_sqr(z2, z);
    fe_mul(z3, z2, z);
    Gej j;
    fe_mul(j.x, g.x, z2);
    fe_mul(j.y, g.y, z3);
    j.z = z;
    j.infinity = false;
    return j;
}

void check_group(Width w, GroupOp op, const std::vector<Gej>& a, const std::vector<Ge>& b) {
    for (std::size_t i = 0; i < a.size(); i += 8) {
        Gej got[8], want[8];
        bool got_bad[8], want_bad[8];
        group_op8(w, op, &a[i], &b[i], got, got_bad);
        group_op8(Width::scalar, op, &a[i], &b[i], want, want_bad);
        for (int l = 0; l < 8; ++l) {
            INFO("group op " << static_cast<int>(op) << " width " << width_name(w) << " element " << i + l);
            REQUIRE(got_bad[l] == want_bad[l]);
            if (want_bad[l]) continue;
            REQUIRE(got[l].infinity == want[l].infinity);
            if (want[l].infinity) continue;
            Ge g, h;
            ge_set_gej(g, got[l]);
            ge_set_gej(h, want[l]);
            REQUIRE(fe_equal(g.x, h.x));
            REQUIRE(fe_equal(g.y, h.y));
        }
    }
}

}  // namespace

TEST_CASE("lanes point doubling and mixed addition equal the exact path, degenerate lanes flagged") {
    std::mt19937_64 rng(0x42);
    std::vector<Gej> a;
    std::vector<Ge> b;
    for (int i = 0; i < 512; ++i) {
        const Ge p = random_point(rng);
        Ge q = random_point(rng);
        switch (i % 8) {
            case 3: q = p; break;                  // equal: degenerate
            case 5: ge_neg(q, p); break;           // opposite: degenerate
            default: break;
        }
        Gej j = on_random_z(p, rng);
        if (i % 8 == 6) j = gej_infinity();        // infinity + q = q
        a.push_back(j);
        b.push_back(q);
    }
    for (Width w : widths()) {
        check_group(w, GroupOp::dbl, a, b);
        check_group(w, GroupOp::add_ge, a, b);
    }
    // the flags themselves: every equal / opposite lane flagged
    Gej r[8];
    bool bad[8];
    group_op8(Width::scalar, GroupOp::add_ge, &a[0], &b[0], r, bad);
    CHECK(bad[3]);
    CHECK(bad[5]);
    CHECK_FALSE(bad[6]);
    CHECK_FALSE(bad[0]);
}

#include "host_rows.hpp"
#include "kernels/kernel_math.hpp"

namespace {

// Verdicts of every 8 rows by the lanes at width w, rechecks resolved by the
// exact path (resolve_verdict32), against the exact path row by row.
// Returns how many rows came back as recheck.
std::size_t check_ecdsa_rows(Width w, const std::vector<u8>& rows, std::size_t stride, bool compact) {
    const std::size_t n = rows.size() / stride;
    std::size_t rechecks = 0;
    const auto enc = compact ? sigverify::wire::SigEncoding::compact : sigverify::wire::SigEncoding::opaque;
    for (std::size_t i = 0; i + 8 <= n; i += 8) {
        const u8* rec[8];
        for (int l = 0; l < 8; ++l) rec[l] = rows.data() + (i + l) * stride;
        u8 v[8];
        ecdsa_verify8(w, rec, compact, v);
        for (int l = 0; l < 8; ++l) {
            INFO("row " << i + l << " width " << width_name(w) << " compact " << compact);
            REQUIRE(v[l] <= 2);
            if (v[l] == 2) ++rechecks;
            const bool got = resolve_verdict32(v[l], rec[l], sigverify::wire::RecordKind::ecdsa, enc);
            REQUIRE(got == verify_record_exact(rec[l], sigverify::wire::RecordKind::ecdsa, enc));
        }
    }
    return rechecks;
}

}  // namespace

TEST_CASE("lanes ECDSA verdicts equal the exact path row by row, both encodings") {
    for (bool compact : {false, true}) {
        sigverify::kernel_test::HostGenOptions o;
        o.table = sigverify::wire::Table::ecdsa;
        o.count = 800;
        o.encoding = compact ? sigverify::wire::SigEncoding::compact : sigverify::wire::SigEncoding::opaque;
        o.invalid_rate = 0.3;
        o.high_s_rate = 0.3;
        o.seed = compact ? 7 : 8;
        const auto rows = sigverify::kernel_test::host_generate_rows(o);
        const std::size_t stride = rows.size() / o.count;
        for (Width w : widths()) CHECK(check_ecdsa_rows(w, rows, stride, compact) == 0);
    }
}

TEST_CASE("lanes ECDSA on hostile rows: random bytes, bad prefixes, r or s zero or >= n, x >= p") {
    std::mt19937_64 rng(99);
    const std::size_t stride = 129;
    std::vector<u8> rows(stride * 512);
    for (auto& b : rows) b = static_cast<u8>(rng());
    for (std::size_t i = 0; i < 512; ++i) {
        u8* r = rows.data() + i * stride;
        switch (i % 6) {
            case 0: r[kRecKey] = static_cast<u8>(2 + (rng() & 1)); break;          // random x, maybe on the curve
            case 1: r[kRecKey] = 0x04; break;                                      // bad prefix
            case 2: std::memset(r + kEcdsaSig, 0, 32); r[kRecKey] = 2; break;      // r = 0
            case 3: std::memset(r + kEcdsaSig + 32, 0xFF, 32); r[kRecKey] = 3; break;  // s >= n
            case 4: std::memset(r + kRecKey + 1, 0xFF, 32); r[kRecKey] = 2; break;  // x >= p
            default: break;
        }
    }
    for (Width w : widths())
        for (bool compact : {false, true}) check_ecdsa_rows(w, rows, stride, compact);
}

TEST_CASE("lanes ECDSA rows that meet a degenerate ladder addition are rechecked, never misjudged") {
    // Key G (02 || G.x). The ladder adds, from the first window on, the
    // four-bit digits of |k1| and |k2|, u2 = r / s = k1 + k2 lambda, and
    // after every kGWindow bits a digit of u1 = z / s's low half (table of
    // G): with |k2|'s top kGWindow bits zero the accumulator is then +-A G,
    // A the top kGWindow bits of |k1|; a z that makes u1's digit A makes the
    // next addition one of equal or opposite points. (r, s random: invalid.)
    std::mt19937_64 rng(21);
    const std::size_t stride = 129;
    std::vector<u8> rows;
    std::size_t wanted = 0;
    while (rows.size() < 64 * stride) {
        std::vector<u8> row(stride);
        for (auto& b : row) b = static_cast<u8>(rng());
        row[kRecKey] = 0x02;
        fe_get_b32(row.data() + kRecKey + 1, ge_generator().x);
        Sc r, s, u2, k1, k2;
        sc_set_bytes(r, row.data() + kEcdsaSig, ByteOrder::big);
        sc_set_bytes(s, row.data() + kEcdsaSig + 32, ByteOrder::big);
        if (sc_is_zero(r) || sc_is_zero(s) || sc_is_high(s)) continue;  // low-S: no normalisation
        sc_get_b32(row.data() + kEcdsaSig, r);
        sc_get_b32(row.data() + kEcdsaSig + 32, s);
        const Sc sinv = sc32_inv(s);
        sc_mul(u2, r, sinv);
        sc_split_lambda(k1, k2, u2);
        if (sc_is_high(k1)) sc_neg(k1, k1);
        if (sc_is_high(k2)) sc_neg(k2, k2);
        const u64 top_a = k1.v[1] >> (64 - kGWindow), top_b = k2.v[1] >> (64 - kGWindow);
        if (top_b != 0 || top_a == 0) continue;
        Sc u1, z;
        sc_set_bytes(u1, row.data(), ByteOrder::big);
        u1.v[1] = (u1.v[1] & (~0ull >> kGWindow)) | (top_a << (64 - kGWindow));
        u1.v[3] &= 0x7FFFFFFFFFFFFFFFull;
        sc_mul(z, u1, s);
        sc_get_b32(row.data() + kRecHash, z);
        rows.insert(rows.end(), row.begin(), row.end());
        ++wanted;
    }
    for (Width w : widths()) {
        const std::size_t rechecks = check_ecdsa_rows(w, rows, stride, true);
        if (w != Width::scalar) CHECK(rechecks >= wanted);
    }
}
