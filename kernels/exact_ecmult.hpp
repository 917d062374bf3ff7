// SPDX-License-Identifier: MIT
// The exact path's r = na * P + ng * G (host only: it decides the rows the GPU
// ladder hands back, exact_verify.hpp): complete formulas, Strauss/Shamir with
// one shared chain of doublings.
//
//  * na is split with the GLV endomorphism into na = k1 + k2 * lambda with
//    |k1|, |k2| < 2^128; lambda * (x, y) = (beta * x, y), so the k2 stream
//    uses a second table: the P table's x multiplied by beta, once.
//  * ng is split in binary halves ng = g1 + g2 * 2^128 and uses two
//    precomputed affine tables: odd multiples of G and of 2^128 * G
//    (window kWindowG, built once: a static table on the host, global memory
//    on the device).
//  * the P table is "effective affine" (all entries share one Z, see
//    build_p_table), so every addition in the main loop is a mixed one.
//  * Every stream is recoded in wNAF (window kWindowP for P, kWindowG for G),
//    so about 129 doublings + ~43 P additions + ~16 G additions per call.
#pragma once

#include <cstdint>

#include "kernels/exact_group.hpp"
#include "kernels/scalar.hpp"

namespace sigverify::kernels {

constexpr int kWindowG = 15;
constexpr int kWindowP = 5;
constexpr int kTableGSize = 1 << (kWindowG - 2);  // odd multiples 1, 3, ..., 2^(w-1) - 1
constexpr int kTablePSize = 1 << (kWindowP - 2);
constexpr int kWnafLen = 129;  // a value < 2^128 has wNAF digits at positions 0..128

static_assert(kWindowG >= 2 && kWindowG <= 16, "wNAF digits must fit int16");

// The two G tables, each kTableGSize entries: g[i] = (2i+1) G,
// g128[i] = (2i+1) 2^128 G.
struct GTableView {
    const GeStorage* g;
    const GeStorage* g128;
};

// Bits [bit, bit + count) of the 128-bit value (lo, hi); bits >= 128 are 0.
SV_HD unsigned get_bits128(u64 lo, u64 hi, int bit, int count) {
    u64 v;
    if (bit >= 128) return 0;
    if (bit >= 64) {
        v = hi >> (bit - 64);
    } else if (bit == 0) {
        v = lo;
    } else {
        v = (lo >> bit) | (hi << (64 - bit));
    }
    return unsigned(v & ((u64(1) << count) - 1));
}

// wNAF of the 128-bit value (lo, hi) with window w: digits[0..kWnafLen) are
// zero or odd with |d| < 2^(w-1), and value = sum digits[i] 2^i. Returns the
// index of the highest nonzero digit + 1 (0 for value 0).
// Digit is int8_t for w <= 8 (P's table) and int16_t above (the G tables):
// these arrays live in per-thread local memory on the GPU, so narrow is fast.
template <class Digit>
SV_HD int wnaf128(Digit* digits, u64 lo, u64 hi, int w) {
    for (int i = 0; i < kWnafLen; ++i) digits[i] = 0;
    int bit = 0, last = 0;
    unsigned carry = 0;
    while (bit < kWnafLen) {
        if (get_bits128(lo, hi, bit, 1) == carry) {
            ++bit;
            continue;
        }
        int now = w;
        if (now > kWnafLen - bit) now = kWnafLen - bit;
        int word = int(get_bits128(lo, hi, bit, now)) + int(carry);
        carry = unsigned(word >> (w - 1)) & 1u;
        word -= int(carry) << w;
        digits[bit] = Digit(word);
        last = bit + 1;
        bit += now;
    }
    return last;
}

// Table entry for digit d (odd, nonzero) of a G table, negated for d < 0.
SV_HD Ge table_g_entry(const GeStorage* tab, int d) {
    const int idx = (d > 0 ? d : -d) >> 1;
#if defined(__CUDA_ARCH__)
    // Device: four 16-byte read-only loads (the table is 256-byte aligned by
    // cudaMalloc and entries are 64 bytes). Same bytes as the plain copy.
    GeStorage st;
    const ulonglong2* src = reinterpret_cast<const ulonglong2*>(tab + idx);
    const ulonglong2 a = __ldg(src), b = __ldg(src + 1), c = __ldg(src + 2), e4 = __ldg(src + 3);
    st.x[0] = a.x;
    st.x[1] = a.y;
    st.x[2] = b.x;
    st.x[3] = b.y;
    st.y[0] = c.x;
    st.y[1] = c.y;
    st.y[2] = e4.x;
    st.y[3] = e4.y;
    Ge e = ge_from_storage(st);
#else
    Ge e = ge_from_storage(tab[idx]);
#endif
    if (d < 0) fe_neg(e.y, e.y);
    return e;
}

// Fallback without GLV or tables (bitwise double-and-add over full scalars).
// Only reached if a GLV half would not fit 128 bits, which the split's bounds
// exclude; kept so that no input can take an unproven path. Also a test
// oracle for ecmult.
SV_HD_NOINLINE void ecmult_simple(Gej& r, const Ge& p, const Sc& na, const Sc& ng) {
    const Ge g = ge_generator();
    const Gej pj = gej_from_ge(p);
    r = gej_infinity();
    for (int i = 255; i >= 0; --i) {
        gej_double(r, r);
        if ((na.v[i / 64] >> (i % 64)) & 1) gej_add(r, r, pj);
        if ((ng.v[i / 64] >> (i % 64)) & 1) gej_add_ge(r, r, g);
    }
}

// Odd multiples P, 3P, ..., (2 kTablePSize - 1) P sharing one Jacobian Z
// ("effective affine"): entry i is (xs[i], ys[i], zg). Built on the curve
// scaled by Z(2P), where 2P is affine, so every step is a mixed addition;
// a backward pass of the Z ratios brings all entries to the last Z.
// Returns false only if a step would hit a special case of the addition,
// which needs P of order <= 2 kTablePSize (impossible on secp256k1: n is
// prime); the caller then takes the plain path.
SV_HD bool build_p_table(Fe* xs, Fe* ys, Fe& zg, const Ge& p) {
    Gej d;
    gej_double(d, gej_from_ge(p));
    Fe zd2, zd3;
    fe_sqr(zd2, d.z);
    fe_mul(zd3, zd2, d.z);
    Ge dprime;  // 2P on the scaled curve: affine
    dprime.x = d.x;
    dprime.y = d.y;
    dprime.infinity = false;
    Fe ratio[kTablePSize];
    Gej q;
    fe_mul(q.x, p.x, zd2);
    fe_mul(q.y, p.y, zd3);
    q.z = fe_one();
    q.infinity = false;
    xs[0] = q.x;
    ys[0] = q.y;
    for (int i = 1; i < kTablePSize; ++i) {
        Gej n;
        gej_add_ge(n, q, dprime, &ratio[i]);  // ratio = Z(n) / Z(q)
        if (fe_is_zero(ratio[i])) return false;
        q = n;
        xs[i] = q.x;
        ys[i] = q.y;
    }
    // entries i < last: scale by t = ratio[i+1] ... ratio[last]
    Fe t = fe_one();
    for (int i = kTablePSize - 2; i >= 0; --i) {
        fe_mul(t, t, ratio[i + 1]);
        Fe t2, t3;
        fe_sqr(t2, t);
        fe_mul(t3, t2, t);
        fe_mul(xs[i], xs[i], t2);
        fe_mul(ys[i], ys[i], t3);
    }
    fe_mul(zg, q.z, d.z);  // back from the scaled curve
    return true;
}

// r += the entry of wNAF digit dg (odd, or 0: nothing) of one P stream: the
// table (xs, ys) at |dg| / 2, y negated when the digit's sign differs from
// the stream's (neg: the stream's scalar was negated to fit 128 bits).
SV_HD void add_p_digit(Gej& r, int dg, const Fe* xs, const Fe* ys, bool neg) {
    if (dg == 0) return;
    const int idx = (dg > 0 ? dg : -dg) >> 1;
    Ge e;
    e.x = xs[idx];
    e.y = ys[idx];
    e.infinity = false;
    if ((dg < 0) != neg) fe_neg(e.y, e.y);
    gej_add_ge(r, r, e);
}

// r += the entry of wNAF digit dg (0: nothing) of one G table, brought onto
// the accumulator's scaled curve: (x zg^2, y zg^3).
SV_HD void add_g_digit(Gej& r, int dg, const GeStorage* table, const Fe& zg2, const Fe& zg3) {
    if (dg == 0) return;
    Ge e = table_g_entry(table, dg);
    fe_mul(e.x, e.x, zg2);
    fe_mul(e.y, e.y, zg3);
    gej_add_ge(r, r, e);
}

// r = na * p + ng * G. p must be a finite point on the curve.
//
// The accumulator runs on the isomorphic curve where the P table is affine:
// a point stored as (X, Y, Z) stands for the Jacobian (X, Y, Z zg) on
// secp256k1 (a = 0, so doubling and addition do not see the scaling). P
// entries are then added with mixed additions as is; G entries (affine on
// the real curve) enter as (x zg^2, y zg^3); the result's Z is multiplied by
// zg at the end.
SV_HD void ecmult(Gej& r, const Ge& p, const Sc& na, const Sc& ng, const GTableView& tab) {
    Sc k1, k2;
    sc_split_lambda(k1, k2, na);
    const bool neg1 = sc_is_high(k1);
    const bool neg2 = sc_is_high(k2);
    if (neg1) sc_neg(k1, k1);
    if (neg2) sc_neg(k2, k2);
    Fe px[kTablePSize], py[kTablePSize], zg;
    if ((k1.v[2] | k1.v[3] | k2.v[2] | k2.v[3]) != 0 || !build_p_table(px, py, zg, p)) {
        ecmult_simple(r, p, na, ng);
        return;
    }
    Fe zg2, zg3;
    fe_sqr(zg2, zg);
    fe_mul(zg3, zg2, zg);

    static_assert(kWindowP <= 8, "P's wNAF digits are int8_t");
    int8_t w1[kWnafLen], w2[kWnafLen];
    int16_t wg1[kWnafLen], wg2[kWnafLen];
    int len = wnaf128(w1, k1.v[0], k1.v[1], kWindowP);
    int l = wnaf128(w2, k2.v[0], k2.v[1], kWindowP);
    if (l > len) len = l;
    l = wnaf128(wg1, ng.v[0], ng.v[1], kWindowG);
    if (l > len) len = l;
    l = wnaf128(wg2, ng.v[2], ng.v[3], kWindowG);
    if (l > len) len = l;

    // The k2 stream's table: lambda (x, y) = (beta x, y).
    const Fe beta = fe_beta();
    Fe pbx[kTablePSize];
    for (int i = 0; i < kTablePSize; ++i) fe_mul(pbx[i], px[i], beta);
    r = gej_infinity();
    for (int i = len - 1; i >= 0; --i) {
        gej_double(r, r);
        add_p_digit(r, w1[i], px, py, neg1);
        add_p_digit(r, w2[i], pbx, py, neg2);
        add_g_digit(r, wg1[i], tab.g, zg2, zg3);
        add_g_digit(r, wg2[i], tab.g128, zg2, zg3);
    }
    if (!r.infinity) fe_mul(r.z, r.z, zg);
}

}  // namespace sigverify::kernels
