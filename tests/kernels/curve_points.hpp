// SPDX-License-Identifier: MIT
// Curve points and forged keys for the kernel tests' hand-built rows
// (test_kernel_parse, test_kernel_verify), on the exact path's plain
// arithmetic so the point under test never comes from the code under test's
// fast paths.
#pragma once

#include <array>
#include <cstdint>

#include <catch2/catch.hpp>

#include "kernels/exact_verify.hpp"
#include "kernels/kernel_math.hpp"
#include "support/be256.hpp"

namespace sigverify::kernel_test {

// Affine a * P + b * G (the exact path's plain double-and-add).
inline kernels::Ge lin(const kernels::Ge& p, const kernels::Sc& a, const kernels::Sc& b) {
    kernels::Gej r;
    kernels::ecmult_simple(r, p, a, b);
    kernels::Ge out;
    kernels::ge_set_gej(out, r);
    return out;
}

// A key for which (r, s) is a valid ECDSA signature of z with nonce point R,
// whatever R is: P = r^-1 (s R - z G).
inline kernels::Ge forge_key_for(const kernels::Ge& R, const kernels::Sc& r, const kernels::Sc& s,
                                 const kernels::Sc& z) {
    kernels::Sc rinv, a, b;
    rinv = kernels::sc32_inv(r);
    kernels::sc_mul(a, s, rinv);  // s / r  times R
    kernels::sc_mul(b, z, rinv);
    kernels::sc_neg(b, b);        // -z / r  times G
    return lin(R, a, b);
}

// The first point whose x is start + t, t = 0, 1, ... (even y).
inline kernels::Ge point_with_x_from(std::array<std::uint8_t, 32> start) {
    std::array<std::uint8_t, 32> one{};
    one[31] = 1;
    for (int t = 0; t < 1000; ++t) {
        kernels::Fe x;
        REQUIRE(kernels::fe_set_b32(x, start.data()));
        kernels::Ge p;
        if (kernels::ge_set_xo(p, x, false)) return p;
        start = test::add_be(start, one);
    }
    FAIL("no point found");
    return kernels::Ge{};
}

// A scalar's 32 big-endian bytes.
inline std::array<std::uint8_t, 32> sc_bytes(const kernels::Sc& s) {
    std::array<std::uint8_t, 32> b{};
    kernels::sc_get_b32(b.data(), s);
    return b;
}

}  // namespace sigverify::kernel_test
