// SPDX-License-Identifier: MIT
// The grouping fields of a row and the verdict of one group: what the
// library's public group calls (sigverify/groups.hpp) and the reference's
// rules (reference/group_verdicts.hpp, where the rules are stated) both
// speak, so they are one type and a verdict passes between them unchanged.
// Installed with the ring ABI headers; no logic here but the byte codec of
// the canonical group tail.
#pragma once

#include <cstdint>

#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify {

enum class GroupKind : std::uint8_t { multisig = 0, threshold = 1 };

// The grouping fields of one row (the multisig and threshold tables' tail,
// or libbitcoin's ECDSA correlate).
struct GroupRow {
    std::uint8_t mn = 0;         // multisig: the pair byte (signature, key); threshold: m
    std::uint16_t group = 0;     // group number within the block
    std::uint32_t block_fk = 0;  // 24 bits; 0xFFFFFF = being written
};

// The canonical tail of the multisig and threshold tables (MultisigRow,
// ThresholdRow): mn || group u16le || block_fk u24le. The one reader and
// writer of its bytes; every decoder of a grouped row goes through them.
inline GroupRow read_group_tail(const std::uint8_t* tail) {
    return {tail[0], wire::read_u16le(tail + 1), wire::read_u24le(tail + 3)};
}
inline void write_group_tail(std::uint8_t* tail, const GroupRow& g) {
    tail[0] = g.mn;
    wire::write_u16le(tail + 1, g.group);
    wire::write_u24le(tail + 3, g.block_fk);
}

// Why a group failed, beyond "not enough verified rows" (bit flags of
// GroupVerdict::flags).
enum GroupFlag : std::uint8_t {
    kGroupUnmatched = 1,      // multisig: some signature found no usable key in order
    kGroupDuplicates = 2,     // multisig: some mn appears on more than one row
    kGroupInconsistentM = 4,  // threshold: rows disagree on m
    kGroupZeroM = 8,          // threshold: m = 0
    kGroupShort = 16,         // threshold: fewer than m rows present
    kGroupFailedRow = 32,     // threshold: some row did not verify (BIP-342: the script fails)
};

struct GroupVerdict {
    std::uint32_t block_fk = 0;
    std::uint16_t group = 0;
    bool pass = false;
    std::uint32_t rows = 0;        // rows in the group
    std::uint32_t valid_rows = 0;  // of which verified
    std::uint32_t required = 0;    // m (multisig: inferred; threshold: the first row's mn)
    std::uint8_t flags = 0;        // GroupFlag bits
    friend bool operator==(const GroupVerdict&, const GroupVerdict&) = default;
};

}  // namespace sigverify
