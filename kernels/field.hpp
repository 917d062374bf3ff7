// SPDX-License-Identifier: MIT
// Field arithmetic mod p = 2^256 - 2^32 - 977 (secp256k1's base field) on
// four 64-bit limbs: the exact path's field, and the parser, constants, table
// storage and the square-root addition chain (a template) that the GPU
// kernel's Fe32 (fe32.hpp) shares with it.
//
// Representation: four 64-bit limbs, little-endian, always fully reduced
// (0 <= v < p) after every operation, so equality is limb equality and parity
// is bit 0. Reduction uses 2^256 = 0x1000003D1 (mod p): the high half of a
// product is multiplied by that 33-bit constant and folded onto the low half
// twice, then one conditional subtraction of p. What it does exactly as the
// scalars do (zero and equality tests, the conditional subtraction, addition,
// parse, output) is u256.hpp's, given 2^256 - p.
#pragma once

#include "kernels/u256.hpp"

namespace sigverify::kernels {

struct Fe {
    u64 v[4];
};

// 2^256 - p
constexpr u64 kFeC = 0x1000003D1ull;

// 2^256 - p, as u256.hpp's arithmetic mod p takes it.
SV_HD U256 fe_complement() { return U256{{kFeC, 0, 0, 0}}; }

// beta: a cube root of unity mod p matching sc_lambda().
SV_HD Fe fe_beta() {
    return Fe{{0xC1396C28719501EEull, 0x9CF0497512F58995ull, 0x6E64479EAC3434E9ull, 0x7AE96A2B657C0710ull}};
}

// An affine point as stored in the precomputed tables (64 bytes, no flag: table
// entries are never infinity). 16-byte aligned: the device loads it in 16-byte
// pieces.
struct alignas(16) GeStorage {
    u64 x[4];
    u64 y[4];
};

SV_HD Fe fe_zero() { return Fe{{0, 0, 0, 0}}; }
SV_HD Fe fe_one() { return Fe{{1, 0, 0, 0}}; }
SV_HD Fe fe_from_u64(u64 x) { return Fe{{x, 0, 0, 0}}; }

SV_HD bool fe_is_zero(const Fe& a) { return u256_is_zero(a.v); }
SV_HD bool fe_equal(const Fe& a, const Fe& b) { return u256_equal(a.v, b.v); }
SV_HD bool fe_is_odd(const Fe& a) { return (a.v[0] & 1) != 0; }

// r = v mod p for any 256-bit v (v < 2^256 < 2p, one subtraction).
SV_HD void fe_reduce_once(Fe& r, const u64 v[4]) { u256_reduce_once(r.v, v, 0, fe_complement()); }

// Reads 32 big-endian bytes. Returns false (and r = value mod p) when the
// value is >= p.
SV_HD bool fe_set_b32(Fe& r, const u8* b) { return !u256_set_bytes_mod(r.v, b, ByteOrder::big, fe_complement()); }

SV_HD void fe_get_b32(u8* b, const Fe& a) { write_u256_be(b, a.v); }

// r = (w + top 2^256) mod p for top < 2^34: top * C < 2^68 is added once; a
// carry out means the value wrapped, and the rest is then tiny, so adding C
// once more cannot carry; one conditional subtraction ends it.
SV_HD void fe_fold_top(Fe& r, u64 w[4], u64 top) {
    u64 lo, hi;
    mul64(top, kFeC, lo, hi);
    u64 c = addc(w[0], lo, 0, w[0]);
    c = addc(w[1], hi, c, w[1]);
    c = addc(w[2], 0, c, w[2]);
    c = addc(w[3], 0, c, w[3]);
    c = addc(w[0], kFeC & (0 - c), 0, w[0]);
    c = addc(w[1], 0, c, w[1]);
    c = addc(w[2], 0, c, w[2]);
    addc(w[3], 0, c, w[3]);
    fe_reduce_once(r, w);
}

// Reduces a 512-bit value t (little-endian limbs) mod p.
SV_HD void fe_reduce512(Fe& r, const u64 t[8]) {
    // First fold: t_lo + t_hi * C  (< 2^256 + 2^289, five limbs)
    u64 w[4];
    u64 carry = 0, hi_prev = 0;
    SV_UNROLL
    for (int i = 0; i < 4; ++i) {
        u64 lo, hi;
        mul64(t[4 + i], kFeC, lo, hi);
        u64 s;
        u64 c = addc(t[i], lo, 0, s);
        u64 c2 = addc(s, hi_prev, 0, s);
        u64 c3 = addc(s, carry, 0, s);
        w[i] = s;
        carry = c + c2 + c3;
        hi_prev = hi;
    }
    fe_fold_top(r, w, hi_prev + carry);  // top < 2^34
}

SV_HD void fe_mul(Fe& r, const Fe& a, const Fe& b) {
    SV_COUNT_OP(fe_mul);
    u64 t[8];
    mul_wide(t, a.v, b.v);
    fe_reduce512(r, t);
}

SV_HD void fe_sqr(Fe& r, const Fe& a) {
    SV_COUNT_OP(fe_sqr);
    u64 t[8];
    sqr_wide(t, a.v);
    fe_reduce512(r, t);
}

SV_HD void fe_add(Fe& r, const Fe& a, const Fe& b) { u256_add_mod(r.v, a.v, b.v, fe_complement()); }

SV_HD void fe_sub(Fe& r, const Fe& a, const Fe& b) {
    u64 d[4];
    u64 bw = subb(a.v[0], b.v[0], 0, d[0]);
    bw = subb(a.v[1], b.v[1], bw, d[1]);
    bw = subb(a.v[2], b.v[2], bw, d[2]);
    bw = subb(a.v[3], b.v[3], bw, d[3]);
    // on borrow add p, i.e. subtract C modulo 2^256
    const u64 cm = kFeC & (0 - bw);
    u64 b2 = subb(d[0], cm, 0, r.v[0]);
    b2 = subb(d[1], 0, b2, r.v[1]);
    b2 = subb(d[2], 0, b2, r.v[2]);
    subb(d[3], 0, b2, r.v[3]);
}

SV_HD void fe_neg(Fe& r, const Fe& a) { fe_sub(r, fe_zero(), a); }

// r = a * k for a small k (k < 2^32).
SV_HD void fe_mul_small(Fe& r, const Fe& a, u32 k) {
    u64 w[4];
    u64 carry = 0;
    SV_UNROLL
    for (int i = 0; i < 4; ++i) {
        u64 lo, hi;
        mul64(a.v[i], k, lo, hi);
        hi += addc(lo, carry, 0, w[i]);
        carry = hi;
    }
    fe_fold_top(r, w, carry);  // carry < 2^32
}

SV_HD void fe_sqr_n(Fe& r, const Fe& a, int n) {
    r = a;
    for (int i = 0; i < n; ++i) fe_sqr(r, r);
}

// The addition chains of the inversion and the square root, written once for
// both field representations F (Fe here, Fe32 in the GPU kernel): they call
// fe_sqr / fe_mul / fe_sqr_n, which overload resolution finds for F.
//
// Shared start: x246 = a^(2^246 - 2^22 - 1), the exponent bits
// [223 ones] 0 [22 ones] that p - 2 and (p + 1)/4 both begin with, and
// x2 = a^3, which both tails use again.
template <class F>
SV_HD void fe_chain_246(F& x246, F& x2, const F& a) {
    F x3, x6, x9, x11, x22, x44, x88, x176, x220, x223, t;
    fe_sqr(t, a);
    fe_mul(x2, t, a);
    fe_sqr(t, x2);
    fe_mul(x3, t, a);
    fe_sqr_n(t, x3, 3);
    fe_mul(x6, t, x3);
    fe_sqr_n(t, x6, 3);
    fe_mul(x9, t, x3);
    fe_sqr_n(t, x9, 2);
    fe_mul(x11, t, x2);
    fe_sqr_n(t, x11, 11);
    fe_mul(x22, t, x11);
    fe_sqr_n(t, x22, 22);
    fe_mul(x44, t, x22);
    fe_sqr_n(t, x44, 44);
    fe_mul(x88, t, x44);
    fe_sqr_n(t, x88, 88);
    fe_mul(x176, t, x88);
    fe_sqr_n(t, x176, 44);
    fe_mul(x220, t, x44);
    fe_sqr_n(t, x220, 3);
    fe_mul(x223, t, x3);
    fe_sqr_n(t, x223, 23);
    fe_mul(x246, t, x22);
}

// r = a^(p-2) from the chain's start. p - 2 = [x246's 246 bits] 0000 1 0 11 0 1
template <class F>
SV_HD void fe_chain_inv_tail(F& r, const F& x246, const F& x2, const F& a) {
    F t;
    fe_sqr_n(t, x246, 5);
    fe_mul(t, t, a);
    fe_sqr_n(t, t, 3);
    fe_mul(t, t, x2);
    fe_sqr_n(t, t, 2);
    fe_mul(r, t, a);
}

// r = a^((p+1)/4) from the chain's start. (p+1)/4 = [x246's 246 bits] 0000 11 00
template <class F>
SV_HD void fe_chain_sqrt_tail(F& r, const F& x246, const F& x2) {
    F t;
    fe_sqr_n(t, x246, 6);
    fe_mul(t, t, x2);
    fe_sqr_n(r, t, 2);
}

// The exact path's chain start (a real call when a device compiles it).
SV_HD_NOINLINE void fe_pow_chain_246(Fe& x246, Fe& x2, const Fe& a) { fe_chain_246(x246, x2, a); }

// r = a^(p-2) = 1/a (0 maps to 0).
SV_HD void fe_inv(Fe& r, const Fe& a) {
    Fe x246, x2;
    fe_pow_chain_246(x246, x2, a);
    fe_chain_inv_tail(r, x246, x2, a);
}

// r = a^((p+1)/4); returns true when r^2 == a (a is a square).
SV_HD bool fe_sqrt(Fe& r, const Fe& a) {
    Fe x246, x2, t;
    fe_pow_chain_246(x246, x2, a);
    fe_chain_sqrt_tail(r, x246, x2);
    fe_sqr(t, r);
    return fe_equal(t, a);
}

// Montgomery's trick: replaces a[0..n) by their inverses with one field
// inversion and 3(n-1) multiplications. prefix must hold n elements. Every
// a[i] must be nonzero.
SV_HD void fe_batch_inv(Fe* a, Fe* prefix, int n) {
    if (n <= 0) return;
    prefix[0] = a[0];
    for (int i = 1; i < n; ++i) fe_mul(prefix[i], prefix[i - 1], a[i]);
    Fe inv;
    fe_inv(inv, prefix[n - 1]);
    for (int i = n - 1; i > 0; --i) {
        Fe ai;
        fe_mul(ai, inv, prefix[i - 1]);  // 1 / a[i]
        fe_mul(inv, inv, a[i]);          // 1 / (a[0] ... a[i-1])
        a[i] = ai;
    }
    a[0] = inv;
}

}  // namespace sigverify::kernels
