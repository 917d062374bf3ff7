// SPDX-License-Identifier: MIT
// Modular inversion by Bernstein–Yang divsteps ("safegcd", Bernstein and
// Yang, "Fast constant-time gcd computation and modular inversion", 2019),
// for the two primes of secp256k1, as portable __host__ __device__ C++ on
// 32-bit words: the same statements run on the GPU and in the host tests,
// so the host proof is the proof of what the GPU runs.
//
// Why: a Fermat inversion a^(m-2) is ~270 modular products in one serial
// chain (the scalar one cost ~103k thread-instructions per ECDSA row); 600
// divsteps cost a few bit operations each, plus 20 matrix updates of four
// 270-bit numbers.
//
// The algorithm. With f = m (odd), g = a, and D = 2·delta = 1 (delta = 1/2,
// the start for which 590 divsteps provably reach g = 0 for any 256-bit
// m and a < m; we run 600), one divstep is
//     if D > 0 and g odd:  (D, f, g) <- (2 - D, g, (g - f) / 2)
//     else:                (D, f, g) <- (D + 2, f, (g + (g mod 2)·f) / 2)
// gcd(f, g) is kept, so f ends at ±gcd(m, a) = ±1 (m prime, a != 0).
// Thirty divsteps depend only on the low 30 bits of f and g, so they run on
// one word each, accumulating a 2x2 integer matrix T with
//     2^30 · (f', g') = T · (f, g),   |T00| + |T01| <= 2^30, same for row 1,
// which is then applied to the full numbers (an exact division by 2^30).
// Alongside, d and e with d·a ≡ f and e·a ≡ g (mod m) get the same matrix;
// their division by 2^30 is made exact by adding a multiple of m. At the
// end f = ±1, so 1/a = ±d mod m. Every lane runs the same instructions
// whatever the input (no data-dependent branch): fixed trip counts, masks.
//
// a = 0 is not invertible: f stays m, d stays 0, and the result is 0, as
// the Fermat chains it replaces gave (0^(m-2) = 0).
//
// Numbers are nine signed 30-bit limbs, value = Σ v[i]·2^(30 i): limbs 0..7
// in [0, 2^30) after every carry pass, limb 8 carries the sign. 270 bits
// hold f, g (|f|, |g| <= m < 2^256 throughout) and d, e before their
// normalisation (in (-m, 2m) after an update).
#pragma once

#include <cstdint>

#include "kernels/sv_hd.hpp"

