// SPDX-License-Identifier: MIT
// Points of secp256k1 on V::N lanes (fe52xn.hpp's widths; included by
// lanes_ifma8.cpp and lanes_ifma4.cpp only):
// Jacobian points with an infinity mask, the doubling and the mixed addition
// of an affine point, the last with a mask of the lanes it cannot decide
// (equal or opposite points: h = 0 with neither point infinity), which the
// verifier answers as "recheck" and the exact path decides.
#pragma once

#include "kernels/lanes/fe52xn.hpp"

namespace sigverify::kernels::lanes {

template <class V>
struct GeN {
    FeN<V> x, y;
};

template <class V>
struct GejN {
    FeN<V> x, y, z;
    __mmask8 inf;  // lanes holding the point at infinity (their x, y, z are unspecified)
};

// r = 2a (y^2 = x^3 + 7 has no point of order 2, so only infinity is special,
// and it stays infinity). r may be a.  (2M + 5S, seven carries: the
// subtractions that feed no product are merged, fen_twice_sub2 and
// fen_sub_shl)
template <class V>
inline void gejn_double(GejN<V>& r, const GejN<V>& a) {
    FeN<V> xx, yy, yyyy, d, e, f, t;
    fen_sqr(xx, a.x);
    fen_sqr(yy, a.y);
    fen_sqr(yyyy, yy);
    fen_add(t, a.x, yy);  // d = 2((x + yy)^2 - xx - yyyy) = 4 x yy
    fen_sqr(t, t);
    fen_twice_sub2(d, t, xx, yyyy);
    fen_triple(e, xx);
    fen_sqr(f, e);
    fen_mul(r.z, a.y, a.z);
    fen_add(r.z, r.z, r.z);
    fen_sub_shl(r.x, f, d, 1);  // x3 = f - 2d
    fen_sub(t, d, r.x);
    fen_mul(r.y, e, t);
    fen_sub_shl(r.y, r.y, yyyy, 3);  // y3 = e (d - x3) - 8 yyyy
    r.inf = a.inf;
}

// r = a + b for the lanes in `use` (b affine, never infinity); lanes outside
// it keep a. Returns the lanes of `use` where a and b are equal or opposite
// (r unspecified there). r may be a. ratio, if given, receives h, the
// factor Z(r) / Z(a) of the generic lanes.  (8M + 3S)
// With check false the degenerate lanes are not looked for (0 returned):
// there h = 0, so Z(r) = 0, and every later doubling (Z' = 2 Y Z) and
// addition (Z' = Z h) keeps Z = 0 in a lane that is not infinity, so a
// caller may find them all at once at the end (gejn_degenerate_at_end).
template <bool check = true, class V>
inline __mmask8 gejn_add_ge(GejN<V>& r, const GejN<V>& a, const GeN<V>& b, __mmask8 use, FeN<V>* ratio = nullptr) {
    FeN<V> z1z1, u2, s2, h, rr, x3, y3, z3;
    fen_sqr(z1z1, a.z);
    fen_mul(u2, b.x, z1z1);
    fen_mul(s2, b.y, a.z);
    fen_mul(s2, s2, z1z1);
    fen_sub(h, u2, a.x);
    fen_sub(rr, s2, a.y);
    {  // point_add.hpp's point_add_xy, its three subtractions for x3 merged
        FeN<V> hh, hhh, v, t;
        fen_sqr(hh, h);
        fen_mul(hhh, h, hh);
        fen_mul(v, a.x, hh);
        fen_sqr(x3, rr);
        fen_sub_sub2(x3, x3, hhh, v);  // rr^2 - hhh - 2v
        fen_sub(t, v, x3);
        fen_mul(y3, rr, t);
        fen_mul(t, a.y, hhh);
        fen_sub(y3, y3, t);
    }
    fen_mul(z3, a.z, h);
    if (ratio) *ratio = h;
    const __mmask8 from_inf = use & a.inf;        // result is b itself
    const __mmask8 generic = use & ~a.inf;
    const __mmask8 degenerate = check ? generic & fen_is_zero(h) : 0;
    fen_select(r.x, generic, a.x, x3);
    fen_select(r.y, generic, a.y, y3);
    fen_select(r.z, generic, a.z, z3);
    if (from_inf) {  // rare after the ladder's first windows
        FeN<V> one;
        fen_set_u64(one, 1);
        fen_select(r.x, from_inf, r.x, b.x);
        fen_select(r.y, from_inf, r.y, b.y);
        fen_select(r.z, from_inf, r.z, one);
    }
    r.inf = static_cast<__mmask8>(a.inf & ~use);
    return degenerate;
}

// The lanes of a chain of doublings and unchecked additions (from infinity
// or a finite point) that met a degenerate addition: finite with Z = 0.
template <class V>
inline __mmask8 gejn_degenerate_at_end(const GejN<V>& a) { return static_cast<__mmask8>(~a.inf & fen_is_zero(a.z)); }

}  // namespace sigverify::kernels::lanes
