// SPDX-License-Identifier: MIT
// The exact path's group law (and the host's G-table precomputation): the
// secp256k1 group y^2 = x^3 + 7 over the field of field.hpp.
//
// Ge: affine point (x, y) with an infinity flag.
// Gej: Jacobian point (X, Y, Z) standing for (X/Z^2, Y/Z^3), with an infinity
// flag. Every addition handles the special cases completely: either operand
// at infinity, equal points (falls through to doubling) and opposite points
// (result at infinity). secp256k1 has no point of order 2, so doubling a
// finite point never gives infinity.
#pragma once

#include "kernels/field.hpp"
#include "kernels/point_add.hpp"

namespace sigverify::kernels {

struct Ge {
    Fe x, y;
    bool infinity;
};

struct Gej {
    Fe x, y, z;
    bool infinity;
};

// Constants are returned by functions (not namespace-scope arrays) so that
// host and device code read the same definition.
SV_HD Ge ge_generator() {
    Ge g;
    g.x = Fe{{0x59F2815B16F81798ull, 0x029BFCDB2DCE28D9ull, 0x55A06295CE870B07ull, 0x79BE667EF9DCBBACull}};
    g.y = Fe{{0x9C47D08FFB10D4B8ull, 0xFD17B448A6855419ull, 0x5DA4FBFC0E1108A8ull, 0x483ADA7726A3C465ull}};
    g.infinity = false;
    return g;
}

SV_HD Ge ge_from_storage(const GeStorage& s) {
    Ge g;
    u256_copy(g.x.v, s.x);
    u256_copy(g.y.v, s.y);
    g.infinity = false;
    return g;
}

// g must be finite (a table entry has no flag).
SV_HD GeStorage ge_to_storage(const Ge& g) {
    GeStorage s;
    u256_copy(s.x, g.x.v);
    u256_copy(s.y, g.y.v);
    return s;
}

SV_HD Gej gej_infinity() {
    Gej r;
    r.x = fe_zero();
    r.y = fe_zero();
    r.z = fe_zero();
    r.infinity = true;
    return r;
}

SV_HD Gej gej_from_ge(const Ge& a) {
    Gej r;
    r.x = a.x;
    r.y = a.y;
    r.z = fe_one();
    r.infinity = a.infinity;
    return r;
}

// y^2 == x^3 + 7
SV_HD bool ge_is_on_curve(const Ge& a) {
    if (a.infinity) return false;
    Fe y2, x3;
    fe_sqr(y2, a.y);
    fe_sqr(x3, a.x);
    fe_mul(x3, x3, a.x);
    fe_add(x3, x3, fe_from_u64(7));
    return fe_equal(y2, x3);
}

// Finds the point with x and the given y parity; false when x^3 + 7 is not a
// square (x must already be < p).
SV_HD bool ge_set_xo(Ge& r, const Fe& x, bool odd) {
    Fe c, y;
    fe_sqr(c, x);
    fe_mul(c, c, x);
    fe_add(c, c, fe_from_u64(7));
    if (!fe_sqrt(y, c)) return false;
    if (fe_is_odd(y) != odd) fe_neg(y, y);
    r.x = x;
    r.y = y;
    r.infinity = false;
    return true;
}

SV_HD void ge_neg(Ge& r, const Ge& a) {
    r.x = a.x;
    fe_neg(r.y, a.y);
    r.infinity = a.infinity;
}

SV_HD void gej_neg(Gej& r, const Gej& a) {
    r.x = a.x;
    fe_neg(r.y, a.y);
    r.z = a.z;
    r.infinity = a.infinity;
}

// r = 2a.  (a = 0 curve; 2M + 5S)
SV_HD_NOINLINE void gej_double(Gej& r, const Gej& a) {
    if (a.infinity) {
        r = a;
        return;
    }
    Fe A, B, C, D, E, F, t;
    fe_sqr(A, a.x);           // A = X^2
    fe_sqr(B, a.y);           // B = Y^2
    fe_sqr(C, B);             // C = B^2
    fe_add(t, a.x, B);
    fe_sqr(t, t);
    fe_sub(t, t, A);
    fe_sub(t, t, C);
    fe_add(D, t, t);          // D = 2((X+B)^2 - A - C)
    fe_add(E, A, A);
    fe_add(E, E, A);          // E = 3A
    fe_sqr(F, E);             // F = E^2
    Fe z3;
    fe_mul(z3, a.y, a.z);
    fe_add(r.z, z3, z3);      // Z3 = 2YZ
    Fe x3;
    fe_sub(x3, F, D);
    fe_sub(x3, x3, D);        // X3 = F - 2D
    Fe c8;
    fe_mul_small(c8, C, 8);
    fe_sub(t, D, x3);
    fe_mul(t, E, t);
    fe_sub(r.y, t, c8);       // Y3 = E(D - X3) - 8C
    r.x = x3;
    r.infinity = false;
}

// What both additions share once the two points are on one Z: u1, s1 are
// a's X and Y there, u2, s2 b's. h = u2 - u1 and rr = s2 - s1; h = 0 means
// equal points (r = 2a) or opposite ones (r = infinity): r is then complete
// and the result false. Otherwise it writes X3 and Y3 (point_add_xy, the
// GPU ladder's formula too), and the caller sets Z3 = (the common Z) h.
// u1 and s1 are copies: r may be a, and u1, s1 a's own coordinates; it never
// writes r.z, so a.z (or b.z) is still there for the caller's Z3.
SV_HD bool gej_add_on_common_z(Gej& r, const Gej& a, Fe u1, Fe s1, const Fe& u2, const Fe& s2, Fe& h) {
    Fe rr;
    fe_sub(h, u2, u1);
    fe_sub(rr, s2, s1);
    if (fe_is_zero(h)) {
        if (fe_is_zero(rr)) {
            gej_double(r, a);
        } else {
            r = gej_infinity();
        }
        return false;
    }
    Fe x3, y3;
    point_add_xy(x3, y3, h, rr, u1, s1);
    r.x = x3;
    r.y = y3;
    r.infinity = false;
    return true;
}

// r = a + b with b affine.  (8M + 3S)
// zr (optional) receives Z(r) / Z(a) in the generic case, and zero when a
// special case (infinity, equal or opposite points) was taken.
SV_HD_NOINLINE void gej_add_ge(Gej& r, const Gej& a, const Ge& b, Fe* zr = nullptr) {
    if (zr) *zr = fe_zero();
    if (b.infinity) {
        r = a;
        return;
    }
    if (a.infinity) {
        r = gej_from_ge(b);
        return;
    }
    // b onto a's Z: (x Z^2, y Z^3); a is (X, Y) there already
    Fe z1z1, u2, s2, h;
    fe_sqr(z1z1, a.z);
    fe_mul(u2, b.x, z1z1);
    fe_mul(s2, b.y, a.z);
    fe_mul(s2, s2, z1z1);
    if (!gej_add_on_common_z(r, a, a.x, a.y, u2, s2, h)) return;
    fe_mul(r.z, a.z, h);
    if (zr) *zr = h;
}

// r = a + b, both Jacobian.  (12M + 4S)
SV_HD_NOINLINE void gej_add(Gej& r, const Gej& a, const Gej& b) {
    if (a.infinity) {
        r = b;
        return;
    }
    if (b.infinity) {
        r = a;
        return;
    }
    // both onto the Z Z(a) Z(b)
    Fe z1z1, z2z2, u1, u2, s1, s2, h, z;
    fe_sqr(z1z1, a.z);
    fe_sqr(z2z2, b.z);
    fe_mul(u1, a.x, z2z2);
    fe_mul(u2, b.x, z1z1);
    fe_mul(s1, a.y, b.z);
    fe_mul(s1, s1, z2z2);
    fe_mul(s2, b.y, a.z);
    fe_mul(s2, s2, z1z1);
    fe_mul(z, a.z, b.z);
    if (!gej_add_on_common_z(r, a, u1, s1, u2, s2, h)) return;
    fe_mul(r.z, z, h);
}

// Affine form of a (one inversion).
SV_HD void ge_set_gej(Ge& r, const Gej& a) {
    if (a.infinity) {
        r.x = fe_zero();
        r.y = fe_zero();
        r.infinity = true;
        return;
    }
    Fe zi, zi2, zi3;
    fe_inv(zi, a.z);
    fe_sqr(zi2, zi);
    fe_mul(zi3, zi2, zi);
    fe_mul(r.x, a.x, zi2);
    fe_mul(r.y, a.y, zi3);
    r.infinity = false;
}

// X / Z^2 == x, without an inversion. a must not be infinity.
SV_HD bool gej_eq_x(const Gej& a, const Fe& x) {
    Fe z2, t;
    fe_sqr(z2, a.z);
    fe_mul(t, x, z2);
    return fe_equal(t, a.x);
}

}  // namespace sigverify::kernels
