// SPDX-License-Identifier: MIT
// 256-bit big-endian byte arithmetic for building edge-case scalars and
// coordinates in tests (n + 1, p + r, ...).
#pragma once

#include <array>
#include <cstdint>

#include <catch2/catch.hpp>

namespace sigverify::test {

// a + b with no reduction; REQUIREs that the sum stays below 2^256.
inline std::array<std::uint8_t, 32> add_be(const std::array<std::uint8_t, 32>& a,
                                           const std::array<std::uint8_t, 32>& b) {
    std::array<std::uint8_t, 32> r{};
    unsigned carry = 0;
    for (int i = 31; i >= 0; --i) {
        const unsigned s = unsigned(a[i]) + b[i] + carry;
        r[i] = static_cast<std::uint8_t>(s);
        carry = s >> 8;
    }
    REQUIRE(carry == 0);
    return r;
}

}  // namespace sigverify::test
