// SPDX-License-Identifier: MIT
// The GPU kernel's field arithmetic mod p = 2^256 - 2^32 - 977 on eight 32-bit
// limbs (little-endian), built for the GPU's 32-bit multipliers and carry
// flags.
//
// Invariant: an Fe32 is "weakly reduced": any value < 2^256, congruent to
// the element it stands for; not necessarily < p. Only fe32_normalize gives
// the canonical value (< p), and every comparison, parity test and output
// goes through it. mul/sqr/add/sub/half are the generated carry-chain
// sequences of generated/fe32_ops.hpp (one instruction list for device and host).
//
// Nothing here branches on data: the square root is a fixed addition chain,
// the inversion a fixed count of divsteps, selections are masks.
#pragma once

#include "kernels/generated/fe32_ops.hpp"
#include "kernels/field.hpp"
#include "kernels/safegcd32.hpp"

namespace sigverify::kernels {

struct Fe32 {
    u32 v[8];
};

SV_HD Fe32 fe32_zero() { return Fe32{{0, 0, 0, 0, 0, 0, 0, 0}}; }
SV_HD Fe32 fe32_one() { return Fe32{{1, 0, 0, 0, 0, 0, 0, 0}}; }

SV_HD void fe32_mul(Fe32& r, const Fe32& a, const Fe32& b) {
    SV_COUNT_OP(fe_mul);
    fe32_mul_limbs(r.v, a.v, b.v);
}
SV_HD void fe32_sqr(Fe32& r, const Fe32& a) {
    SV_COUNT_OP(fe_sqr);
    fe32_sqr_limbs(r.v, a.v);
}
SV_HD void fe32_add(Fe32& r, const Fe32& a, const Fe32& b) { fe32_add_limbs(r.v, a.v, b.v); }
SV_HD void fe32_sub(Fe32& r, const Fe32& a, const Fe32& b) { fe32_sub_limbs(r.v, a.v, b.v); }
SV_HD void fe32_half(Fe32& r, const Fe32& a) { fe32_half_limbs(r.v, a.v); }
SV_HD void fe32_neg(Fe32& r, const Fe32& a) { fe32_sub(r, fe32_zero(), a); }

// r = a if mask == 0, b if mask == ~0 (no branch).
SV_HD void fe32_select(Fe32& r, const Fe32& a, const Fe32& b, u32 mask) {
    SV_UNROLL
    for (int i = 0; i < 8; ++i) r.v[i] = a.v[i] ^ ((a.v[i] ^ b.v[i]) & mask);
}

// r = -a if mask == ~0, a if mask == 0.
SV_HD void fe32_cneg(Fe32& r, const Fe32& a, u32 mask) {
    Fe32 n;
    fe32_neg(n, a);
    fe32_select(r, a, n, mask);
}

// The canonical value (< p): a < 2^256 < 2p, so one conditional subtraction,
// done as "a + (2^256 - p) overflows".
SV_HD void fe32_normalize(Fe32& r, const Fe32& a) {
    u32 t[8];
    u64 acc = u64(a.v[0]) + 977u;
    t[0] = u32(acc);
    acc = u64(a.v[1]) + 1u + (acc >> 32);
    t[1] = u32(acc);
    SV_UNROLL
    for (int i = 2; i < 8; ++i) {
        acc = u64(a.v[i]) + (acc >> 32);
        t[i] = u32(acc);
    }
    const u32 mask = 0u - u32(acc >> 32);  // all ones when a >= p
    SV_UNROLL
    for (int i = 0; i < 8; ++i) r.v[i] = a.v[i] ^ ((a.v[i] ^ t[i]) & mask);
}

// All ones when a == 0 (mod p), else 0.
SV_HD u32 fe32_zero_mask(const Fe32& a) {
    Fe32 n;
    fe32_normalize(n, a);
    u32 any = 0;
    SV_UNROLL
    for (int i = 0; i < 8; ++i) any |= n.v[i];
    return 0u - u32(any == 0);
}

SV_HD bool fe32_is_zero(const Fe32& a) { return fe32_zero_mask(a) != 0; }

SV_HD bool fe32_equal(const Fe32& a, const Fe32& b) {
    Fe32 d;
    fe32_sub(d, a, b);
    return fe32_is_zero(d);
}

SV_HD bool fe32_is_odd(const Fe32& a) {
    Fe32 n;
    fe32_normalize(n, a);
    return (n.v[0] & 1u) != 0;
}

// Conversions with the 64-bit-limb field of field.hpp (same little-endian
// bits; Fe values are always < p).
SV_HD Fe32 fe32_from_fe(const Fe& a) {
    Fe32 r;
    SV_UNROLL
    for (int i = 0; i < 4; ++i) {
        r.v[2 * i] = u32(a.v[i]);
        r.v[2 * i + 1] = u32(a.v[i] >> 32);
    }
    return r;
}

SV_HD Fe fe_from_fe32(const Fe32& a) {
    Fe32 n;
    fe32_normalize(n, a);
    Fe r;
    SV_UNROLL
    for (int i = 0; i < 4; ++i) r.v[i] = u64(n.v[2 * i]) | (u64(n.v[2 * i + 1]) << 32);
    return r;
}

// Reads 32 big-endian bytes; false when the value is >= p.
SV_HD bool fe32_set_b32(Fe32& r, const u8* b) {
    Fe f;
    const bool ok = fe_set_b32(f, b);
    r = fe32_from_fe(f);
    return ok;
}

SV_HD void fe32_sqr_n(Fe32& r, const Fe32& a, int n) {
    r = a;
    SV_NO_UNROLL
    for (int i = 0; i < n; ++i) fe32_sqr(r, r);
}

// The names the generic addition chains of field.hpp and point_add.hpp call.
SV_HD void fe_mul(Fe32& r, const Fe32& a, const Fe32& b) { fe32_mul(r, a, b); }
SV_HD void fe_sub(Fe32& r, const Fe32& a, const Fe32& b) { fe32_sub(r, a, b); }
SV_HD void fe_sqr(Fe32& r, const Fe32& a) { fe32_sqr(r, a); }
SV_HD void fe_sqr_n(Fe32& r, const Fe32& a, int n) { fe32_sqr_n(r, a, n); }

// The products of a row's once-per-row code as real calls on the device: one
// copy of the product, of the square and of a run of squarings in the machine
// code for all their call sites instead of one a site (the table's first
// entries, zg's powers, the lift of x, the square root's chain, the final
// checks, the table build's additions; not the ladder). Arguments and result in
// registers.
SV_HD_NOINLINE Fe32 fe32_mul_call(Fe32 a, Fe32 b) {
    Fe32 r;
    fe32_mul(r, a, b);
    return r;
}
SV_HD_NOINLINE Fe32 fe32_sqr_call(Fe32 a) {
    Fe32 r;
    fe32_sqr(r, a);
    return r;
}
SV_HD_NOINLINE Fe32 fe32_sqr_n_call(Fe32 a, int n) {
    Fe32 r;
    fe32_sqr_n(r, a, n);
    return r;
}
// An Fe32 whose fe_mul / fe_sqr / fe_sqr_n (the names field.hpp's addition
// chains call) are those real calls: the square root's chain runs on it.
struct Fe32Chain {
    Fe32 f;
};
SV_HD void fe_sqr_n(Fe32Chain& r, const Fe32Chain& a, int n) { r.f = fe32_sqr_n_call(a.f, n); }
SV_HD void fe_sub(Fe32Chain& r, const Fe32Chain& a, const Fe32Chain& b) { fe32_sub(r.f, a.f, b.f); }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
// sm_120 (168 registers): with the chain's products as calls too the kernel
// needs a 48-byte stack frame; there only the squaring runs are calls.
SV_HD void fe_mul(Fe32Chain& r, const Fe32Chain& a, const Fe32Chain& b) { fe32_mul(r.f, a.f, b.f); }
SV_HD void fe_sqr(Fe32Chain& r, const Fe32Chain& a) { fe32_sqr(r.f, a.f); }
#else
SV_HD void fe_mul(Fe32Chain& r, const Fe32Chain& a, const Fe32Chain& b) { r.f = fe32_mul_call(a.f, b.f); }
SV_HD void fe_sqr(Fe32Chain& r, const Fe32Chain& a) { r.f = fe32_sqr_call(a.f); }
#endif

// 1/a mod p by divsteps (safegcd32.hpp; 0 maps to 0), from the canonical
// value. A real call on the device (argument and result in registers): once
// per block in the BIP-340 parity step (gpu_verifier.cu's parity_kernel), or
// once a row whose x matched where the placement leaves no global scratch
// to park Y and Z. It replaced the addition chain a^(p-2) (255 squarings
// and 15 products).
SV_HD_NOINLINE Fe32 fe32_inv(Fe32 a) {
    Fe32 n, r;
    fe32_normalize(n, a);
    // rolled divsteps: BIP-340's 1/Z is one inversion a block (the parity
    // kernel), so its code size matters more than its ~1,200 more steps
    safegcd_inverse<true>(r.v, n.v, modulus30_p());
    return r;
}

// root = a^((p+1)/4); is_square when root^2 == a. A real call on the device.
struct Fe32Root {
    Fe32 root;
    u32 is_square;
};
SV_HD_NOINLINE Fe32Root fe32_sqrt(Fe32 a) {
    Fe32Chain x246, x2, r;
    fe_chain_246(x246, x2, Fe32Chain{a});
    fe_chain_sqrt_tail(r, x246, x2);
    const Fe32 t = fe32_sqr_call(r.f);
    return Fe32Root{r.f, u32(fe32_equal(t, a))};
}

// beta (a cube root of unity mod p; lambda (x, y) = (beta x, y)).
SV_HD Fe32 fe32_beta() { return fe32_from_fe(fe_beta()); }

}  // namespace sigverify::kernels
