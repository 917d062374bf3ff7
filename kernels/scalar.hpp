// SPDX-License-Identifier: MIT
// Scalar arithmetic mod n (the group order of secp256k1).
//
// Representation: four 64-bit limbs, little-endian, always fully reduced
// (0 <= v < n). Products are reduced by folding with 2^256 - n (a 129-bit
// constant) until the value fits 256 bits, then one conditional subtraction.
// Also holds the one scalar parser and the GLV split k = k1 + k2 * lambda
// (mod n). Shared by the GPU ladder and the exact path; the inversion is the
// divsteps one of scalar32.hpp. What it does exactly as the field does (zero
// and equality tests, the conditional subtraction, addition, parse, output)
// is u256.hpp's, given 2^256 - n.
#pragma once

#include "kernels/u256.hpp"

namespace sigverify::kernels {

struct Sc {
    u64 v[4];
};

// n
constexpr u64 kN0 = 0xBFD25E8CD0364141ull;
constexpr u64 kN1 = 0xBAAEDCE6AF48A03Bull;
constexpr u64 kN2 = 0xFFFFFFFFFFFFFFFEull;
constexpr u64 kN3 = 0xFFFFFFFFFFFFFFFFull;
// 2^256 - n
constexpr u64 kNC0 = 0x402DA1732FC9BEBFull;
constexpr u64 kNC1 = 0x4551231950B75FC4ull;
constexpr u64 kNC2 = 1;
// n / 2 (floor)
constexpr u64 kNH0 = 0xDFE92F46681B20A0ull;
constexpr u64 kNH1 = 0x5D576E7357A4501Dull;
constexpr u64 kNH2 = 0xFFFFFFFFFFFFFFFFull;
constexpr u64 kNH3 = 0x7FFFFFFFFFFFFFFFull;

SV_HD Sc sc_zero() { return Sc{{0, 0, 0, 0}}; }
SV_HD Sc sc_one() { return Sc{{1, 0, 0, 0}}; }
SV_HD bool sc_is_zero(const Sc& a) { return u256_is_zero(a.v); }
SV_HD bool sc_equal(const Sc& a, const Sc& b) { return u256_equal(a.v, b.v); }

// 2^256 - n, as u256.hpp's arithmetic mod n takes it.
SV_HD U256 sc_complement() { return U256{{kNC0, kNC1, kNC2, 0}}; }

// Compares two 256-bit limb arrays: a > b.
SV_HD bool limbs_gt(const u64 a[4], const u64 b[4]) {
    for (int i = 3; i >= 0; --i) {
        if (a[i] != b[i]) return a[i] > b[i];
    }
    return false;
}

// r = v mod n for a 256-bit v, plus a carry bit c (value = v + c * 2^256),
// provided the value is < 2n.
SV_HD void sc_reduce_once(Sc& r, const u64 v[4], u64 carry) { u256_reduce_once(r.v, v, carry, sc_complement()); }

// The one scalar parser of the kernels (GPU ladder, host twin, exact path).
// Returns true when the value was >= n; r is then the value reduced mod n
// (as libsecp256k1's secp256k1_scalar_set_b32): the verifiers reject r, s >= n
// on the flag and reduce the hash silently.
SV_HD bool sc_set_bytes(Sc& r, const u8* b, ByteOrder order) {
    return u256_set_bytes_mod(r.v, b, order, sc_complement());
}

SV_HD void sc_get_b32(u8* b, const Sc& a) { write_u256_be(b, a.v); }

SV_HD void sc_add(Sc& r, const Sc& a, const Sc& b) { u256_add_mod(r.v, a.v, b.v, sc_complement()); }

SV_HD void sc_neg(Sc& r, const Sc& a) {
    // n - a, and 0 stays 0
    const u64 mask = 0 - u64(!sc_is_zero(a));
    u64 d[4];
    u64 bw = subb(kN0, a.v[0], 0, d[0]);
    bw = subb(kN1, a.v[1], bw, d[1]);
    bw = subb(kN2, a.v[2], bw, d[2]);
    subb(kN3, a.v[3], bw, d[3]);
    SV_UNROLL
    for (int i = 0; i < 4; ++i) r.v[i] = d[i] & mask;
}

SV_HD void sc_sub(Sc& r, const Sc& a, const Sc& b) {
    Sc nb;
    sc_neg(nb, b);
    sc_add(r, a, nb);
}

// p - n: r + n is a field element exactly when r < p - n (ECDSA's R.x check).
SV_HD Sc sc_p_minus_n() { return Sc{{0x402DA1722FC9BAEEull, 0x4551231950B75FC4ull, 1, 0}}; }

// a > n/2
SV_HD bool sc_is_high(const Sc& a) {
    const u64 h[4] = {kNH0, kNH1, kNH2, kNH3};
    return limbs_gt(a.v, h);
}

// out[0..4+BL) = a[0..4) + b[0..BL) * (2^256 - n); out has 4 + BL limbs, and
// the caller guarantees the value fits.
template <int BL>
SV_HD void sc_fold(u64* out, const u64* a, const u64* b) {
    const u64 nc[3] = {kNC0, kNC1, kNC2};
    Acc acc;
    SV_UNROLL
    for (int k = 0; k < 4 + BL; ++k) {
        if (k < 4) acc.add(a[k]);
        SV_UNROLL
        for (int i = 0; i < 3; ++i) {
            const int j = k - i;
            if (j >= 0 && j < BL) acc.mac(b[j], nc[i]);
        }
        out[k] = acc.take();
    }
}

// r = t mod n for a 512-bit t.
SV_HD void sc_reduce512(Sc& r, const u64 t[8]) {
    u64 m[8];  // < 2^386: seven limbs used
    sc_fold<4>(m, t, t + 4);
    u64 q[7];  // m[4..6] < 2^130, times NC < 2^259, plus m_lo: < 2^260
    sc_fold<3>(q, m, m + 4);
    u64 s[5];  // q[4] < 2^4: < 2^256 + 2^134
    sc_fold<1>(s, q, q + 4);
    // s[4] is 0 or 1; 2^256 = NC (mod n) and the remaining low part is small.
    u64 w[5];
    sc_fold<1>(w, s, s + 4);
    sc_reduce_once(r, w, w[4]);
}

SV_HD void sc_mul(Sc& r, const Sc& a, const Sc& b) {
    SV_COUNT_OP(sc_mul);
    u64 t[8];
    mul_wide(t, a.v, b.v);
    sc_reduce512(r, t);
}

// ---------------------------------------------------------------------------
// GLV split
// ---------------------------------------------------------------------------
// lambda: a cube root of unity mod n; lambda * (x, y) = (beta * x, y).
SV_HD Sc sc_lambda() {
    return Sc{{0xDF02967C1B23BD72ull, 0x122E22EA20816678ull, 0xA5261C028812645Aull, 0x5363AD4CC05C30E0ull}};
}
// -b1 and -b2 (mod n) of the reduced lattice basis (a1 + b1 lambda = 0 and
// a2 + b2 lambda = 0 mod n, short vectors), and g1 = round(2^384 b2 / n),
// g2 = round(2^384 (-b1) / n).
SV_HD Sc sc_glv_minus_b1() { return Sc{{0x6F547FA90ABFE4C3ull, 0xE4437ED6010E8828ull, 0, 0}}; }
SV_HD Sc sc_glv_minus_b2() {
    return Sc{{0xD765CDA83DB1562Cull, 0x8A280AC50774346Dull, 0xFFFFFFFFFFFFFFFEull, 0xFFFFFFFFFFFFFFFFull}};
}
SV_HD Sc glv_g1() {
    return Sc{{0xE893209A45DBB031ull, 0x3DAA8A1471E8CA7Full, 0xE86C90E49284EB15ull, 0x3086D221A7D46BCDull}};
}
SV_HD Sc glv_g2() {
    return Sc{{0x1571B4AE8AC47F71ull, 0x221208AC9DF506C6ull, 0x6F547FA90ABFE4C4ull, 0xE4437ED6010E8828ull}};
}

// round(k * g / 2^384) for the GLV split (fits in 128 bits).
SV_HD Sc sc_mul_shift384(const Sc& k, const Sc& g) {
    u64 t[8];
    mul_wide(t, k.v, g.v);
    Sc r;
    const u64 round = t[5] >> 63;
    u64 c = addc(t[6], round, 0, r.v[0]);
    addc(t[7], 0, c, r.v[1]);
    r.v[2] = 0;
    r.v[3] = 0;
    return r;
}

// k = k1 + k2 * lambda (mod n), with k1 and k2 of magnitude < 2^128 when
// read as signed (v or v - n). mul(a, b) is a product mod n (canonical) and
// mul_shift(k, g) sc_mul_shift384, as the caller computes them (the GPU
// kernel: its own product, scalar32.hpp).
template <class Mul, class MulShift>
SV_HD void sc_split_lambda_with(Sc& k1, Sc& k2, const Sc& k, const Mul& mul, const MulShift& mul_shift) {
    const Sc c1 = mul_shift(k, glv_g1());
    const Sc c2 = mul_shift(k, glv_g2());
    const Sc t1 = mul(c1, sc_glv_minus_b1());
    const Sc t2 = mul(c2, sc_glv_minus_b2());
    sc_add(k2, t1, t2);
    const Sc t3 = mul(k2, sc_lambda());
    sc_sub(k1, k, t3);
}
SV_HD void sc_split_lambda(Sc& k1, Sc& k2, const Sc& k) {
    sc_split_lambda_with(
        k1, k2, k,
        [](const Sc& a, const Sc& b) {
            Sc r;
            sc_mul(r, a, b);
            return r;
        },
        [](const Sc& a, const Sc& g) { return sc_mul_shift384(a, g); });
}

}  // namespace sigverify::kernels
