// SPDX-License-Identifier: MIT
// Field arithmetic mod p = 2^256 - 0x1000003D1 on V::N lanes at once: one
// field element per 64-bit lane of a vector register, five 52-bit limbs
// (five registers), multiplied with the IFMA instructions vpmadd52luq /
// vpmadd52huq. V is a width's register layer (vec_ifma8.hpp: 512-bit
// registers, eight lanes; vec_ifma4.hpp: 256-bit, four): the same code for
// both. Only lanes_ifma8.cpp and lanes_ifma4.cpp include this header; each
// is compiled with its width's flags and entered only after the CPU was seen
// to have them (lanes.cpp), so one binary runs everywhere.
//
// Invariant ("weak" form), kept by every operation's output: limbs 0..3 are
// < 2^52, limb 4 is < 2^49, so the value is < 2^257 and congruent to the
// element mod p, not necessarily below p. IFMA multiplies only the low 52
// bits of its inputs, so every input of fen_mul must be weak: every operation
// here ends with fen_carry, which restores it (see its bounds).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace sigverify::kernels::lanes {

template <class V>
struct FeN {
    typename V::R v[5];
};

// Restores the weak form of limbs each < 2^62: the part of limb 4 above
// bit 48 (c < 2^14) is folded onto limb 0 as c * 0x1000003D1 (< 2^48, since
// 2^256 = 0x1000003D1 mod p), then one carry chain 0 -> 4. Afterwards limbs
// 0..3 are < 2^52 and limb 4 < 2^48 + 2^11 < 2^49.
template <class V>
inline void fen_carry(FeN<V>& r) {
    const auto m = V::set1((1ull << 52) - 1);
    auto c = V::srli(r.v[4], 48);
    r.v[4] = V::and_(r.v[4], V::set1((1ull << 48) - 1));
    // c * 0x1000003D1 < 2^47: the low-52 multiply-add is the exact product (cheaper than vpmullq)
    r.v[0] = V::madd52lo(r.v[0], c, V::set1(0x1000003D1ull));
    for (int i = 0; i < 4; ++i) {
        c = V::srli(r.v[i], 52);
        r.v[i] = V::and_(r.v[i], m);
        r.v[i + 1] = V::add(r.v[i + 1], c);
    }
}

template <class V>
inline void fen_set_u64(FeN<V>& r, std::uint64_t x) {
    r.v[0] = V::set1(x & ((1ull << 52) - 1));
    r.v[1] = V::set1(x >> 52);
    for (int i = 2; i < 5; ++i) r.v[i] = V::zero();
}

template <class V>
inline void fen_add(FeN<V>& r, const FeN<V>& a, const FeN<V>& b) {
    for (int i = 0; i < 5; ++i) r.v[i] = V::add(a.v[i], b.v[i]);
    fen_carry(r);
}

// r = a - b as a + 16p - b: each limb of 16p (2^56 - 0x1000003D10,
// 16(2^52 - 1) three times, 2^52 - 16) is at least the matching limb bound
// of a weak b, so no limb goes negative; the sums stay < 2^58.
// Limb i of 16p.
template <class V>
inline typename V::R fen_p16(int i) {
    const unsigned long long l = i == 0 ? (1ull << 56) - 0x1000003D10ull : i == 4 ? (1ull << 52) - 16 : ((1ull << 52) - 1) * 16;
    return V::set1(l);
}

template <class V>
inline void fen_sub(FeN<V>& r, const FeN<V>& a, const FeN<V>& b) {
    for (int i = 0; i < 5; ++i) r.v[i] = V::sub(V::add(a.v[i], fen_p16<V>(i)), b.v[i]);
    fen_carry(r);
}

// r = a - 2^k b (k <= 3, a and b weak) with one carry: a + 2^k 16p - 2^k b,
// every limb of 2^k b at most that of 2^k 16p, the sums < 2^60.
template <class V>
inline void fen_sub_shl(FeN<V>& r, const FeN<V>& a, const FeN<V>& b, int k) {
    for (int i = 0; i < 5; ++i)
        r.v[i] = V::sub(V::add(a.v[i], V::slli(fen_p16<V>(i), k)), V::slli(b.v[i], k));
    fen_carry(r);
}

