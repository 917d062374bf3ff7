// SPDX-License-Identifier: MIT
// Field arithmetic mod p = 2^256 - 0x1000003D1 on eight lanes at once: one
// field element per 64-bit lane of an AVX-512 register, five 52-bit limbs
// (five registers), multiplied with the IFMA instructions vpmadd52luq /
// vpmadd52huq. Only lanes_ifma8.cpp includes this header; that file alone is
// compiled with -mavx512f -mavx512ifma, and is entered only after the CPU was
// seen to have them (lanes.cpp), so one binary runs everywhere.
//
// Invariant ("weak" form), kept by every operation's output: limbs 0..3 are
// < 2^52, limb 4 is < 2^49, so the value is < 2^257 and congruent to the
// element mod p, not necessarily below p. IFMA multiplies only the low 52
// bits of its inputs, so every input of fe8_mul must be weak: every operation
// here ends with fe8_carry, which restores it (see its bounds).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace sigverify::kernels::lanes {

struct Fe8 {
    __m512i v[5];
};

inline __m512i fe8_mask52() { return _mm512_set1_epi64((1ull << 52) - 1); }

// Restores the weak form of limbs each < 2^62: the part of limb 4 above
// bit 48 (c < 2^14) is folded onto limb 0 as c * 0x1000003D1 (< 2^48, since
// 2^256 = 0x1000003D1 mod p), then one carry chain 0 -> 4. Afterwards limbs
// 0..3 are < 2^52 and limb 4 < 2^48 + 2^11 < 2^49.
inline void fe8_carry(Fe8& r) {
    const __m512i m = fe8_mask52();
    __m512i c = _mm512_srli_epi64(r.v[4], 48);
    r.v[4] = _mm512_and_si512(r.v[4], _mm512_set1_epi64((1ull << 48) - 1));
    // c * 0x1000003D1 < 2^47: the low-52 multiply-add is the exact product (cheaper than vpmullq)
    r.v[0] = _mm512_madd52lo_epu64(r.v[0], c, _mm512_set1_epi64(0x1000003D1ll));
    for (int i = 0; i < 4; ++i) {
        c = _mm512_srli_epi64(r.v[i], 52);
        r.v[i] = _mm512_and_si512(r.v[i], m);
        r.v[i + 1] = _mm512_add_epi64(r.v[i + 1], c);
    }
}

inline void fe8_set_u64(Fe8& r, std::uint64_t x) {
    r.v[0] = _mm512_set1_epi64(static_cast<long long>(x & ((1ull << 52) - 1)));
    r.v[1] = _mm512_set1_epi64(static_cast<long long>(x >> 52));
    for (int i = 2; i < 5; ++i) r.v[i] = _mm512_setzero_si512();
}

inline void fe8_add(Fe8& r, const Fe8& a, const Fe8& b) {
    for (int i = 0; i < 5; ++i) r.v[i] = _mm512_add_epi64(a.v[i], b.v[i]);
    fe8_carry(r);
}

// r = a - b as a + 16p - b: each limb of 16p (2^56 - 0x1000003D10,
// 16(2^52 - 1) three times, 2^52 - 16) is at least the matching limb bound
// of a weak b, so no limb goes negative; the sums stay < 2^58.
// Limb i of 16p.
inline __m512i fe8_p16(int i) {
    const unsigned long long l = i == 0 ? (1ull << 56) - 0x1000003D10ull : i == 4 ? (1ull << 52) - 16 : ((1ull << 52) - 1) * 16;
    return _mm512_set1_epi64(static_cast<long long>(l));
}

inline void fe8_sub(Fe8& r, const Fe8& a, const Fe8& b) {
    for (int i = 0; i < 5; ++i) r.v[i] = _mm512_sub_epi64(_mm512_add_epi64(a.v[i], fe8_p16(i)), b.v[i]);
    fe8_carry(r);
}

// r = a - 2^k b (k <= 3, a and b weak) with one carry: a + 2^k 16p - 2^k b,
// every limb of 2^k b at most that of 2^k 16p, the sums < 2^60.
inline void fe8_sub_shl(Fe8& r, const Fe8& a, const Fe8& b, int k) {
    for (int i = 0; i < 5; ++i)
        r.v[i] = _mm512_sub_epi64(_mm512_add_epi64(a.v[i], _mm512_slli_epi64(fe8_p16(i), k)), _mm512_slli_epi64(b.v[i], k));
    fe8_carry(r);
}

