// SPDX-License-Identifier: MIT
// Portability layer of the kernel math: one source for g++ (host tests, CPU
// use) and nvcc (device code).
//
// SV_HD marks every math function: __host__ __device__ under nvcc, plain
// inline for a host compiler. The only primitive that differs between host and
// device is the 64x64->128 multiply (mul64): the device uses __umul64hi, the
// host unsigned __int128. mul64_portable is the twin both must agree with bit
// for bit; the host tests compare all three definitions.
#pragma once

#include <cstdint>

// SV_HD_NOINLINE marks the once-per-row subroutines (inversions, square
// root, the products of the once-per-row code): on the device they stay real calls with
// arguments and results in registers, which keeps them out of the ladder's
// code and cuts nvcc's compile time.
#if defined(__CUDACC__)
#define SV_HD __host__ __device__ __forceinline__
#define SV_HD_NOINLINE __host__ __device__ __noinline__
#else
#define SV_HD inline
#define SV_HD_NOINLINE inline
#endif

// SV_NO_UNROLL keeps a loop rolled on the device (nvcc unrolls loops with a
// constant trip count, which multiplies the GPU kernel's code size).
#if defined(__CUDA_ARCH__)
#define SV_NO_UNROLL _Pragma("unroll 1")
#else
#define SV_NO_UNROLL
#endif

#if defined(__CUDA_ARCH__)
#define SV_UNROLL _Pragma("unroll")
#elif defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define SV_UNROLL _Pragma("GCC unroll 16")
#else
#define SV_UNROLL
#endif

// SV_COUNT_FIELD_OPS (host only, for tests/kernels/kernel_opcount.cpp):
// counts field and scalar multiplications per thread, the unit of cost that
// carries over to the GPU.
#if defined(SV_COUNT_FIELD_OPS) && !defined(__CUDA_ARCH__)
namespace sigverify::kernels {
struct OpCounts {
    unsigned long long fe_mul = 0, fe_sqr = 0, sc_mul = 0;
};
inline thread_local OpCounts g_op_counts;
}  // namespace sigverify::kernels
#define SV_COUNT_OP(field) (++::sigverify::kernels::g_op_counts.field)
#else
#define SV_COUNT_OP(field) ((void)0)
#endif

