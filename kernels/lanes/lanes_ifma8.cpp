// SPDX-License-Identifier: MIT
// The 8-lane (AVX-512 IFMA) side of kernels/lanes/lanes.hpp. This file alone
// is compiled with -mavx512f -mavx512dq -mavx512ifma (kernels/CMakeLists.txt);
// lanes.cpp calls in only after cpu_has_ifma8().
#include "kernels/lanes/fe52x8.hpp"
#include "kernels/lanes/group8.hpp"
#include "kernels/lanes/lanes_ifma8.hpp"
#include "kernels/record_layout.hpp"
#include "kernels/sha256.hpp"

namespace sigverify::kernels::lanes {
namespace {

constexpr u64 kM52 = (1ull << 52) - 1;

// Eight fully reduced Fe (four 64-bit limbs) into five 52-bit limbs a lane.
void load8(Fe8& r, const Fe* a) {
    alignas(64) u64 t[5][8];
    for (int l = 0; l < 8; ++l) {
        const u64* w = a[l].v;
        t[0][l] = w[0] & kM52;
        t[1][l] = ((w[0] >> 52) | (w[1] << 12)) & kM52;
        t[2][l] = ((w[1] >> 40) | (w[2] << 24)) & kM52;
        t[3][l] = ((w[2] >> 28) | (w[3] << 36)) & kM52;
        t[4][l] = w[3] >> 16;
    }
    for (int i = 0; i < 5; ++i) r.v[i] = _mm512_load_si512(t[i]);
}

// Back to Fe, fully reduced.
void store8(Fe* r, const Fe8& a) {
    Fe8 n = a;
    fe8_normalize(n);
    alignas(64) u64 t[5][8];
    for (int i = 0; i < 5; ++i) _mm512_store_si512(t[i], n.v[i]);
    for (int l = 0; l < 8; ++l) {
        u64* w = r[l].v;
        w[0] = t[0][l] | (t[1][l] << 52);
        w[1] = (t[1][l] >> 12) | (t[2][l] << 40);
        w[2] = (t[2][l] >> 24) | (t[3][l] << 28);
        w[3] = (t[3][l] >> 36) | (t[4][l] << 16);
    }
}

void fe8_inv(Fe8& r, const Fe8& a) {
    Fe8 x246, x2;
    fe_chain_246(x246, x2, a);
    fe_chain_inv_tail(r, x246, x2, a);
}

// Returns the lanes where r^2 == a.
__mmask8 fe8_sqrt(Fe8& r, const Fe8& a) {
    Fe8 x246, x2, t;
    fe_chain_246(x246, x2, a);
    fe_chain_sqrt_tail(r, x246, x2);
    fe8_sqr(t, r);
    return fe8_equal(t, a);
}

// The multiples 0..15 of each lane's P, [entry][limb][lane], "effective
// affine": every entry d P is stored as (X, Y) of a Jacobian (X, Y, zg)
// with one zg per lane, so the ladder runs on the curve scaled by zg (a = 0:
// doubling and addition do not see the scale), where they are affine and
// every addition is a mixed one; G's entries enter scaled, (x zg^2, y zg^3),
// and the result's Z is multiplied by zg. Built as j[d] = j[d-1] + P from
// 2P, then a backward pass of the Z ratios brings every entry to Z(15P):
// no inversion. Returns the degenerate lanes (none for a point of order n;
// checked anyway).
struct PTable8 {
    alignas(64) u64 e[16][10][8];
};

void put_entry(PTable8& t, int d, const Fe8& x, const Fe8& y) {
    for (int i = 0; i < 5; ++i) {
        _mm512_store_si512(t.e[d][i], x.v[i]);
        _mm512_store_si512(t.e[d][5 + i], y.v[i]);
    }
}

__mmask8 build_p_table8(PTable8& t, Fe8& zg, const Ge8& p) {
    Gej8 j[16];
    Fe8 ratio[16];  // Z(j[d]) / Z(j[d-1])
    j[1].x = p.x;
    j[1].y = p.y;
    fe8_set_u64(j[1].z, 1);
    j[1].inf = 0;
    gej8_double(j[2], j[1]);
    ratio[2] = j[2].z;
    __mmask8 bad = 0;
    for (int d = 3; d < 16; ++d) bad |= gej8_add_ge(j[d], j[d - 1], p, 0xFF, &ratio[d]);
    for (int i = 0; i < 10; ++i) _mm512_store_si512(t.e[0][i], _mm512_setzero_si512());
    put_entry(t, 15, j[15].x, j[15].y);
    Fe8 s = ratio[15];  // Z(15P) / Z(dP)
    for (int d = 14; d >= 1; --d) {
        if (d < 14) fe8_mul(s, s, ratio[d + 1]);
        Fe8 s2, s3, x, y;
        fe8_sqr(s2, s);
        fe8_mul(s3, s2, s);
        fe8_mul(x, j[d].x, s2);
        fe8_mul(y, j[d].y, s3);
        put_entry(t, d, x, y);
    }
    zg = j[15].z;
    return bad;
}

// Entry d[lane] of a table, gathered into the lanes.
void gather_g(Ge8& r, const GTable8& t, __m512i d) {  // t: lanes.hpp
    const __m512i base = _mm512_mullo_epi64(d, _mm512_set1_epi64(10));
    for (int i = 0; i < 5; ++i) {
        r.x.v[i] = _mm512_i64gather_epi64(_mm512_add_epi64(base, _mm512_set1_epi64(i)), &t.e[0][0], 8);
        r.y.v[i] = _mm512_i64gather_epi64(_mm512_add_epi64(base, _mm512_set1_epi64(5 + i)), &t.e[0][0], 8);
    }
}

void gather_p(Ge8& r, const PTable8& t, __m512i d) {
    const __m512i lane = _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i base = _mm512_add_epi64(_mm512_mullo_epi64(d, _mm512_set1_epi64(80)), lane);
    for (int i = 0; i < 5; ++i) {
        r.x.v[i] = _mm512_i64gather_epi64(_mm512_add_epi64(base, _mm512_set1_epi64(8 * i)), &t.e[0][0][0], 8);
        r.y.v[i] = _mm512_i64gather_epi64(_mm512_add_epi64(base, _mm512_set1_epi64(8 * (5 + i))), &t.e[0][0][0], 8);
    }
}

__m512i load_digits(const u8* d) {
    return _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(d)));
}

