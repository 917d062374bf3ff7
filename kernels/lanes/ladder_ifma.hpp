// SPDX-License-Identifier: MIT
// The IFMA lanes' verifier body, written once for any register layer V
// (vec_ifma8.hpp, vec_ifma4.hpp): loads and stores, inversion and square
// root, the key tables, the ladder, the challenge hash, and the entry
// templates lanes_ifma8.cpp and lanes_ifma4.cpp instantiate. Each call works
// on V::N lanes starting at lane `base` of lanes.hpp's eight (base 0 only
// for the 8-lane width; 0 and 4 for the 4-lane one).
#pragma once

#include "kernels/lanes/groupn.hpp"
#include "kernels/lanes/lanes_ifma.hpp"
#include "kernels/record_layout.hpp"
#include "kernels/sha256.hpp"

namespace sigverify::kernels::lanes::ifma {

constexpr u64 kM52 = (1ull << 52) - 1;

// V::N fully reduced Fe (four 64-bit limbs) into five 52-bit limbs a lane.
template <class V>
void load_fe(FeN<V>& r, const Fe* a) {
    alignas(64) u64 t[5][V::N];
    for (int l = 0; l < V::N; ++l) {
        const u64* w = a[l].v;
        t[0][l] = w[0] & kM52;
        t[1][l] = ((w[0] >> 52) | (w[1] << 12)) & kM52;
        t[2][l] = ((w[1] >> 40) | (w[2] << 24)) & kM52;
        t[3][l] = ((w[2] >> 28) | (w[3] << 36)) & kM52;
        t[4][l] = w[3] >> 16;
    }
    for (int i = 0; i < 5; ++i) r.v[i] = V::load(t[i]);
}

// Back to Fe, fully reduced.
template <class V>
void store_fe(Fe* r, const FeN<V>& a) {
    FeN<V> n = a;
    fen_normalize(n);
    alignas(64) u64 t[5][V::N];
    for (int i = 0; i < 5; ++i) V::store(t[i], n.v[i]);
    for (int l = 0; l < V::N; ++l) {
        u64* w = r[l].v;
        w[0] = t[0][l] | (t[1][l] << 52);
        w[1] = (t[1][l] >> 12) | (t[2][l] << 40);
        w[2] = (t[2][l] >> 24) | (t[3][l] << 28);
        w[3] = (t[3][l] >> 36) | (t[4][l] << 16);
    }
}

template <class V>
void fen_inv(FeN<V>& r, const FeN<V>& a) {
    FeN<V> x246, x2;
    fe_chain_246(x246, x2, a);
    fe_chain_inv_tail(r, x246, x2, a);
}

// Returns the lanes where r^2 == a.
template <class V>
__mmask8 fen_sqrt(FeN<V>& r, const FeN<V>& a) {
    FeN<V> x246, x2, t;
    fe_chain_246(x246, x2, a);
    fe_chain_sqrt_tail(r, x246, x2);
    fen_sqr(t, r);
    return fen_equal(t, a);
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
template <class V>
struct PTable {
    alignas(64) u64 e[16][10][V::N];
};

template <class V>
void put_entry(PTable<V>& t, int d, const FeN<V>& x, const FeN<V>& y) {
    for (int i = 0; i < 5; ++i) {
        V::store(t.e[d][i], x.v[i]);
        V::store(t.e[d][5 + i], y.v[i]);
    }
}

template <class V>
__mmask8 build_p_table(PTable<V>& t, FeN<V>& zg, const GeN<V>& p) {
    GejN<V> j[16];
    FeN<V> ratio[16];  // Z(j[d]) / Z(j[d-1])
    j[1].x = p.x;
    j[1].y = p.y;
    fen_set_u64(j[1].z, 1);
    j[1].inf = 0;
    gejn_double(j[2], j[1]);
    ratio[2] = j[2].z;
    __mmask8 bad = 0;
    for (int d = 3; d < 16; ++d) bad |= gejn_add_ge(j[d], j[d - 1], p, V::kAll, &ratio[d]);
    for (int i = 0; i < 10; ++i) V::store(t.e[0][i], V::zero());
    put_entry(t, 15, j[15].x, j[15].y);
    FeN<V> s = ratio[15];  // Z(15P) / Z(dP)
    for (int d = 14; d >= 1; --d) {
        if (d < 14) fen_mul(s, s, ratio[d + 1]);
        FeN<V> s2, s3, x, y;
        fen_sqr(s2, s);
        fen_mul(s3, s2, s);
        fen_mul(x, j[d].x, s2);
        fen_mul(y, j[d].y, s3);
        put_entry(t, d, x, y);
    }
    zg = j[15].z;
    return bad;
}

// Entry d[lane] of a table, gathered into the lanes.
template <class V>
void gather_g(GeN<V>& r, const GTable8& t, typename V::R d) {  // t: lanes.hpp
    const auto base = V::mullo(d, V::set1(10));
    for (int i = 0; i < 5; ++i) {
        r.x.v[i] = V::gather(&t.e[0][0], V::add(base, V::set1(static_cast<u64>(i))));
        r.y.v[i] = V::gather(&t.e[0][0], V::add(base, V::set1(static_cast<u64>(5 + i))));
    }
}

template <class V>
void gather_p(GeN<V>& r, const PTable<V>& t, typename V::R d) {
    const auto base = V::add(V::mullo(d, V::set1(10 * V::N)), V::lane_index());
    for (int i = 0; i < 5; ++i) {
        r.x.v[i] = V::gather(&t.e[0][0][0], V::add(base, V::set1(static_cast<u64>(V::N * i))));
        r.y.v[i] = V::gather(&t.e[0][0][0], V::add(base, V::set1(static_cast<u64>(V::N * (5 + i)))));
    }
}

template <class V>
struct OpsN {
    void mul(FeN<V>& r, const FeN<V>& a, const FeN<V>& b) const { fen_mul(r, a, b); }
    void sqr(FeN<V>& r, const FeN<V>& a) const { fen_sqr(r, a); }
    void add(FeN<V>& r, const FeN<V>& a, const FeN<V>& b) const { fen_add(r, a, b); }
    void sub(FeN<V>& r, const FeN<V>& a, const FeN<V>& b) const { fen_sub(r, a, b); }
    void neg(FeN<V>& r, const FeN<V>& a) const { fen_neg(r, a); }
    void mul3(FeN<V>& r, const FeN<V>& a) const { fen_mul_small(r, a, 3); }
};

// The mask of b[0..V::N).
template <class V>
__mmask8 lane_mask(const bool* b) {
    unsigned m = 0;
    for (int l = 0; l < V::N; ++l)
        if (b[l]) m |= 1u << l;
    return static_cast<__mmask8>(m);
}

// Every lane holding the same (fully reduced) element.
template <class V>
FeN<V> fen_broadcast(const Fe& a) {
    Fe same[V::N];
    for (auto& s : same) s = a;
    FeN<V> r;
    load_fe(r, same);
    return r;
}

// The keys lifted: y with the wanted parity, then negated where k1 is
// (the k1 stream adds multiples of -P there). Returns the lanes where
// x^3 + 7 is a square (the key is on the curve).
template <class V>
__mmask8 lift(GeN<V>& p, const Ecmult8In& in, int base) {
    load_fe(p.x, in.px + base);
    FeN<V> t, seven;
    fen_sqr(t, p.x);
    fen_mul(t, t, p.x);
    fen_set_u64(seven, 7);
    fen_add(t, t, seven);
    const __mmask8 square = fen_sqrt(p.y, t);
    fen_normalize(p.y);
    const __mmask8 is_odd = V::test(p.y.v[0], V::set1(1));
    fen_neg(t, p.y);
    fen_select(p.y, static_cast<__mmask8>(is_odd ^ lane_mask<V>(in.odd + base) ^ lane_mask<V>(in.neg1 + base)), p.y, t);
    return square;
}

// The k2 stream's table from the k1 stream's: lambda (x, y) = (beta x, y),
// y negated in the lanes of `flip` (k2's sign differs from k1's).
template <class V>
void build_lambda_table(PTable<V>& t2, const PTable<V>& t1, __mmask8 flip) {
    const FeN<V> beta = fen_broadcast<V>(fe_beta());
    for (int d = 1; d < 16; ++d) {
        FeN<V> x, y, ny;
        for (int i = 0; i < 5; ++i) {
            x.v[i] = V::load(t1.e[d][i]);
            y.v[i] = V::load(t1.e[d][5 + i]);
        }
        fen_mul(x, x, beta);
        fen_neg(ny, y);
        fen_select(y, flip, y, ny);
        put_entry(t2, d, x, y);
    }
}

// The ladder's result in lanes base .. base + V::N.
template <class V>
struct LadderOut {
    GejN<V> acc;
    __mmask8 bad, square;
};

// zi[h] = 1 / Z of res[h] for every group h of lanes, one inversion for all
// (Montgomery's trick; the 4-lane width runs two groups a call). A lane with
// Z = 0 (infinity, or a degenerate lane: neither's affine form is read)
// counts as 1, so it spoils no other group's lane.
template <class V, int H>
void batch_inv_z(FeN<V> zi[H], const LadderOut<V> res[H]) {
    FeN<V> z[H], pre[H], one, inv;
    fen_set_u64(one, 1);
    for (int h = 0; h < H; ++h) fen_select(z[h], fen_is_zero(res[h].acc.z), res[h].acc.z, one);
    pre[0] = z[0];
    for (int h = 1; h < H; ++h) fen_mul(pre[h], pre[h - 1], z[h]);
    fen_inv(inv, pre[H - 1]);
    for (int h = H - 1; h > 0; --h) {
        fen_mul(zi[h], inv, pre[h - 1]);
        fen_mul(inv, inv, z[h]);
    }
    zi[0] = inv;
}

// R back in plain form (and affine, with zi = 1 / Z, where given) with the
// lanes' flags.
template <class V>
void finish(Ecmult8Out& out, int base, const LadderOut<V>& res, const FeN<V>* zi) {
    const GejN<V>& acc = res.acc;
    if (zi != nullptr) {
        FeN<V> zi2, ax, ay;
        fen_sqr(zi2, *zi);
        fen_mul(ax, acc.x, zi2);
        fen_mul(zi2, zi2, *zi);
        fen_mul(ay, acc.y, zi2);
        store_fe(out.ax + base, ax);
        store_fe(out.ay + base, ay);
    }
    Fe x[V::N], y[V::N], z[V::N];
    store_fe(x, acc.x);
    store_fe(y, acc.y);
    store_fe(z, acc.z);
    for (int l = 0; l < V::N; ++l) {
        Gej& r = out.r[base + l];
        r.x = x[l];
        r.y = y[l];
        r.z = z[l];
        r.infinity = ((acc.inf >> l) & 1) != 0;
        out.degenerate[base + l] = ((res.bad >> l) & 1) != 0;
        out.off_curve[base + l] = ((res.square >> l) & 1) == 0;
    }
}

// R = na P + ng G in lanes base .. base + V::N (lanes.hpp's Ecmult8In).
template <class V>
void ecmult(const Ecmult8In& in, LadderOut<V>& res, int base) {
    GeN<V> p;
    res.square = lift(p, in, base);
    static thread_local PTable<V> t1, t2;
    FeN<V> zg, zg2, zg3;
    __mmask8 bad = build_p_table(t1, zg, p);
    fen_sqr(zg2, zg);
    fen_mul(zg3, zg2, zg);
    build_lambda_table(t2, t1, static_cast<__mmask8>(lane_mask<V>(in.neg1 + base) ^ lane_mask<V>(in.neg2 + base)));
    GejN<V> acc;
    acc.inf = V::kAll;
    fen_set_u64(acc.x, 0);
    fen_set_u64(acc.y, 0);
    fen_set_u64(acc.z, 0);
    for (int w = 0; w < 32; ++w) {
        if (w > 0)
            for (int k = 0; k < 4; ++k) gejn_double(acc, acc);
        GeN<V> e;
        auto d = V::load_bytes(in.dk[0][w] + base);
        gather_p(e, t1, d);
        gejn_add_ge<false>(acc, acc, e, V::test(d, d));
        d = V::load_bytes(in.dk[1][w] + base);
        gather_p(e, t2, d);
        gejn_add_ge<false>(acc, acc, e, V::test(d, d));
        constexpr int kStep = kGWindow / 4;  // ladder windows a G digit spans
        if (w % kStep != kStep - 1) continue;
        for (int h = 0; h < 2; ++h) {
            d = V::load_bytes(in.dg[h][w / kStep] + base);
            gather_g(e, h == 0 ? *in.g : *in.g128, d);
            fen_mul(e.x, e.x, zg2);  // onto the scaled curve
            fen_mul(e.y, e.y, zg3);
            gejn_add_ge<false>(acc, acc, e, V::test(d, d));
        }
    }
    fen_mul(acc.z, acc.z, zg);  // back from the scaled curve
    res.bad = bad | gejn_degenerate_at_end(acc);
    res.acc = acc;
}

// SHA-256 on eight messages at once, one per 32-bit lane (the 512-bit
// registers' lanes 8..15 idle): the compression of one 64-byte block of
// every lane's message words w[0..16) into st.
template <class V>
void sha_compress(typename V::R st[8], typename V::R w[16]) {
    using R = typename V::R;
    R a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
    for (int t = 0; t < 64; ++t) {
        if (t >= 16) {
            const R w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
            const R s0 = V::xor3(V::ror32(w15, 7), V::ror32(w15, 18), V::srli32(w15, 3));
            const R s1 = V::xor3(V::ror32(w2, 17), V::ror32(w2, 19), V::srli32(w2, 10));
            w[t & 15] = V::add32(V::add32(w[t & 15], s0), V::add32(w[(t - 7) & 15], s1));
        }
        const R big_s1 = V::xor3(V::ror32(e, 6), V::ror32(e, 11), V::ror32(e, 25));
        const R ch = V::choose(e, f, g);
        R t1 = V::add32(V::add32(h, big_s1), V::add32(ch, w[t & 15]));
        t1 = V::add32(t1, V::set1_32(sha_k(t)));
        const R big_s0 = V::xor3(V::ror32(a, 2), V::ror32(a, 13), V::ror32(a, 22));
        const R maj = V::majority(a, b, c);
        h = g;
        g = f;
        f = e;
        e = V::add32(d, t1);
        d = c;
        c = b;
        b = a;
        a = V::add32(t1, V::add32(big_s0, maj));
    }
    const R v[8] = {a, b, c, d, e, f, g, h};
    for (int i = 0; i < 8; ++i) st[i] = V::add32(st[i], v[i]);
}

// Words i of eight 32-byte big-endian strings, one per lane.
template <class V>
void sha_load(typename V::R w[8], const u8* const p[8], int offset) {
    alignas(64) u32 t[8][V::N32] = {};
    for (int l = 0; l < 8; ++l)
        for (int i = 0; i < 8; ++i) t[i][l] = load_be32(p[l] + offset + 4 * i);
    for (int i = 0; i < 8; ++i) w[i] = V::load(t[i]);
}

// lanes_ifma.hpp's entry points, at width V.

template <class V>
void bip340_challenge8(const u8* const records[8], u8 out[8][32]) {
    static_assert(V::N32 >= 8, "eight messages a register");
    u32 mid[8];
    bip340_challenge_midstate(mid);
    typename V::R st[8], w[16];
    for (int i = 0; i < 8; ++i) st[i] = V::set1_32(mid[i]);
    sha_load<V>(w, records, kSchnorrSig);  // R.x || key x
    sha_load<V>(w + 8, records, kRecKey);
    sha_compress<V>(st, w);
    sha_load<V>(w, records, kRecHash);     // msg, padding, 1280 bits
    w[8] = V::set1_32(0x80000000u);
    for (int i = 9; i < 15; ++i) w[i] = V::zero();
    w[15] = V::set1_32(1280);
    sha_compress<V>(st, w);
    alignas(64) u32 t[8][V::N32];
    for (int i = 0; i < 8; ++i) V::store(t[i], st[i]);
    for (int l = 0; l < 8; ++l)
        for (int i = 0; i < 8; ++i)
            for (int b = 0; b < 4; ++b) out[l][4 * i + b] = static_cast<u8>(t[i][l] >> (24 - 8 * b));
}

template <class V>
void field_op8(FieldOp op, const Fe* a, const Fe* b, Fe* r, bool* ok) {
    for (int base = 0; base < 8; base += V::N) {
        FeN<V> x, y, z;
        load_fe(x, a + base);
        load_fe(y, b + base);
        __mmask8 good = V::kAll;
        switch (op) {
            case FieldOp::mul: fen_mul(z, x, y); break;
            case FieldOp::sqr: fen_sqr(z, x); break;
            case FieldOp::add: fen_add(z, x, y); break;
            case FieldOp::sub: fen_sub(z, x, y); break;
            case FieldOp::neg: fen_neg(z, x); break;
            case FieldOp::inv: fen_inv(z, x); break;
            case FieldOp::sqrt_ok: good = fen_sqrt(z, x); break;
            case FieldOp::chain:
                field_chain(x, y, OpsN<V>{});
                fen_add(z, x, y);
                break;
        }
        store_fe(r + base, z);
        if (ok)
            for (int l = 0; l < V::N; ++l) ok[base + l] = ((good >> l) & 1) != 0;
    }
}

template <class V>
void ecmult8(const Ecmult8In& in, Ecmult8Out& out) {
    constexpr int H = 8 / V::N;
    LadderOut<V> res[H];
    for (int h = 0; h < H; ++h) ecmult<V>(in, res[h], h * V::N);
    FeN<V> zi[H];
    if (in.affine) batch_inv_z<V, H>(zi, res);
    for (int h = 0; h < H; ++h) finish(out, h * V::N, res[h], in.affine ? &zi[h] : nullptr);
}

template <class V>
void group_op8(GroupOp op, const Gej* a, const Ge* b, Gej* r, bool* degenerate) {
    for (int base = 0; base < 8; base += V::N) {
        Fe ax[V::N], ay[V::N], az[V::N], bx[V::N], by[V::N];
        GejN<V> p;
        GeN<V> q;
        p.inf = 0;
        for (int l = 0; l < V::N; ++l) {
            ax[l] = a[base + l].x;
            ay[l] = a[base + l].y;
            az[l] = a[base + l].z;
            bx[l] = b[base + l].x;
            by[l] = b[base + l].y;
            if (a[base + l].infinity) p.inf = static_cast<__mmask8>(p.inf | (1u << l));
        }
        load_fe(p.x, ax);
        load_fe(p.y, ay);
        load_fe(p.z, az);
        load_fe(q.x, bx);
        load_fe(q.y, by);
        __mmask8 bad = 0;
        if (op == GroupOp::dbl) {
            gejn_double(p, p);
        } else {
            bad = gejn_add_ge(p, p, q, V::kAll);
        }
        store_fe(ax, p.x);
        store_fe(ay, p.y);
        store_fe(az, p.z);
        for (int l = 0; l < V::N; ++l) {
            r[base + l].x = ax[l];
            r[base + l].y = ay[l];
            r[base + l].z = az[l];
            r[base + l].infinity = ((p.inf >> l) & 1) != 0;
            degenerate[base + l] = ((bad >> l) & 1) != 0;
        }
    }
}

}  // namespace sigverify::kernels::lanes::ifma