namespace sigverify::kernels {

using u64 = std::uint64_t;
using u32 = std::uint32_t;
using u8 = std::uint8_t;

#if defined(__SIZEOF_INT128__)
__extension__ typedef unsigned __int128 u128_host;
#define SV_HAVE_INT128 1
#endif

// 64x64 -> 128 from 32-bit halves: no compiler extension, no intrinsic.
SV_HD void mul64_portable(u64 a, u64 b, u64& lo, u64& hi) {
    const u64 a0 = a & 0xffffffffu, a1 = a >> 32;
    const u64 b0 = b & 0xffffffffu, b1 = b >> 32;
    const u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    const u64 mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    lo = (mid << 32) | (p00 & 0xffffffffu);
    hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

// SV_HOST_DEVICE_FORM: a host build that uses the device's arithmetic forms
// (the 32-bit-halves multiply standing in for __umul64hi, and the carry-chain
// accumulator), so whole test suites run the device's arithmetic on the CPU.
//
// The multiply the math uses.
SV_HD void mul64(u64 a, u64 b, u64& lo, u64& hi) {
#if defined(SV_HOST_DEVICE_FORM) && !defined(__CUDA_ARCH__)
    mul64_portable(a, b, lo, hi);
#elif defined(__CUDA_ARCH__)
    lo = a * b;
    hi = __umul64hi(a, b);
#elif defined(SV_HAVE_INT128)
    const u128_host p = u128_host(a) * b;
    lo = u64(p);
    hi = u64(p >> 64);
#else
    mul64_portable(a, b, lo, hi);
#endif
}

// s = a + b + cin, returns the carry out (0 or 1). cin must be 0 or 1.
SV_HD u64 addc(u64 a, u64 b, u64 cin, u64& s) {
    const u64 t = a + b;
    const u64 c1 = t < a;
    const u64 r = t + cin;
    const u64 c2 = r < t;
    s = r;
    return c1 | c2;
}

// d = a - b - bin, returns the borrow out (0 or 1). bin must be 0 or 1.
SV_HD u64 subb(u64 a, u64 b, u64 bin, u64& d) {
    const u64 t = a - b;
    const u64 b1 = a < b;
    const u64 r = t - bin;
    const u64 b2 = t < bin;
    d = r;
    return b1 | b2;
}

// Three-word accumulator (c0 low) used by the column-wise products. Two
// definitions with identical results: AccCarry builds the carries from
// 64-bit additions (the device's form), AccWide uses unsigned __int128 (the
// host's form; g++ turns it into add/adc chains). The host tests run the
// products with both and compare them bit for bit.
struct AccCarry {
    u64 c0 = 0, c1 = 0, c2 = 0;

    // Adds hi * 2^64 + lo: the one carry chain every other member runs.
    SV_HD void add_wide(u64 lo, u64 hi) {
        u64 c = addc(c0, lo, 0, c0);
        c = addc(c1, hi, c, c1);
        c2 += c;
    }
    SV_HD void mac(u64 a, u64 b) {
        u64 lo, hi;
        mul64(a, b, lo, hi);
        add_wide(lo, hi);
    }
    // Adds 2*a*b: one multiply, two additions.
    SV_HD void mac2(u64 a, u64 b) {
        u64 lo, hi;
        mul64(a, b, lo, hi);
        add_wide(lo, hi);
        add_wide(lo, hi);
    }
    SV_HD void add(u64 a) { add_wide(a, 0); }
    // Returns the low word and shifts the accumulator down by 64 bits.
    SV_HD u64 take() {
        const u64 r = c0;
        c0 = c1;
        c1 = c2;
        c2 = 0;
        return r;
    }
};

#if defined(SV_HAVE_INT128)
struct AccWide {
    u128_host lo = 0;  // c0 + c1 * 2^64
    u64 c2 = 0;

    // Adds t (< 2^128): the carry out of lo goes to c2.
    SV_HD void add_wide(u128_host t) {
        lo += t;
        c2 += lo < t;
    }
    SV_HD void mac(u64 a, u64 b) { add_wide(u128_host(a) * b); }
    SV_HD void mac2(u64 a, u64 b) {
        const u128_host t = u128_host(a) * b;
        add_wide(t);
        add_wide(t);
    }
    SV_HD void add(u64 a) { add_wide(a); }
    SV_HD u64 take() {
        const u64 r = u64(lo);
        lo = (lo >> 64) | (u128_host(c2) << 64);
        c2 = 0;
        return r;
    }
};
#endif

#if defined(__CUDA_ARCH__) || !defined(SV_HAVE_INT128) || defined(SV_HOST_DEVICE_FORM)
using Acc = AccCarry;
#else
using Acc = AccWide;
#endif

// The column loop of the products below: column k of the 512-bit result gets
// what column(acc, k) adds (every a_i * b_j with i + j = k), then its low word
// is taken and the rest carried into column k + 1.
template <class A, class Column>
SV_HD void product_columns(u64 r[8], Column column) {
    A acc;
    SV_UNROLL
    for (int k = 0; k < 7; ++k) {
        column(acc, k);
        r[k] = acc.take();
    }
    r[7] = acc.take();
}

// 256 x 256 -> 512 bit product, little-endian 64-bit limbs.
template <class A = Acc>
SV_HD void mul_256x256(u64 r[8], const u64 a[4], const u64 b[4]) {
    product_columns<A>(r, [&](A& acc, int k) {
        SV_UNROLL
        for (int i = 0; i < 4; ++i) {
            const int j = k - i;
            if (j >= 0 && j < 4) acc.mac(a[i], b[j]);
        }
    });
}

// 256-bit square: each cross product computed once and added twice.
template <class A = Acc>
SV_HD void sqr_256(u64 r[8], const u64 a[4]) {
    product_columns<A>(r, [&](A& acc, int k) {
        SV_UNROLL
        for (int i = 0; i < 4; ++i) {
            const int j = k - i;
            if (j > i && j < 4) acc.mac2(a[i], a[j]);
        }
        if ((k & 1) == 0 && k / 2 < 4) acc.mac(a[k / 2], a[k / 2]);
    });
}

// The 512-bit products of the 64-bit-limb field and scalar math (field.hpp,
// scalar.hpp: the exact path and the GLV split).
SV_HD void mul_wide(u64 r[8], const u64 a[4], const u64 b[4]) { mul_256x256(r, a, b); }
SV_HD void sqr_wide(u64 r[8], const u64 a[4]) { sqr_256(r, a); }

}  // namespace sigverify::kernels