// r = a - b - 2c (all weak) with one carry: a + 48p - b - 2c, the limbs
// < 2^58.
template <class V>
inline void fen_sub_sub2(FeN<V>& r, const FeN<V>& a, const FeN<V>& b, const FeN<V>& c) {
    for (int i = 0; i < 5; ++i) {
        const auto p48 = V::add(fen_p16<V>(i), V::slli(fen_p16<V>(i), 1));
        const auto t = V::sub(V::add(a.v[i], p48), b.v[i]);
        r.v[i] = V::sub(t, V::slli(c.v[i], 1));
    }
    fen_carry(r);
}

// r = 2 (a - b - c) (all weak) with one carry: (a + 32p - b - c) 2, the
// limbs < 2^59.
template <class V>
inline void fen_twice_sub2(FeN<V>& r, const FeN<V>& a, const FeN<V>& b, const FeN<V>& c) {
    for (int i = 0; i < 5; ++i) {
        const auto t = V::add(a.v[i], V::slli(fen_p16<V>(i), 1));
        r.v[i] = V::slli(V::sub(V::sub(t, b.v[i]), c.v[i]), 1);
    }
    fen_carry(r);
}

template <class V>
inline void fen_neg(FeN<V>& r, const FeN<V>& a) {
    FeN<V> z;
    fen_set_u64(z, 0);
    fen_sub(r, z, a);
}

// r = a * k for a small k (k <= 2^10: limbs stay < 2^62 before the carry).
template <class V>
inline void fen_mul_small(FeN<V>& r, const FeN<V>& a, unsigned k) {
    const auto kk = V::set1(k);
    for (int i = 0; i < 5; ++i) r.v[i] = V::mullo(a.v[i], kk);
    fen_carry(r);
}

// r = 3a with adds (a 64-bit lane multiply costs more than two adds).
template <class V>
inline void fen_triple(FeN<V>& r, const FeN<V>& a) {
    for (int i = 0; i < 5; ++i) r.v[i] = V::add(V::add(a.v[i], a.v[i]), a.v[i]);
    fen_carry(r);
}

// Folds the ten product columns c[0..9] (each < 2^56; the product < 2^514)
// to a weak element. H = sum c[5+i] 2^(52 i) < 2^254 is carried to limbs
// h0..h3 < 2^52, h4 < 2^46 (no carry leaves it), then multiplied by
// R = 2^260 mod p = 0x1000003D10 (37 bits) onto the low columns; the part of
// that past 2^260 (d5 = hi(h4 R) < 2^31) is folded once more.
template <class V>
inline void fen_reduce(FeN<V>& r, typename V::R c[10]) {
    const auto m = V::set1((1ull << 52) - 1);
    const auto big_r = V::set1(0x1000003D10ull);
    for (int i = 5; i < 9; ++i) {
        c[i + 1] = V::add(c[i + 1], V::srli(c[i], 52));
        c[i] = V::and_(c[i], m);
    }
    typename V::R d[6];
    for (int i = 0; i < 5; ++i) d[i] = V::madd52lo(c[i], c[5 + i], big_r);
    for (int i = 0; i < 4; ++i) d[i + 1] = V::madd52hi(d[i + 1], c[5 + i], big_r);
    d[5] = V::madd52hi(V::zero(), c[9], big_r);
    d[0] = V::madd52lo(d[0], d[5], big_r);
    d[1] = V::madd52hi(d[1], d[5], big_r);
    for (int i = 0; i < 5; ++i) r.v[i] = d[i];
    fen_carry(r);
}

// r = a * b (both weak; r may alias either). The low and high halves of
// the products sum in separate columns, added at the end: a column's
// multiply-adds form one dependent chain, and the split shortens the longest
// from nine to five, so more of them can be in flight at once.
template <class V>
inline void fen_mul(FeN<V>& r, const FeN<V>& a, const FeN<V>& b) {
    typename V::R lo[10], hi[10], c[10];
    for (int k = 0; k < 10; ++k) lo[k] = hi[k] = V::zero();
    for (int i = 0; i < 5; ++i) {
        for (int j = 0; j < 5; ++j) {
            lo[i + j] = V::madd52lo(lo[i + j], a.v[i], b.v[j]);
            hi[i + j + 1] = V::madd52hi(hi[i + j + 1], a.v[i], b.v[j]);
        }
    }
    c[0] = lo[0];
    for (int k = 1; k < 9; ++k) c[k] = V::add(lo[k], hi[k]);
    c[9] = hi[9];
    fen_reduce(r, c);
}

