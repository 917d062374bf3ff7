// SPDX-License-Identifier: MIT
// The multisig pair byte: which signature of a CHECKMULTISIG group a row tries
// against which key. It is the `mn` byte of the multisig row tail and the
// `pair` byte of libbitcoin's ECDSA correlate.
//
// libbitcoin packs it as two nibbles, signature index << 4 | key index, and
// writes only the band its expansion produces: signature s against keys
// s .. s + (n - m), so always key >= signature. It captures groups of at most
// 16 keys (larger ones it verifies inline), so the nibbles suffice for it.
// CHECKMULTISIG allows 20 keys. The extension below carries keys 16..19 (and
// with them signatures 16..19) in the same byte without changing any code
// libbitcoin writes:
//
//   * key >= signature, both <= 15: s << 4 | k, unchanged ("ascending" codes:
//     high nibble <= low nibble);
//   * key 16..19, signature 0..11:  (12 + (k - 16)) << 4 | s   (0xC0..0xFB);
//   * key 16..19, signature 12..k:  (4 + (s - 12)) << 4 | (k - 16)  (0x40..0xB3).
//
// The extension uses only "descending" codes (high nibble > low nibble),
// which under the nibble reading name a signature tried against a key BEFORE
// its own index; CHECKMULTISIG can never use such an attempt (signature s
// needs s keys before its own), so libbitcoin's band never writes them. Of
// the 120 descending codes, 74 carry the extension; the other 46 keep their
// nibble reading (a dead attempt that still counts toward m). A reader that
// knows only nibbles must not be given groups of more than 16 keys.
#pragma once

#include <cstdint>
#include <optional>

namespace sigverify::reference {

constexpr unsigned kMaxMultisigKeys = 20;  // CHECKMULTISIG's limit (MAX_PUBKEYS_PER_MULTISIG)

struct MultisigPair {
    std::uint8_t signature = 0;  // 0-based signature index
    std::uint8_t key = 0;        // 0-based key index
    friend constexpr bool operator==(const MultisigPair&, const MultisigPair&) = default;
};

// The byte for signature s tried against key k: every key >= s with k < 20;
// nothing for an attempt CHECKMULTISIG could never use (k < s) or indices
// out of range.
constexpr std::optional<std::uint8_t> encode_multisig_pair(unsigned s, unsigned k) {
    if (k >= kMaxMultisigKeys || s > k) return std::nullopt;
    if (k < 16) return std::uint8_t(s << 4 | k);
    if (s < 12) return std::uint8_t((12 + (k - 16)) << 4 | s);
    return std::uint8_t((4 + (s - 12)) << 4 | (k - 16));
}

// Every byte has a reading: the extension's codes their pair, every other
// byte its two nibbles.
constexpr MultisigPair decode_multisig_pair(std::uint8_t code) {
    const unsigned hi = code >> 4, lo = code & 15;
    if (hi > lo) {
        if (hi >= 12 && lo < 12) return {std::uint8_t(lo), std::uint8_t(16 + hi - 12)};
        if (hi >= 4 && hi < 12 && lo < 4 && 12 + (hi - 4) <= 16 + lo)
            return {std::uint8_t(12 + hi - 4), std::uint8_t(16 + lo)};
    }
    return {std::uint8_t(hi), std::uint8_t(lo)};
}

}  // namespace sigverify::reference
