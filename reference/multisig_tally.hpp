// SPDX-License-Identifier: MIT
// The multisig group rule, in one place: a group's rows tallied by their pair
// byte (multisig_pair.hpp) and verdict, and whether the group is satisfied.
// The reference's group verdicts (group_verdicts.cpp) and the daemon's
// confirmation rule (daemon/confirm/confirmation.cpp) both decide through this
// class: the confirmation rule is sound only while the two agree, so neither
// rebuilds the masks itself.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>

#include "reference/multisig_pair.hpp"

namespace sigverify::reference {

// Multisig rule on one group's pairs: usable[s] is the mask of keys k (bits
// 0..19) whose (s, k) pair is usable; m signatures are required (false when
// m exceeds usable.size() or 20). Greedy ordered matching (the smallest usable
// key after the previous one), which is optimal for a chain of increasing
// choices.
bool multisig_satisfied(std::span<const std::uint32_t> usable, unsigned m);

class MultisigTally {
public:
    // One row of the group: its pair byte and whether it verified. Returns
    // true when the group already had a row for the same (signature, key) pair.
    bool add(std::uint8_t pair_code, bool verified) {
        const MultisigPair p = decode_multisig_pair(pair_code);  // both indices < 20
        const auto bit = std::uint32_t(1u << p.key);
        const bool duplicate = (present_[p.signature] & bit) != 0;
        present_[p.signature] |= bit;
        if (!verified) {
            failed_[p.signature] |= bit;
            any_failed_ = true;
        }
        required_ = std::max(required_, p.signature + 1u);
        return duplicate;
    }
    // m: one more than the highest signature index seen.
    unsigned required() const { return required_; }
    bool any_failed() const { return any_failed_; }
    // Whether the group's usable pairs (present, not failed) satisfy m signatures.
    bool satisfied() const {
        std::uint32_t usable[kMaxMultisigKeys];
        for (unsigned s = 0; s < kMaxMultisigKeys; ++s) usable[s] = present_[s] & ~failed_[s];
        return multisig_satisfied(usable, required_);
    }

private:
    std::uint32_t present_[kMaxMultisigKeys] = {};
    std::uint32_t failed_[kMaxMultisigKeys] = {};
    unsigned required_ = 0;
    bool any_failed_ = false;
};

}  // namespace sigverify::reference
