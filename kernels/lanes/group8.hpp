// SPDX-License-Identifier: MIT
// Points of secp256k1 on eight lanes (included by lanes_ifma8.cpp only):
// Jacobian points with an infinity mask, the doubling and the mixed addition
// of an affine point, the last with a mask of the lanes it cannot decide
// (equal or opposite points: h = 0 with neither point infinity), which the
// verifier answers as "recheck" and the exact path decides.
#pragma once

#include "kernels/lanes/fe52x8.hpp"

namespace sigverify::kernels::lanes {

struct Ge8 {
    Fe8 x, y;
};

struct Gej8 {
    Fe8 x, y, z;
    __mmask8 inf;  // lanes holding the point at infinity (their x, y, z are unspecified)
};

// r = 2a (y^2 = x^3 + 7 has no point of order 2, so only infinity is special,
// and it stays infinity). r may be a.  (2M + 5S, seven carries: the
// subtractions that feed no product are merged, fe8_twice_sub2 and
// fe8_sub_shl)
inline void gej8_double(Gej8& r, const Gej8& a) {
    Fe8 xx, yy, yyyy, d, e, f, t;
    fe8_sqr(xx, a.x);
    fe8_sqr(yy, a.y);
    fe8_sqr(yyyy, yy);
    fe8_add(t, a.x, yy);  // d = 2((x + yy)^2 - xx - yyyy) = 4 x yy
    fe8_sqr(t, t);
    fe8_twice_sub2(d, t, xx, yyyy);
    fe8_mul_small(e, xx, 3);
    fe8_sqr(f, e);
    fe8_mul(r.z, a.y, a.z);
    fe8_add(r.z, r.z, r.z);
    fe8_sub_shl(r.x, f, d, 1);  // x3 = f - 2d
    fe8_sub(t, d, r.x);
    fe8_mul(r.y, e, t);
    fe8_sub_shl(r.y, r.y, yyyy, 3);  // y3 = e (d - x3) - 8 yyyy
    r.inf = a.inf;
}

// r = a + b for the lanes in `use` (b affine, never infinity); lanes outside
// it keep a. Returns the lanes of `use` where a and b are equal or opposite
// (r unspecified there). r may be a. ratio, if given, receives h, the
// factor Z(r) / Z(a) of the generic lanes.  (8M + 3S)
// With check false the degenerate lanes are not looked for (0 returned):
// there h = 0, so Z(r) = 0, and every later doubling (Z' = 2 Y Z) and
// addition (Z' = Z h) keeps Z = 0 in a lane that is not infinity, so a
// caller may find them all at once at the end (gej8_degenerate_at_end).
template <bool check = true>
inline __mmask8 gej8_add_ge(Gej8& r, const Gej8& a, const Ge8& b, __mmask8 use, Fe8* ratio = nullptr) {
    Fe8 z1z1, u2, s2, h, rr, x3, y3, z3;
    fe8_sqr(z1z1, a.z);
    fe8_mul(u2, b.x, z1z1);
    fe8_mul(s2, b.y, a.z);
    fe8_mul(s2, s2, z1z1);
    fe8_sub(h, u2, a.x);
    fe8_sub(rr, s2, a.y);
    {  // point_add.hpp's point_add_xy, its three subtractions for x3 merged
        Fe8 hh, hhh, v, t;
        fe8_sqr(hh, h);
        fe8_mul(hhh, h, hh);
        fe8_mul(v, a.x, hh);
        fe8_sqr(x3, rr);
        fe8_sub_sub2(x3, x3, hhh, v);  // rr^2 - hhh - 2v
        fe8_sub(t, v, x3);
        fe8_mul(y3, rr, t);
        fe8_mul(t, a.y, hhh);
        fe8_sub(y3, y3, t);
    }
    fe8_mul(z3, a.z, h);
    if (ratio) *ratio = h;
    const __mmask8 from_inf = use & a.inf;        // result is b itself
    const __mmask8 generic = use & ~a.inf;
    const __mmask8 degenerate = check ? generic & fe8_is_zero(h) : 0;
    fe8_select(r.x, generic, a.x, x3);
    fe8_select(r.y, generic, a.y, y3);
    fe8_select(r.z, generic, a.z, z3);
    if (from_inf) {  // rare after the ladder's first windows
        Fe8 one;
        fe8_set_u64(one, 1);
        fe8_select(r.x, from_inf, r.x, b.x);
        fe8_select(r.y, from_inf, r.y, b.y);
        fe8_select(r.z, from_inf, r.z, one);
    }
    r.inf = static_cast<__mmask8>(a.inf & ~use);
    return degenerate;
}

// The lanes of a chain of doublings and unchecked additions (from infinity
// or a finite point) that met a degenerate addition: finite with Z = 0.
inline __mmask8 gej8_degenerate_at_end(const Gej8& a) { return static_cast<__mmask8>(~a.inf & fe8_is_zero(a.z)); }

}  // namespace sigverify::kernels::lanes