struct Ops8 {
    void mul(Fe8& r, const Fe8& a, const Fe8& b) const { fe8_mul(r, a, b); }
    void sqr(Fe8& r, const Fe8& a) const { fe8_sqr(r, a); }
    void add(Fe8& r, const Fe8& a, const Fe8& b) const { fe8_add(r, a, b); }
    void sub(Fe8& r, const Fe8& a, const Fe8& b) const { fe8_sub(r, a, b); }
    void neg(Fe8& r, const Fe8& a) const { fe8_neg(r, a); }
    void mul3(Fe8& r, const Fe8& a) const { fe8_mul_small(r, a, 3); }
};

__mmask8 lane_mask(const bool b[8]) {
    unsigned m = 0;
    for (int l = 0; l < 8; ++l)
        if (b[l]) m |= 1u << l;
    return static_cast<__mmask8>(m);
}

// Every lane holding the same (fully reduced) element.
Fe8 fe8_broadcast(const Fe& a) {
    const Fe same[8] = {a, a, a, a, a, a, a, a};
    Fe8 r;
    load8(r, same);
    return r;
}

// The keys lifted: y with the wanted parity, then negated where k1 is
// (the k1 stream adds multiples of -P there). Returns the lanes where
// x^3 + 7 is a square (the key is on the curve).
__mmask8 lift8(Ge8& p, const Ecmult8In& in) {
    load8(p.x, in.px);
    Fe8 t, seven;
    fe8_sqr(t, p.x);
    fe8_mul(t, t, p.x);
    fe8_set_u64(seven, 7);
    fe8_add(t, t, seven);
    const __mmask8 square = fe8_sqrt(p.y, t);
    fe8_normalize(p.y);
    const __mmask8 is_odd = _mm512_test_epi64_mask(p.y.v[0], _mm512_set1_epi64(1));
    fe8_neg(t, p.y);
    fe8_select(p.y, static_cast<__mmask8>(is_odd ^ lane_mask(in.odd) ^ lane_mask(in.neg1)), p.y, t);
    return square;
}

// The k2 stream's table from the k1 stream's: lambda (x, y) = (beta x, y),
// y negated in the lanes of `flip` (k2's sign differs from k1's).
void build_lambda_table8(PTable8& t2, const PTable8& t1, __mmask8 flip) {
    const Fe8 beta = fe8_broadcast(fe_beta());
    for (int d = 1; d < 16; ++d) {
        Fe8 x, y, ny;
        for (int i = 0; i < 5; ++i) {
            x.v[i] = _mm512_load_si512(t1.e[d][i]);
            y.v[i] = _mm512_load_si512(t1.e[d][5 + i]);
        }
        fe8_mul(x, x, beta);
        fe8_neg(ny, y);
        fe8_select(y, flip, y, ny);
        put_entry(t2, d, x, y);
    }
}

