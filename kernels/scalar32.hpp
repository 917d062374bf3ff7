// SPDX-License-Identifier: MIT
// The GPU kernel's scalar helpers mod n: the product through the generated
// 32-bit carry-chain sequence (generated/fe32_ops.hpp: multiply and reduce mod n), the
// divsteps inversion (safegcd32.hpp), and halving. Scalars stay Sc (four 64-bit
// limbs, fully reduced) so that parsing and the GLV split are shared with the
// exact path.
#pragma once

#include "kernels/generated/fe32_ops.hpp"
#include "kernels/safegcd32.hpp"
#include "kernels/scalar.hpp"

namespace sigverify::kernels {

// A scalar as the eight 32-bit words (little-endian) the generated
// sequences and the divsteps take, and back.
SV_HD void sc32_to_words(u32 w[8], const Sc& a) {
    SV_UNROLL
    for (int i = 0; i < 4; ++i) {
        w[2 * i] = u32(a.v[i]);
        w[2 * i + 1] = u32(a.v[i] >> 32);
    }
}
SV_HD Sc sc32_from_words(const u32 w[8]) {
    Sc a;
    SV_UNROLL
    for (int i = 0; i < 4; ++i) a.v[i] = u64(w[2 * i]) | (u64(w[2 * i + 1]) << 32);
    return a;
}

SV_HD void sc32_mul(Sc& r, const Sc& a, const Sc& b) {
    SV_COUNT_OP(sc_mul);
    u32 a32[8], b32[8], t32[8];
    sc32_to_words(a32, a);
    sc32_to_words(b32, b);
    sc32_mul_limbs(t32, a32, b32);
    r = sc32_from_words(t32);
}

// sc32_mul as a real call on the device (one copy of the product for the
// batch inversion's tree and a row's two products by 1/s).
SV_HD_NOINLINE Sc sc32_mul_call(Sc a, Sc b) {
    Sc r;
    sc32_mul(r, a, b);
    return r;
}

// sc_split_lambda (scalar.hpp) with the kernel's product mod n (the
// generated 32-bit one, ~310 SASS instructions, instead of the 64-bit
// mul_wide and sc_reduce512 of the exact path: about twice that). Its three
// products stay inline: as real calls they made the 128-register builds spill
// (the recoding's other values live across them).
SV_HD void sc32_split_lambda(Sc& k1, Sc& k2, const Sc& k) {
    sc_split_lambda_with(
        k1, k2, k,
        [](const Sc& a, const Sc& b) {
            Sc r;
            sc32_mul(r, a, b);
            return r;
        },
        [](const Sc& a, const Sc& g) { return sc_mul_shift384(a, g); });
}

// 1/a mod n by divsteps (safegcd32.hpp; 0 maps to 0). A real call on the
// device (argument and result in registers): once per ECDSA row. It
// replaced a 336-product addition chain for a^(n-2) (~103k thread-
// instructions a row).
SV_HD_NOINLINE Sc sc32_inv(Sc a) {
    u32 w[8], r[8];
    sc32_to_words(w, a);
    safegcd_inverse(r, w, modulus30_n());
    return sc32_from_words(r);
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