// r = a - b - 2c (all weak) with one carry: a + 48p - b - 2c, the limbs
// < 2^58.
inline void fe8_sub_sub2(Fe8& r, const Fe8& a, const Fe8& b, const Fe8& c) {
    for (int i = 0; i < 5; ++i) {
        const __m512i p48 = _mm512_add_epi64(fe8_p16(i), _mm512_slli_epi64(fe8_p16(i), 1));
        const __m512i t = _mm512_sub_epi64(_mm512_add_epi64(a.v[i], p48), b.v[i]);
        r.v[i] = _mm512_sub_epi64(t, _mm512_slli_epi64(c.v[i], 1));
    }
    fe8_carry(r);
}

// r = 2 (a - b - c) (all weak) with one carry: (a + 32p - b - c) 2, the
// limbs < 2^59.
inline void fe8_twice_sub2(Fe8& r, const Fe8& a, const Fe8& b, const Fe8& c) {
    for (int i = 0; i < 5; ++i) {
        const __m512i t = _mm512_add_epi64(a.v[i], _mm512_slli_epi64(fe8_p16(i), 1));
        r.v[i] = _mm512_slli_epi64(_mm512_sub_epi64(_mm512_sub_epi64(t, b.v[i]), c.v[i]), 1);
    }
    fe8_carry(r);
}

inline void fe8_neg(Fe8& r, const Fe8& a) {
    Fe8 z;
    fe8_set_u64(z, 0);
    fe8_sub(r, z, a);
}

// r = a * k for a small k (k <= 2^10: limbs stay < 2^62 before the carry).
inline void fe8_mul_small(Fe8& r, const Fe8& a, unsigned k) {
    const __m512i kk = _mm512_set1_epi64(k);
    for (int i = 0; i < 5; ++i) r.v[i] = _mm512_mullo_epi64(a.v[i], kk);
    fe8_carry(r);
}

// Folds the ten product columns c[0..9] (each < 2^56; the product < 2^514)
// to a weak element. H = sum c[5+i] 2^(52 i) < 2^254 is carried to limbs
// h0..h3 < 2^52, h4 < 2^46 (no carry leaves it), then multiplied by
// R = 2^260 mod p = 0x1000003D10 (37 bits) onto the low columns; the part of
// that past 2^260 (d5 = hi(h4 R) < 2^31) is folded once more.
inline void fe8_reduce(Fe8& r, __m512i c[10]) {
    const __m512i m = fe8_mask52();
    const __m512i big_r = _mm512_set1_epi64(0x1000003D10ll);
    for (int i = 5; i < 9; ++i) {
        c[i + 1] = _mm512_add_epi64(c[i + 1], _mm512_srli_epi64(c[i], 52));
        c[i] = _mm512_and_si512(c[i], m);
    }
    __m512i d[6];
    for (int i = 0; i < 5; ++i) d[i] = _mm512_madd52lo_epu64(c[i], c[5 + i], big_r);
    for (int i = 0; i < 4; ++i) d[i + 1] = _mm512_madd52hi_epu64(d[i + 1], c[5 + i], big_r);
    d[5] = _mm512_madd52hi_epu64(_mm512_setzero_si512(), c[9], big_r);
    d[0] = _mm512_madd52lo_epu64(d[0], d[5], big_r);
    d[1] = _mm512_madd52hi_epu64(d[1], d[5], big_r);
    for (int i = 0; i < 5; ++i) r.v[i] = d[i];
    fe8_carry(r);
}

// r = a * b (both weak; r may alias either).
inline void fe8_mul(Fe8& r, const Fe8& a, const Fe8& b) {
    __m512i c[10];
    for (int k = 0; k < 10; ++k) c[k] = _mm512_setzero_si512();
    for (int i = 0; i < 5; ++i) {
        for (int j = 0; j < 5; ++j) {
            c[i + j] = _mm512_madd52lo_epu64(c[i + j], a.v[i], b.v[j]);
            c[i + j + 1] = _mm512_madd52hi_epu64(c[i + j + 1], a.v[i], b.v[j]);
        }
    }
    fe8_reduce(r, c);
}

