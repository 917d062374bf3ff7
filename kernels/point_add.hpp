// SPDX-License-Identifier: MIT
// The one formula both point additions end with, the GPU ladder's
// (ecmult32.hpp, on Fe32) and the exact path's (exact_group.hpp, on Fe): a
// template over the field type, which calls fe_sqr / fe_mul / fe_sub and
// finds them for F by overload (fe32.hpp names them for Fe32).
#pragma once

#include "kernels/sv_hd.hpp"

namespace sigverify::kernels {

// With both points on one Z (U1, S1 the first point's X and Y there, U2, S2
// the second's), h = U2 - U1 and rr = S2 - S1:
//   X3 = rr^2 - h^3 - 2 U1 h^2,   Y3 = rr (U1 h^2 - X3) - S1 h^3
// and Z3 = Z h is the caller's, as is h = 0 (equal or opposite points, where
// this does not hold). x3 and y3 are written before s1 is last read: they
// must not be s1 (or u1).
template <class F>
SV_HD void point_add_xy(F& x3, F& y3, const F& h, const F& rr, const F& u1, const F& s1) {
    F hh, hhh, v, t;
    fe_sqr(hh, h);
    fe_mul(hhh, h, hh);
    fe_mul(v, u1, hh);
    fe_sqr(x3, rr);
    fe_sub(x3, x3, hhh);
    fe_sub(x3, x3, v);
    fe_sub(x3, x3, v);
    fe_sub(t, v, x3);
    fe_mul(y3, rr, t);
    fe_mul(t, s1, hhh);
    fe_sub(y3, y3, t);
}

}  // namespace sigverify::kernels
