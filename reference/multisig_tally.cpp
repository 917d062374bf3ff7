// SPDX-License-Identifier: MIT
#include "reference/multisig_tally.hpp"

#include <bit>

namespace sigverify::reference {

bool multisig_satisfied(std::span<const std::uint32_t> usable, unsigned m) {
    if (m > usable.size() || m > kMaxMultisigKeys) return false;
    constexpr std::uint32_t kAllKeys = (1u << kMaxMultisigKeys) - 1;
    int previous = -1;  // key index used by the previous signature
    for (unsigned s = 0; s < m; ++s) {
        // Keys strictly after the previous one.
        const unsigned after = unsigned(previous + 1);
        const std::uint32_t allowed = after >= kMaxMultisigKeys ? 0u : (kAllKeys << after) & kAllKeys;
        const std::uint32_t candidates = usable[s] & allowed;
        if (candidates == 0) return false;
        previous = std::countr_zero(candidates);
    }
    return true;
}

}  // namespace sigverify::reference