// r = a^2: the 10 cross products once, doubled (limb doubled before the
// multiply would break the 52-bit input rule, so the columns are doubled).
inline void fe8_sqr(Fe8& r, const Fe8& a) {
    __m512i c[10];
    for (int k = 0; k < 10; ++k) c[k] = _mm512_setzero_si512();
    for (int i = 0; i < 5; ++i) {
        for (int j = i + 1; j < 5; ++j) {
            c[i + j] = _mm512_madd52lo_epu64(c[i + j], a.v[i], a.v[j]);
            c[i + j + 1] = _mm512_madd52hi_epu64(c[i + j + 1], a.v[i], a.v[j]);
        }
    }
    for (int k = 0; k < 10; ++k) c[k] = _mm512_add_epi64(c[k], c[k]);
    for (int i = 0; i < 5; ++i) {
        c[2 * i] = _mm512_madd52lo_epu64(c[2 * i], a.v[i], a.v[i]);
        c[2 * i + 1] = _mm512_madd52hi_epu64(c[2 * i + 1], a.v[i], a.v[i]);
    }
    fe8_reduce(r, c);
}

inline void fe8_sqr_n(Fe8& r, const Fe8& a, int n) {
    r = a;
    for (int i = 0; i < n; ++i) fe8_sqr(r, r);
}

// The overload names kernels/field.hpp's addition chains call (found by
// argument-dependent lookup in this namespace).
inline void fe_mul(Fe8& r, const Fe8& a, const Fe8& b) { fe8_mul(r, a, b); }
inline void fe_sqr(Fe8& r, const Fe8& a) { fe8_sqr(r, a); }
inline void fe_sqr_n(Fe8& r, const Fe8& a, int n) { fe8_sqr_n(r, a, n); }

// Full reduction to 0 <= v < p of a weak element: a second carry makes the
// value < 2^256 + 2^45 (limb 4 < 2^48 + 1 after folding a carry of at most
// 1); then v >= p exactly when v + 0x1000003D1 reaches 2^256 (bit 48 of the
// sum's limb 4), and v - p is that sum less 2^256.
inline void fe8_normalize(Fe8& r) {
    fe8_carry(r);
    fe8_carry(r);
    const __m512i m = fe8_mask52();
    Fe8 t = r;
    t.v[0] = _mm512_add_epi64(t.v[0], _mm512_set1_epi64(0x1000003D1ll));
    for (int i = 0; i < 4; ++i) {
        t.v[i + 1] = _mm512_add_epi64(t.v[i + 1], _mm512_srli_epi64(t.v[i], 52));
        t.v[i] = _mm512_and_si512(t.v[i], m);
    }
    const __mmask8 ge = _mm512_test_epi64_mask(t.v[4], _mm512_set1_epi64(1ll << 48));
    t.v[4] = _mm512_and_si512(t.v[4], _mm512_set1_epi64((1ll << 48) - 1));
    for (int i = 0; i < 5; ++i) r.v[i] = _mm512_mask_blend_epi64(ge, r.v[i], t.v[i]);
}

// Lanes whose (normalized) value is zero.
inline __mmask8 fe8_is_zero(const Fe8& a) {
    Fe8 t = a;
    fe8_normalize(t);
    __m512i o = t.v[0];
    for (int i = 1; i < 5; ++i) o = _mm512_or_si512(o, t.v[i]);
    return _mm512_cmpeq_epi64_mask(o, _mm512_setzero_si512());
}

inline __mmask8 fe8_equal(const Fe8& a, const Fe8& b) {
    Fe8 d;
    fe8_sub(d, a, b);
    return fe8_is_zero(d);
}

// r = lanes of b where mask is set, else a.
inline void fe8_select(Fe8& r, __mmask8 mask, const Fe8& a, const Fe8& b) {
    for (int i = 0; i < 5; ++i) r.v[i] = _mm512_mask_blend_epi64(mask, a.v[i], b.v[i]);
}

}  // namespace sigverify::kernels::lanes