// R back in plain form (and affine, where asked) with the lanes' flags.
void finish8(Ecmult8Out& out, const Gej8& acc, __mmask8 bad, __mmask8 square, bool affine) {
    if (affine) {
        Fe8 zi, zi2, ax, ay;
        fe8_inv(zi, acc.z);  // zero (an infinity lane) gives zero: never read
        fe8_sqr(zi2, zi);
        fe8_mul(ax, acc.x, zi2);
        fe8_mul(zi2, zi2, zi);
        fe8_mul(ay, acc.y, zi2);
        store8(out.ax, ax);
        store8(out.ay, ay);
    }
    Fe x[8], y[8], z[8];
    store8(x, acc.x);
    store8(y, acc.y);
    store8(z, acc.z);
    for (int l = 0; l < 8; ++l) {
        out.r[l].x = x[l];
        out.r[l].y = y[l];
        out.r[l].z = z[l];
        out.r[l].infinity = ((acc.inf >> l) & 1) != 0;
        out.degenerate[l] = ((bad >> l) & 1) != 0;
        out.off_curve[l] = ((square >> l) & 1) == 0;
    }
}

// SHA-256 on eight messages at once, one per 32-bit lane (lanes 8..15 of
// each register idle): the compression of one 64-byte block of every lane's
// message words w[0..16) into st.
__m512i sha8_ror(__m512i x, int n) { return _mm512_or_si512(_mm512_srli_epi32(x, n), _mm512_slli_epi32(x, 32 - n)); }

void sha8_compress(__m512i st[8], __m512i w[16]) {
    __m512i a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
    for (int t = 0; t < 64; ++t) {
        if (t >= 16) {
            const __m512i w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
            const __m512i s0 = _mm512_ternarylogic_epi32(sha8_ror(w15, 7), sha8_ror(w15, 18), _mm512_srli_epi32(w15, 3), 0x96);
            const __m512i s1 = _mm512_ternarylogic_epi32(sha8_ror(w2, 17), sha8_ror(w2, 19), _mm512_srli_epi32(w2, 10), 0x96);
            w[t & 15] = _mm512_add_epi32(_mm512_add_epi32(w[t & 15], s0), _mm512_add_epi32(w[(t - 7) & 15], s1));
        }
        const __m512i big_s1 = _mm512_ternarylogic_epi32(sha8_ror(e, 6), sha8_ror(e, 11), sha8_ror(e, 25), 0x96);
        const __m512i ch = _mm512_ternarylogic_epi32(e, f, g, 0xCA);
        __m512i t1 = _mm512_add_epi32(_mm512_add_epi32(h, big_s1), _mm512_add_epi32(ch, w[t & 15]));
        t1 = _mm512_add_epi32(t1, _mm512_set1_epi32(static_cast<int>(sha_k(t))));
        const __m512i big_s0 = _mm512_ternarylogic_epi32(sha8_ror(a, 2), sha8_ror(a, 13), sha8_ror(a, 22), 0x96);
        const __m512i maj = _mm512_ternarylogic_epi32(a, b, c, 0xE8);
        h = g;
        g = f;
        f = e;
        e = _mm512_add_epi32(d, t1);
        d = c;
        c = b;
        b = a;
        a = _mm512_add_epi32(t1, _mm512_add_epi32(big_s0, maj));
    }
    const __m512i v[8] = {a, b, c, d, e, f, g, h};
    for (int i = 0; i < 8; ++i) st[i] = _mm512_add_epi32(st[i], v[i]);
}

// Words i of eight 32-byte big-endian strings, one per lane.
void sha8_load(__m512i w[8], const u8* const p[8], int offset) {
    alignas(64) u32 t[8][16] = {};
    for (int l = 0; l < 8; ++l)
        for (int i = 0; i < 8; ++i) t[i][l] = load_be32(p[l] + offset + 4 * i);
    for (int i = 0; i < 8; ++i) w[i] = _mm512_load_si512(t[i]);
}

}  // namespace

void bip340_challenge8_ifma(const u8* const records[8], u8 out[8][32]) {
    u32 mid[8];
    bip340_challenge_midstate(mid);
    __m512i st[8], w[16];
    for (int i = 0; i < 8; ++i) st[i] = _mm512_set1_epi32(static_cast<int>(mid[i]));
    sha8_load(w, records, kSchnorrSig);  // R.x || key x
    sha8_load(w + 8, records, kRecKey);
    sha8_compress(st, w);
    sha8_load(w, records, kRecHash);     // msg, padding, 1280 bits
    w[8] = _mm512_set1_epi32(static_cast<int>(0x80000000u));
    for (int i = 9; i < 15; ++i) w[i] = _mm512_setzero_si512();
    w[15] = _mm512_set1_epi32(1280);
    sha8_compress(st, w);
    alignas(64) u32 t[8][16];
    for (int i = 0; i < 8; ++i) _mm512_store_si512(t[i], st[i]);
    for (int l = 0; l < 8; ++l)
        for (int i = 0; i < 8; ++i)
            for (int b = 0; b < 4; ++b) out[l][4 * i + b] = static_cast<u8>(t[i][l] >> (24 - 8 * b));
}

