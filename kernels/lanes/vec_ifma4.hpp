// SPDX-License-Identifier: MIT
// The register layer of the 4-lane width: one 256-bit register of four
// 64-bit lanes, the IFMA and mask instructions in their AVX-512VL forms,
// under vec_ifma8.hpp's names (what fe52xn.hpp, groupn.hpp and
// ladder_ifma.hpp call). Only lanes_ifma4.cpp includes it: that file alone is
// compiled with -mavx512f -mavx512dq -mavx512ifma -mavx512vl. Masks stay
// __mmask8, their low four bits used.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

namespace sigverify::kernels::lanes {

struct VecIfma4 {
    using R = __m256i;
    static constexpr int N = 4;                          // 64-bit lanes
    static constexpr int N32 = 8;                        // 32-bit lanes
    static constexpr __mmask8 kAll = 0x0F;

    static R zero() { return _mm256_setzero_si256(); }
    static R set1(std::uint64_t x) { return _mm256_set1_epi64x(static_cast<long long>(x)); }
    static R lane_index() { return _mm256_set_epi64x(3, 2, 1, 0); }
    static R add(R a, R b) { return _mm256_add_epi64(a, b); }
    static R sub(R a, R b) { return _mm256_sub_epi64(a, b); }
    static R and_(R a, R b) { return _mm256_and_si256(a, b); }
    static R or_(R a, R b) { return _mm256_or_si256(a, b); }
    static R srli(R a, int k) { return _mm256_srli_epi64(a, k); }
    static R slli(R a, int k) { return _mm256_slli_epi64(a, k); }
    static R mullo(R a, R b) { return _mm256_mullo_epi64(a, b); }
    static R madd52lo(R acc, R a, R b) { return _mm256_madd52lo_epu64(acc, a, b); }
    static R madd52hi(R acc, R a, R b) { return _mm256_madd52hi_epu64(acc, a, b); }
    static __mmask8 test(R a, R b) { return _mm256_test_epi64_mask(a, b); }
    static __mmask8 is_zero(R a) { return _mm256_cmpeq_epi64_mask(a, _mm256_setzero_si256()); }
    static R blend(__mmask8 m, R a, R b) { return _mm256_mask_blend_epi64(m, a, b); }  // b where m
    static R load(const void* p) { return _mm256_load_si256(static_cast<const __m256i*>(p)); }  // 32-byte aligned
    static void store(void* p, R a) { _mm256_store_si256(static_cast<__m256i*>(p), a); }
    static R gather(const std::uint64_t* base, R index) {
        return _mm256_i64gather_epi64(reinterpret_cast<const long long*>(base), index, 8);
    }
    // Four bytes, one per lane.
    static R load_bytes(const std::uint8_t* d) {
        std::uint32_t w;
        std::memcpy(&w, d, 4);
        return _mm256_cvtepu8_epi64(_mm_cvtsi32_si128(static_cast<int>(w)));
    }

    // 32-bit lanes (the challenge hash: eight messages fill a register).
    static R set1_32(std::uint32_t x) { return _mm256_set1_epi32(static_cast<int>(x)); }
    static R add32(R a, R b) { return _mm256_add_epi32(a, b); }
    static R ror32(R x, int n) { return _mm256_or_si256(_mm256_srli_epi32(x, n), _mm256_slli_epi32(x, 32 - n)); }
    static R srli32(R x, int n) { return _mm256_srli_epi32(x, n); }
    static R xor3(R a, R b, R c) { return _mm256_ternarylogic_epi32(a, b, c, 0x96); }
    static R choose(R e, R f, R g) { return _mm256_ternarylogic_epi32(e, f, g, 0xCA); }  // e ? f : g
    static R majority(R a, R b, R c) { return _mm256_ternarylogic_epi32(a, b, c, 0xE8); }
};

}  // namespace sigverify::kernels::lanes
