// SPDX-License-Identifier: MIT
// Kernel v2's scalar helpers mod n: the product through the generated
// 32-bit carry-chain sequence (fe32_ops.hpp: multiply and reduce mod n), a
// branch-free inversion chain, and halving. Scalars stay Sc (four 64-bit
// limbs, fully reduced) so that parsing and the GLV split are shared with v1.
#pragma once

#include "kernels/fe32_ops.hpp"
#include "kernels/scalar.hpp"

namespace sigverify::kernels {

SV_HD void sc32_mul(Sc& r, const Sc& a, const Sc& b) {
    SV_COUNT_OP(sc_mul);
    u32 a32[8], b32[8], t32[8];
    SV_UNROLL
    for (int i = 0; i < 4; ++i) {
        a32[2 * i] = u32(a.v[i]);
        a32[2 * i + 1] = u32(a.v[i] >> 32);
        b32[2 * i] = u32(b.v[i]);
        b32[2 * i + 1] = u32(b.v[i] >> 32);
    }
    sc32_mul_limbs(t32, a32, b32);
    SV_UNROLL
    for (int i = 0; i < 4; ++i) r.v[i] = u64(t32[2 * i]) | (u64(t32[2 * i + 1]) << 32);
}

SV_HD void sc32_sqr_n(Sc& r, const Sc& a, int n) {
    r = a;
    SV_NO_UNROLL
    for (int i = 0; i < n; ++i) sc32_mul(r, r, r);
}

// 1/a = a^(n-2) mod n (0 maps to 0). A real call on the device (argument
// and result in registers). n - 2 is 127 ones, a zero, then
// the 128 low bits below: a^(2^127 - 1) by doubling runs of ones, then
// square-and-multiply over the low half (the exponent is a constant, so
// every lane takes the same path).
SV_HD_NOINLINE Sc sc32_inv(Sc a) {
    Sc x2, x4, x8, x16, x32, x64, t;
    sc32_mul(t, a, a);
    sc32_mul(x2, t, a);
    sc32_sqr_n(t, x2, 2);
    sc32_mul(x4, t, x2);
    sc32_sqr_n(t, x4, 4);
    sc32_mul(x8, t, x4);
    sc32_sqr_n(t, x8, 8);
    sc32_mul(x16, t, x8);
    sc32_sqr_n(t, x16, 16);
    sc32_mul(x32, t, x16);
    sc32_sqr_n(t, x32, 32);
    sc32_mul(x64, t, x32);
    sc32_sqr_n(t, x64, 32);
    sc32_mul(t, t, x32);  // 96 ones
    sc32_sqr_n(t, t, 16);
    sc32_mul(t, t, x16);  // 112
    sc32_sqr_n(t, t, 8);
    sc32_mul(t, t, x8);  // 120
    sc32_sqr_n(t, t, 4);
    sc32_mul(t, t, x4);  // 124
    sc32_sqr_n(t, t, 2);
    sc32_mul(t, t, x2);  // 126
    sc32_mul(t, t, t);
    sc32_mul(t, t, a);   // 127
    sc32_mul(t, t, t);   // the zero bit
    SV_NO_UNROLL
    for (int i = 127; i >= 0; --i) {
        sc32_mul(t, t, t);
        const u64 word = i >= 64 ? kN1 : kN0 - 2;
        if ((word >> (i & 63)) & 1) sc32_mul(t, t, a);
    }
    return t;
}

// r = a / 2 mod n: a + (n if a is odd), shifted right by one.
SV_HD void sc_half(Sc& r, const Sc& a) {
    const u64 m = 0 - (a.v[0] & 1);
    u64 t[4];
    u64 c = addc(a.v[0], kN0 & m, 0, t[0]);
    c = addc(a.v[1], kN1 & m, c, t[1]);
    c = addc(a.v[2], kN2 & m, c, t[2]);
    c = addc(a.v[3], kN3 & m, c, t[3]);
    r.v[0] = (t[0] >> 1) | (t[1] << 63);
    r.v[1] = (t[1] >> 1) | (t[2] << 63);
    r.v[2] = (t[2] >> 1) | (t[3] << 63);
    r.v[3] = (t[3] >> 1) | (c << 63);
}

}  // namespace sigverify::kernels