void field_op8_ifma(FieldOp op, const Fe* a, const Fe* b, Fe* r, bool* ok) {
    Fe8 x, y, z;
    load8(x, a);
    load8(y, b);
    __mmask8 good = 0xFF;
    switch (op) {
        case FieldOp::mul: fe8_mul(z, x, y); break;
        case FieldOp::sqr: fe8_sqr(z, x); break;
        case FieldOp::add: fe8_add(z, x, y); break;
        case FieldOp::sub: fe8_sub(z, x, y); break;
        case FieldOp::neg: fe8_neg(z, x); break;
        case FieldOp::inv: fe8_inv(z, x); break;
        case FieldOp::sqrt_ok: good = fe8_sqrt(z, x); break;
        case FieldOp::chain:
            field_chain(x, y, Ops8{});
            fe8_add(z, x, y);
            break;
    }
    store8(r, z);
    if (ok)
        for (int l = 0; l < 8; ++l) ok[l] = ((good >> l) & 1) != 0;
}

void ecmult8_ifma(const Ecmult8In& in, Ecmult8Out& out) {
    Ge8 p;
    const __mmask8 square = lift8(p, in);
    static thread_local PTable8 t1, t2;
    Fe8 zg, zg2, zg3;
    __mmask8 bad = build_p_table8(t1, zg, p);
    fe8_sqr(zg2, zg);
    fe8_mul(zg3, zg2, zg);
    build_lambda_table8(t2, t1, static_cast<__mmask8>(lane_mask(in.neg1) ^ lane_mask(in.neg2)));
    Gej8 acc;
    acc.inf = 0xFF;
    fe8_set_u64(acc.x, 0);
    fe8_set_u64(acc.y, 0);
    fe8_set_u64(acc.z, 0);
    for (int w = 0; w < 32; ++w) {
        if (w > 0)
            for (int k = 0; k < 4; ++k) gej8_double(acc, acc);
        Ge8 e;
        __m512i d = load_digits(in.dk[0][w]);
        gather_p(e, t1, d);
        gej8_add_ge<false>(acc, acc, e, _mm512_test_epi64_mask(d, d));
        d = load_digits(in.dk[1][w]);
        gather_p(e, t2, d);
        gej8_add_ge<false>(acc, acc, e, _mm512_test_epi64_mask(d, d));
        constexpr int kStep = kGWindow / 4;  // ladder windows a G digit spans
        if (w % kStep != kStep - 1) continue;
        for (int h = 0; h < 2; ++h) {
            d = load_digits(in.dg[h][w / kStep]);
            gather_g(e, h == 0 ? *in.g : *in.g128, d);
            fe8_mul(e.x, e.x, zg2);  // onto the scaled curve
            fe8_mul(e.y, e.y, zg3);
            gej8_add_ge<false>(acc, acc, e, _mm512_test_epi64_mask(d, d));
        }
    }
    fe8_mul(acc.z, acc.z, zg);  // back from the scaled curve
    bad |= gej8_degenerate_at_end(acc);
    finish8(out, acc, bad, square, in.affine);
}

void group_op8_ifma(GroupOp op, const Gej* a, const Ge* b, Gej* r, bool* degenerate) {
    Fe ax[8], ay[8], az[8], bx[8], by[8];
    Gej8 p;
    Ge8 q;
    p.inf = 0;
    for (int l = 0; l < 8; ++l) {
        ax[l] = a[l].x;
        ay[l] = a[l].y;
        az[l] = a[l].z;
        bx[l] = b[l].x;
        by[l] = b[l].y;
        if (a[l].infinity) p.inf = static_cast<__mmask8>(p.inf | (1u << l));
    }
    load8(p.x, ax);
    load8(p.y, ay);
    load8(p.z, az);
    load8(q.x, bx);
    load8(q.y, by);
    __mmask8 bad = 0;
    if (op == GroupOp::dbl) {
        gej8_double(p, p);
    } else {
        bad = gej8_add_ge(p, p, q, 0xFF);
    }
    store8(ax, p.x);
    store8(ay, p.y);
    store8(az, p.z);
    for (int l = 0; l < 8; ++l) {
        r[l].x = ax[l];
        r[l].y = ay[l];
        r[l].z = az[l];
        r[l].infinity = ((p.inf >> l) & 1) != 0;
        degenerate[l] = ((bad >> l) & 1) != 0;
    }
}

}  // namespace sigverify::kernels::lanes