// r = a^2: the 10 cross products once, doubled (limb doubled before the
// multiply would break the 52-bit input rule, so the columns are doubled).
template <class V>
inline void fen_sqr(FeN<V>& r, const FeN<V>& a) {
    typename V::R c[10];
    for (int k = 0; k < 10; ++k) c[k] = V::zero();
    for (int i = 0; i < 5; ++i) {
        for (int j = i + 1; j < 5; ++j) {
            c[i + j] = V::madd52lo(c[i + j], a.v[i], a.v[j]);
            c[i + j + 1] = V::madd52hi(c[i + j + 1], a.v[i], a.v[j]);
        }
    }
    for (int k = 0; k < 10; ++k) c[k] = V::add(c[k], c[k]);
    for (int i = 0; i < 5; ++i) {
        c[2 * i] = V::madd52lo(c[2 * i], a.v[i], a.v[i]);
        c[2 * i + 1] = V::madd52hi(c[2 * i + 1], a.v[i], a.v[i]);
    }
    fen_reduce(r, c);
}

template <class V>
inline void fen_sqr_n(FeN<V>& r, const FeN<V>& a, int n) {
    r = a;
    for (int i = 0; i < n; ++i) fen_sqr(r, r);
}

// The overload names kernels/field.hpp's addition chains call (found by
// argument-dependent lookup in this namespace).
template <class V>
inline void fe_mul(FeN<V>& r, const FeN<V>& a, const FeN<V>& b) { fen_mul(r, a, b); }
template <class V>
inline void fe_sqr(FeN<V>& r, const FeN<V>& a) { fen_sqr(r, a); }
template <class V>
inline void fe_sqr_n(FeN<V>& r, const FeN<V>& a, int n) { fen_sqr_n(r, a, n); }

// Full reduction to 0 <= v < p of a weak element: a second carry makes the
// value < 2^256 + 2^45 (limb 4 < 2^48 + 1 after folding a carry of at most
// 1); then v >= p exactly when v + 0x1000003D1 reaches 2^256 (bit 48 of the
// sum's limb 4), and v - p is that sum less 2^256.
template <class V>
inline void fen_normalize(FeN<V>& r) {
    fen_carry(r);
    fen_carry(r);
    const auto m = V::set1((1ull << 52) - 1);
    FeN<V> t = r;
    t.v[0] = V::add(t.v[0], V::set1(0x1000003D1ull));
    for (int i = 0; i < 4; ++i) {
        t.v[i + 1] = V::add(t.v[i + 1], V::srli(t.v[i], 52));
        t.v[i] = V::and_(t.v[i], m);
    }
    const __mmask8 ge = V::test(t.v[4], V::set1(1ull << 48));
    t.v[4] = V::and_(t.v[4], V::set1((1ull << 48) - 1));
    for (int i = 0; i < 5; ++i) r.v[i] = V::blend(ge, r.v[i], t.v[i]);
}

// Lanes whose (normalized) value is zero.
template <class V>
inline __mmask8 fen_is_zero(const FeN<V>& a) {
    FeN<V> t = a;
    fen_normalize(t);
    auto o = t.v[0];
    for (int i = 1; i < 5; ++i) o = V::or_(o, t.v[i]);
    return V::is_zero(o);
}

template <class V>
inline __mmask8 fen_equal(const FeN<V>& a, const FeN<V>& b) {
    FeN<V> d;
    fen_sub(d, a, b);
    return fen_is_zero(d);
}

// r = lanes of b where mask is set, else a.
template <class V>
inline void fen_select(FeN<V>& r, __mmask8 mask, const FeN<V>& a, const FeN<V>& b) {
    for (int i = 0; i < 5; ++i) r.v[i] = V::blend(mask, a.v[i], b.v[i]);
}

}  // namespace sigverify::kernels::lanes