namespace sigverify::kernels {

using i32 = std::int32_t;
using i64 = std::int64_t;

constexpr int kSafegcdLimbs = 9;
constexpr i32 kLimb30Mask = (1 << 30) - 1;
constexpr int kSafegcdBatches = 20;  // 20 x 30 = 600 >= 590 divsteps

struct Limbs30 {
    i32 v[kSafegcdLimbs];
};

// An odd modulus and its inverse modulo 2^30 (m · m_inv30 ≡ 1).
struct Modulus30 {
    Limbs30 m;
    u32 m_inv30;
};

// The group order n and the field prime p of secp256k1 (checked against
// BIGNUM by test_kernel_safegcd).
SV_HD Modulus30 modulus30_n() {
    return Modulus30{{{0x10364141, 0x3F497A33, 0x348A03BB, 0x2BB739AB, 0x3FFFFEBA, 0x3FFFFFFF, 0x3FFFFFFF,
                       0x3FFFFFFF, 0x0000FFFF}},
                     0x2A774EC1u};
}
SV_HD Modulus30 modulus30_p() {
    return Modulus30{{{0x3FFFFC2F, 0x3FFFFFFB, 0x3FFFFFFF, 0x3FFFFFFF, 0x3FFFFFFF, 0x3FFFFFFF, 0x3FFFFFFF,
                       0x3FFFFFFF, 0x0000FFFF}},
                     0x2DDACACFu};
}

// 2^30 · (f', g') = T · (f, g) after 30 divsteps.
struct Trans30 {
    i32 u, v, q, r;
};

// One divstep on the low words (divsteps30's loop body).
struct Divstep30 {
    u32 d, f, g, u, v, q, r;
    SV_HD void step() {
        const u32 d_pos = u32(i32(0u - d) >> 31);  // all ones when D > 0 (|D| <= 1201)
        const u32 g_odd = 0u - (g & 1u);
        const u32 swap = d_pos & g_odd;
        d = ((d ^ swap) - swap) + 2u;  // 2 - D or D + 2
        // g + (g odd ? (swap ? -f : f) : 0), halved; f becomes g on a swap
        const u32 g_add = ((f ^ swap) - swap) & g_odd;
        const u32 q_add = ((u ^ swap) - swap) & g_odd;
        const u32 r_add = ((v ^ swap) - swap) & g_odd;
        f ^= (f ^ g) & swap;
        u ^= (u ^ q) & swap;
        v ^= (v ^ r) & swap;
        g = (g + g_add) >> 1;
        q += q_add;
        r += r_add;
        u <<= 1;  // row f doubles: the 2^(i+1) scaling absorbs g's halving
        v <<= 1;
    }
};

// Thirty divsteps on the low words of f and g; returns the new D. Words
// wrap (u32 arithmetic): step i only reads bit 0 of g, which depends on
// bits 0..i of the inputs, so garbage entering from the top never matters.
// kRolled keeps the thirty steps a loop on the device (~600 instructions of
// code fewer, ~2 more a step): for an inversion a block runs once, where
// code size matters and time does not.
template <bool kRolled = false>
SV_HD i32 divsteps30(i32 D, u32 f, u32 g, Trans30& t) {
    Divstep30 s{u32(D), f, g, 1, 0, 0, 1};  // u, v, q, r: the rows of T, scaled as we go
    if constexpr (kRolled) {
        SV_NO_UNROLL
        for (int i = 0; i < 30; ++i) s.step();
    } else {
        SV_UNROLL
        for (int i = 0; i < 30; ++i) s.step();
    }
    t = Trans30{i32(s.u), i32(s.v), i32(s.q), i32(s.r)};
    return i32(s.d);
}

// (f, g) <- T · (f, g) / 2^30 (exact by construction of T).
SV_HD void safegcd_update_fg(Limbs30& f, Limbs30& g, const Trans30& t) {
    i64 cf = i64(t.u) * f.v[0] + i64(t.v) * g.v[0];
    i64 cg = i64(t.q) * f.v[0] + i64(t.r) * g.v[0];
    cf >>= 30;  // the low 30 bits are zero
    cg >>= 30;
    SV_UNROLL
    for (int i = 1; i < kSafegcdLimbs; ++i) {
        cf += i64(t.u) * f.v[i] + i64(t.v) * g.v[i];
        cg += i64(t.q) * f.v[i] + i64(t.r) * g.v[i];
        f.v[i - 1] = i32(cf & kLimb30Mask);
        g.v[i - 1] = i32(cg & kLimb30Mask);
        cf >>= 30;  // arithmetic shift: the carry keeps its sign
        cg >>= 30;
    }
    f.v[kSafegcdLimbs - 1] = i32(cf);
    g.v[kSafegcdLimbs - 1] = i32(cg);
}

// (d, e) <- (T · (d, e) + (md, me) · m) / 2^30, md and me in [0, 2^30)
// chosen so that the division is exact. For d, e in [0, m): the results
// lie in (-m, 2m), since |T row| <= 2^30.
SV_HD void safegcd_update_de(Limbs30& d, Limbs30& e, const Trans30& t, const Modulus30& m) {
    const u32 low_d = u32(t.u) * u32(d.v[0]) + u32(t.v) * u32(e.v[0]);
    const u32 low_e = u32(t.q) * u32(d.v[0]) + u32(t.r) * u32(e.v[0]);
    const i64 md = i64((0u - low_d * m.m_inv30) & u32(kLimb30Mask));
    const i64 me = i64((0u - low_e * m.m_inv30) & u32(kLimb30Mask));
    i64 cd = i64(t.u) * d.v[0] + i64(t.v) * e.v[0] + md * m.m.v[0];
    i64 ce = i64(t.q) * d.v[0] + i64(t.r) * e.v[0] + me * m.m.v[0];
    cd >>= 30;
    ce >>= 30;
    SV_UNROLL
    for (int i = 1; i < kSafegcdLimbs; ++i) {
        cd += i64(t.u) * d.v[i] + i64(t.v) * e.v[i] + md * m.m.v[i];
        ce += i64(t.q) * d.v[i] + i64(t.r) * e.v[i] + me * m.m.v[i];
        d.v[i - 1] = i32(cd & kLimb30Mask);
        e.v[i - 1] = i32(ce & kLimb30Mask);
        cd >>= 30;
        ce >>= 30;
    }
    d.v[kSafegcdLimbs - 1] = i32(cd);
    e.v[kSafegcdLimbs - 1] = i32(ce);
}

// x <- x + (m & mask), mask all ones or zero; any limb values in, limbs
// 0..7 in [0, 2^30) out (the carry pass renormalises them).
SV_HD void limbs30_add_masked(Limbs30& x, const Limbs30& m, i32 mask) {
    i64 c = 0;
    SV_UNROLL
    for (int i = 0; i < kSafegcdLimbs - 1; ++i) {
        c += i64(x.v[i]) + (m.v[i] & mask);
        x.v[i] = i32(c & kLimb30Mask);
        c >>= 30;  // arithmetic shift: the carry keeps its sign
    }
    x.v[kSafegcdLimbs - 1] = i32(c + x.v[kSafegcdLimbs - 1] + (m.v[kSafegcdLimbs - 1] & mask));
}

// x in (-m, 2m) -> x mod m in [0, m): add m when negative, then subtract m
// unless that goes negative.
SV_HD void limbs30_normalize(Limbs30& x, const Modulus30& m) {
    limbs30_add_masked(x, m.m, x.v[kSafegcdLimbs - 1] >> 31);  // now in [0, 2m)
    Limbs30 neg_m, t = x;
    SV_UNROLL
    for (int i = 0; i < kSafegcdLimbs; ++i) neg_m.v[i] = -m.m.v[i];
    limbs30_add_masked(t, neg_m, -1);
    const i32 keep_x = t.v[kSafegcdLimbs - 1] >> 31;  // all ones when x < m
    SV_UNROLL
    for (int i = 0; i < kSafegcdLimbs; ++i) x.v[i] = t.v[i] ^ ((t.v[i] ^ x.v[i]) & keep_x);
}

// Eight little-endian 32-bit words (a value < 2^256) <-> nine 30-bit limbs.
SV_HD Limbs30 limbs30_from_words(const u32 w[8]) {
    Limbs30 r;
    SV_UNROLL
    for (int i = 0; i < kSafegcdLimbs; ++i) {
        const int bit = 30 * i, word = bit / 32, shift = bit % 32;
        u64 x = u64(w[word]) >> shift;
        if (word + 1 < 8) x |= u64(w[word + 1]) << (32 - shift);
        r.v[i] = i32(u32(x) & u32(kLimb30Mask));
    }
    return r;
}

SV_HD void limbs30_to_words(u32 w[8], const Limbs30& x) {
    SV_UNROLL
    for (int i = 0; i < 8; ++i) {
        const int bit = 32 * i, limb = bit / 30, shift = bit % 30;
        u64 y = u64(u32(x.v[limb])) >> shift;
        if (limb + 1 < kSafegcdLimbs) y |= u64(u32(x.v[limb + 1])) << (30 - shift);
        if (limb + 2 < kSafegcdLimbs) y |= u64(u32(x.v[limb + 2])) << (60 - shift);
        w[i] = u32(y);
    }
}

// out = 1/a mod m for a in [0, m) given as eight 32-bit words; 0 for a = 0.
// kRolled: divsteps30's.
template <bool kRolled = false>
SV_HD void safegcd_inverse(u32 out[8], const u32 a[8], const Modulus30& m) {
    Limbs30 f = m.m, g = limbs30_from_words(a);
    Limbs30 d{}, e{};
    e.v[0] = 1;
    i32 D = 1;
    SV_NO_UNROLL
    for (int batch = 0; batch < kSafegcdBatches; ++batch) {
        Trans30 t;
        D = divsteps30<kRolled>(D, u32(f.v[0]), u32(g.v[0]), t);
        safegcd_update_fg(f, g, t);
        safegcd_update_de(d, e, t, m);
        limbs30_normalize(d, m);
        limbs30_normalize(e, m);
    }
    // f = ±1 (or m when a = 0, with d = 0): 1/a = d·f.
    const i32 f_neg = f.v[kSafegcdLimbs - 1] >> 31;
    Limbs30 neg_d;
    SV_UNROLL
    for (int i = 0; i < kSafegcdLimbs; ++i) neg_d.v[i] = -d.v[i];
    // m - d for d in (0, m): in (0, m), limbs renormalised by adding m
    limbs30_add_masked(neg_d, m.m, -1);
    SV_UNROLL
    for (int i = 0; i < kSafegcdLimbs; ++i) d.v[i] = d.v[i] ^ ((d.v[i] ^ neg_d.v[i]) & f_neg);
    limbs30_to_words(out, d);
}

}  // namespace sigverify::kernels
