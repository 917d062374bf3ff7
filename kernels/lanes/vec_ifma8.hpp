// SPDX-License-Identifier: MIT
// The register layer of the 8-lane width: one 512-bit AVX-512 register of
// eight 64-bit lanes, under the names every lanes header calls (fe52xn.hpp,
// groupn.hpp, ladder_ifma.hpp; vec_ifma4.hpp has the same names for 256-bit
// registers). Only lanes_ifma8.cpp includes it: that file alone is compiled
// with -mavx512f -mavx512dq -mavx512ifma.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace sigverify::kernels::lanes {

struct VecIfma8 {
    using R = __m512i;
    static constexpr int N = 8;                          // 64-bit lanes
    static constexpr int N32 = 16;                       // 32-bit lanes
    static constexpr __mmask8 kAll = 0xFF;

    static R zero() { return _mm512_setzero_si512(); }
    static R set1(std::uint64_t x) { return _mm512_set1_epi64(static_cast<long long>(x)); }
    static R lane_index() { return _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0); }
    static R add(R a, R b) { return _mm512_add_epi64(a, b); }
    static R sub(R a, R b) { return _mm512_sub_epi64(a, b); }
    static R and_(R a, R b) { return _mm512_and_si512(a, b); }
    static R or_(R a, R b) { return _mm512_or_si512(a, b); }
    static R srli(R a, int k) { return _mm512_srli_epi64(a, static_cast<unsigned>(k)); }
    static R slli(R a, int k) { return _mm512_slli_epi64(a, static_cast<unsigned>(k)); }
    static R mullo(R a, R b) { return _mm512_mullo_epi64(a, b); }
    static R madd52lo(R acc, R a, R b) { return _mm512_madd52lo_epu64(acc, a, b); }
    static R madd52hi(R acc, R a, R b) { return _mm512_madd52hi_epu64(acc, a, b); }
    static __mmask8 test(R a, R b) { return _mm512_test_epi64_mask(a, b); }
    static __mmask8 is_zero(R a) { return _mm512_cmpeq_epi64_mask(a, _mm512_setzero_si512()); }
    static R blend(__mmask8 m, R a, R b) { return _mm512_mask_blend_epi64(m, a, b); }  // b where m
    static R load(const void* p) { return _mm512_load_si512(p); }                   // 64-byte aligned
    static void store(void* p, R a) { _mm512_store_si512(p, a); }
    static R gather(const std::uint64_t* base, R index) { return _mm512_i64gather_epi64(index, base, 8); }
    // Eight bytes, one per lane.
    static R load_bytes(const std::uint8_t* d) {
        return _mm512_cvtepu8_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(d)));
    }

    // 32-bit lanes (the challenge hash).
    static R set1_32(std::uint32_t x) { return _mm512_set1_epi32(static_cast<int>(x)); }
    static R add32(R a, R b) { return _mm512_add_epi32(a, b); }
    static R ror32(R x, int n) {
        return _mm512_or_si512(_mm512_srli_epi32(x, static_cast<unsigned>(n)), _mm512_slli_epi32(x, static_cast<unsigned>(32 - n)));
    }
    static R srli32(R x, int n) { return _mm512_srli_epi32(x, static_cast<unsigned>(n)); }
    static R xor3(R a, R b, R c) { return _mm512_ternarylogic_epi32(a, b, c, 0x96); }
    static R choose(R e, R f, R g) { return _mm512_ternarylogic_epi32(e, f, g, 0xCA); }  // e ? f : g
    static R majority(R a, R b, R c) { return _mm512_ternarylogic_epi32(a, b, c, 0xE8); }
};

}  // namespace sigverify::kernels::lanes
