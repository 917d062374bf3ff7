// SPDX-License-Identifier: MIT
// Test rows for the libbitcoin hook with verdicts known without any verifier
// of the product: batch_check.hpp's known rows (valid, invalid by a flipped
// hash bit, a flipped r bit or s = 0; ECDSA high-S, valid) plus bad
// encodings that are invalid by definition: an ECDSA key prefix that is not
// 02/03, a key x >= p, s >= n; a Schnorr x-only key >= p, R.x >= p, s >= n.
// The tables are also checked against libsecp256k1 (reference::ColumnVerifier)
// by the tests, so the expectations are twice sure.
#pragma once

#include <cstring>

#include "batch_check.hpp"
#include "call_site.hpp"
#include "reference/columns.hpp"

namespace sigverify::test {

// Rows i with i % 7 == 5 that are valid so far get a bad encoding.
inline bool bad_encoding_index(std::size_t i) { return i % 7 == 5 && !known_invalid_index(i); }

inline void spoil_encoding(wire::RecordKind kind, std::size_t i, std::uint8_t* key, std::uint8_t* sig) {
    const bool ecdsa = kind == wire::RecordKind::ecdsa;
    switch ((i / 7) % 3) {
    case 0:
        if (ecdsa)
            key[0] = 0x05;                   // not a compressed key's prefix
        else
            std::memset(key, 0xFF, 32);      // x-only key >= p
        break;
    case 1:
        if (ecdsa)
            std::memset(key + 1, 0xFF, 32);  // x >= p
        else
            std::memset(sig, 0xFF, 32);      // R.x >= p
        break;
    default:
        std::memset(sig + 32, 0xFF, 32);     // s = 2^256 - 1 >= n (either byte order)
        break;
    }
}

inline void fill_table(wire::Table table, std::size_t n, std::uint64_t seed, std::vector<std::uint8_t>& digest,
                       std::vector<std::uint8_t>& key, std::vector<std::uint8_t>& signature,
                       std::vector<std::uint8_t>& expected) {
    KnownRows k = make_known_rows(table, n, wire::SigEncoding::opaque, seed);
    const wire::RowSpan span = span_of(table, wire::SigEncoding::opaque, k.rows, n);
    reference::ColumnTable c = reference::rows_to_columns(span, reference::CorrelateLayout::none);
    const std::size_t kw = wire::column_key_width(span.kind);
    for (std::size_t i = 0; i < n; ++i)
        if (bad_encoding_index(i)) {
            spoil_encoding(span.kind, i, c.key.data() + i * kw, c.signature.data() + i * 64);
            k.expected[i] = 0;
        }
    digest = std::move(c.message);
    key = std::move(c.key);
    signature = std::move(c.signature);
    expected = std::move(k.expected);
}

// ECDSA and Schnorr tables of n rows each. all_valid: no invalid row at all
// (only the valid and high-S kinds), for the all-valid fast paths.
inline lbtc_call_site::Tables make_tables(std::size_t n, std::uint64_t seed, bool all_valid = false) {
    lbtc_call_site::Tables t;
    fill_table(wire::Table::ecdsa, n, seed, t.ecdsa_digest, t.ecdsa_key, t.ecdsa_signature, t.ecdsa_expected);
    fill_table(wire::Table::schnorr, n, seed + 1, t.schnorr_digest, t.schnorr_key, t.schnorr_signature,
               t.schnorr_expected);
    if (all_valid) {
        // Replace every invalid row by a valid one of the same table (row 0 is always valid).
        auto fix = [](std::vector<std::uint8_t>& d, std::vector<std::uint8_t>& k, std::vector<std::uint8_t>& s,
                      std::vector<std::uint8_t>& e, std::size_t kw) {
            for (std::size_t i = 0; i < e.size(); ++i)
                if (e[i] == 0) {
                    std::memcpy(d.data() + i * 32, d.data(), 32);
                    std::memcpy(k.data() + i * kw, k.data(), kw);
                    std::memcpy(s.data() + i * 64, s.data(), 64);
                    e[i] = 1;
                }
        };
        fix(t.ecdsa_digest, t.ecdsa_key, t.ecdsa_signature, t.ecdsa_expected, 33);
        fix(t.schnorr_digest, t.schnorr_key, t.schnorr_signature, t.schnorr_expected, 32);
    }
    return t;
}

// libsecp256k1's verdicts on the tables (the judge), "" when they equal the
// known ones.
inline std::string check_against_reference(const lbtc_call_site::Tables& t) {
    reference::ColumnVerifier v(1);
    auto one = [&](wire::RecordKind kind, const std::vector<std::uint8_t>& d, const std::vector<std::uint8_t>& k,
                   const std::vector<std::uint8_t>& s, const std::vector<std::uint8_t>& e) {
        wire::ColumnSpan b;
        b.kind = kind;
        b.count = e.size();
        b.message = d.data();
        b.key = k.data();
        b.signature = s.data();
        std::vector<std::uint8_t> got(e.size());
        v.verify(b, got.data());
        return lbtc_call_site::first_difference(kind == wire::RecordKind::ecdsa ? "reference ecdsa" : "reference schnorr",
                                                got, e);
    };
    std::string why = one(wire::RecordKind::ecdsa, t.ecdsa_digest, t.ecdsa_key, t.ecdsa_signature, t.ecdsa_expected);
    if (why.empty())
        why = one(wire::RecordKind::schnorr, t.schnorr_digest, t.schnorr_key, t.schnorr_signature, t.schnorr_expected);
    return why;
}

}  // namespace sigverify::test
