// SPDX-License-Identifier: MIT
// Shared helpers of the daemon tests: generate signed rows, send them through a
// Client with the table's own API, and compare with verdicts known without any
// verifier of the product (make_known_rows) row by row (results) or byte by
// byte (collect). make_rows' verdicts are not known: use it for load only.
#pragma once

#include <cstdio>
#include <cstddef>
#include <cstring>
#include <stdexcept>
#include <span>
#include <string>
#include <vector>

#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"
#include "sigverify/client.hpp"

namespace sigverify::test {

inline std::vector<std::uint8_t> make_rows(wire::Table table, std::size_t n, wire::SigEncoding enc,
                                           std::uint64_t seed) {
    reference::GenOptions g;
    g.table = table;
    g.count = n;
    g.encoding = enc;
    g.invalid_rate = 0.25;
    g.high_s_rate = wire::record_kind(table) == wire::RecordKind::ecdsa ? 0.2 : 0.0;
    g.seed = seed;
    g.threads = 1;
    return reference::generate_rows(g);
}

// Rows whose verdicts are known without running any verifier of the product:
// every row is first really signed by reference::generate_rows with
// invalid_rate 0 (for ECDSA, each row is taken either from a low-S or from an
// all-high-S generation of the same seed, so known rows are high-S, and a
// high-S signature must be VALID); then every fourth row is broken here in a
// way that makes it invalid (message bit flipped, r bit flipped, or s = 0).
// Multisig and threshold rows carry an ECDSA or Schnorr record like the ecdsa
// and schnorr tables (the daemon verifies rows independently of their group),
// so their records come from those tables. Tails are written here and are
// never zero, so a zeroed tail is always visible.
struct KnownRows {
    std::vector<std::uint8_t> rows;
    std::vector<std::uint8_t> expected;  // 1 = valid, 0 = invalid
    std::uint64_t valid = 0, invalid = 0, high_s = 0;
    std::size_t stride = 0, record = 0, tail = 0;
};

inline bool known_invalid_index(std::size_t i) { return i % 4 == 3; }
inline bool known_high_s_index(std::size_t i) { return i % 5 == 1; }

inline KnownRows make_known_rows(wire::Table table, std::size_t n, wire::SigEncoding enc, std::uint64_t seed) {
    using namespace wire;
    const RecordKind kind = record_kind(table);
    const bool ecdsa = kind == RecordKind::ecdsa;
    reference::GenOptions g;
    g.table = ecdsa ? Table::ecdsa : Table::schnorr;
    g.count = n;
    g.encoding = enc;
    g.invalid_rate = 0.0;
    g.high_s_rate = 0.0;
    g.seed = seed;
    g.threads = 1;
    reference::GenReport low_report, high_report;
    const auto low = reference::generate_rows(g, &low_report);
    std::vector<std::uint8_t> high;
    if (ecdsa) {
        g.high_s_rate = 1.0;
        high = reference::generate_rows(g, &high_report);
        if (high_report.high_s != n || low_report.high_s != 0 || high_report.mutated != 0)
            throw std::logic_error("make_known_rows: the generator did not honour the high-S rates");
    }
    if (low_report.mutated != 0) throw std::logic_error("make_known_rows: the generator mutated rows at rate 0");
    const std::size_t base_stride = record_size(kind) + canonical_tail_size(g.table);
    KnownRows k;
    k.record = record_size(kind);
    k.tail = canonical_tail_size(table);
    k.stride = k.record + k.tail;
    k.rows.assign(n * k.stride, 0);
    k.expected.assign(n, 1);
    for (std::size_t i = 0; i < n; ++i) {
        std::uint8_t* row = k.rows.data() + i * k.stride;
        const bool hs = ecdsa && known_high_s_index(i);
        std::memcpy(row, (hs ? high : low).data() + i * base_stride, k.record);
        k.high_s += hs;
        if (known_invalid_index(i)) {
            k.expected[i] = 0;
            std::uint8_t* hash = row;  // both records start with the 32-byte message hash
            std::uint8_t* sig = row + (ecdsa ? offsetof(EcdsaRecord, sig) : offsetof(SchnorrRecord, sig));
            switch ((i / 4) % 3) {
            case 0: hash[i % 32] ^= std::uint8_t(1u << (i % 8)); break;
            case 1: sig[8] ^= 0x10; break;                  // a bit of r (either byte order)
            default: std::memset(sig + 32, 0, 32); break;   // s = 0
            }
        }
        for (std::size_t b = 0; b < k.tail; ++b) row[k.record + b] = std::uint8_t(1 + (i * 31 + b * 7) % 255);
        (k.expected[i] ? k.valid : k.invalid) += 1;
    }
    return k;
}

// The collect rule written out independently of the product's publish code:
// the tail of every valid row is zeroed, the tail of every invalid row is unchanged.
inline std::vector<std::uint8_t> collect_expectation(const KnownRows& k) {
    std::vector<std::uint8_t> out = k.rows;
    for (std::size_t i = 0; i < k.expected.size(); ++i)
        if (k.expected[i]) std::memset(out.data() + i * k.stride + k.record, 0, k.tail);
    return out;
}

// The collect rule for columns, likewise written out independently: the
// correlate entry (tail bytes a row) of every valid row is zeroed, that of
// every invalid row is unchanged. An invalid row's entry must not be all zero
// to begin with, or a wrongly zeroed entry could not be seen; the known rows'
// tails are never zero, and libbitcoin's layout keeps their id bytes.
inline std::vector<std::uint8_t> collect_expectation(const KnownRows& k, const std::vector<std::uint8_t>& correlate,
                                                     std::size_t tail) {
    if (correlate.size() != k.expected.size() * tail)
        throw std::logic_error("collect_expectation: correlate size is not rows x tail");
    std::vector<std::uint8_t> out = correlate;
    for (std::size_t i = 0; i < k.expected.size(); ++i) {
        std::uint8_t* entry = out.data() + i * tail;
        if (k.expected[i]) {
            std::memset(entry, 0, tail);
        } else {
            bool any = false;
            for (std::size_t b = 0; b < tail; ++b) any = any || entry[b] != 0;
            if (tail != 0 && !any) throw std::logic_error("collect_expectation: an invalid row's entry is all zero");
        }
    }
    return out;
}

// "" when got equals want entry by entry (width bytes each), else how many
// entries differ and the first few, each with the row's known verdict: a
// valid row whose entry was not zeroed, or an invalid row whose entry changed.
inline std::string first_entry_differences(const std::uint8_t* got, const std::vector<std::uint8_t>& want,
                                           std::size_t width, const std::vector<std::uint8_t>& expected,
                                           std::size_t limit = 5) {
    if (width == 0) return "";
    std::string first;
    std::size_t differing = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        if (std::memcmp(got + i * width, want.data() + i * width, width) == 0) continue;
        if (differing++ < limit)
            first += " row " + std::to_string(i) + (expected[i] ? " (valid, not zeroed)" : " (invalid, changed)");
    }
    if (differing == 0) return "";
    return std::to_string(differing) + " of " + std::to_string(expected.size()) + " entries differ; first:" + first;
}

inline wire::RowSpan span_of(wire::Table table, wire::SigEncoding enc, std::vector<std::uint8_t>& rows,
                             std::size_t n) {
    return wire::RowSpan{wire::record_kind(table), wire::canonical_tail_size(table), enc, rows.data(), n};
}

// Sends one batch through the client API of its table. results may be null in collect mode.
inline BatchResult send(Client& c, wire::Table table, wire::Mode mode, wire::SigEncoding enc,
                        std::vector<std::uint8_t>& rows, std::size_t n, std::uint8_t* results) {
    using namespace wire;
    const std::size_t key = canonical_tail_size(table);
    std::uint8_t* p = rows.data();
    if (mode == Mode::results) {
        std::span<std::uint8_t> res(results, n);
        switch (table) {
        case Table::ecdsa: return c.verify_ecdsa(p, n, key, results, enc);
        case Table::multisig:
            return c.verify_multisig(std::span<const MultisigRow>(reinterpret_cast<const MultisigRow*>(p), n), res, enc);
        case Table::schnorr: return c.verify_schnorr(p, n, key, results);
        case Table::threshold:
            return c.verify_threshold(std::span<const ThresholdRow>(reinterpret_cast<const ThresholdRow*>(p), n), res);
        }
    } else {
        switch (table) {
        case Table::ecdsa: return c.collect_ecdsa(std::span<EcdsaRow>(reinterpret_cast<EcdsaRow*>(p), n), enc);
        case Table::multisig: return c.collect_multisig(std::span<MultisigRow>(reinterpret_cast<MultisigRow*>(p), n), enc);
        case Table::schnorr: return c.collect_schnorr(std::span<SchnorrRow>(reinterpret_cast<SchnorrRow*>(p), n));
        case Table::threshold:
            return c.collect_threshold(std::span<ThresholdRow>(reinterpret_cast<ThresholdRow*>(p), n));
        }
    }
    return BatchResult{Status::invalid_argument, 0, 0, 0};
}

// Returns true when the daemon's answer equals the known verdicts of
// make_known_rows (results) or the collect rule applied to them (collect),
// printing the first few differences otherwise. No verifier of the product
// computes the expectation.
inline bool check_batch(Client& c, wire::Table table, wire::Mode mode, wire::SigEncoding enc, std::size_t n,
                        std::uint64_t seed, bool allow_local = false) {
    using namespace wire;
    KnownRows k = make_known_rows(table, n, enc, seed);
    auto& rows = k.rows;
    const char* what = to_string(table).data();
    const char* mode_name = mode == Mode::results ? "results" : "collect";
    std::vector<std::uint8_t> got(n, 0xAA);
    const std::vector<std::uint8_t> expected_rows = mode == Mode::collect ? collect_expectation(k) : rows;
    const BatchResult r = send(c, table, mode, enc, rows, n, got.data());
    if (!r.ok()) {
        std::fprintf(stderr, "%s %s n=%zu: status %s\n", what, mode_name, n, shm::to_string(r.status).data());
        return false;
    }
    if (!allow_local && r.local_rows != 0) {
        std::fprintf(stderr, "%s %s n=%zu: verified locally, not by the daemon\n", what, mode_name, n);
        return false;
    }
    bool ok = true;
    if (r.valid != k.valid || r.invalid != k.invalid) {
        std::fprintf(stderr, "%s %s n=%zu enc=%d: counts %llu/%llu, known %llu/%llu\n", what, mode_name, n, int(enc),
                     (unsigned long long)r.valid, (unsigned long long)r.invalid, (unsigned long long)k.valid,
                     (unsigned long long)k.invalid);
        ok = false;
    }
    int shown = 0;
    for (std::size_t i = 0; i < n && shown < 5; ++i) {
        const bool high_s = record_kind(table) == RecordKind::ecdsa && known_high_s_index(i);
        if (mode == Mode::results) {
            if (got[i] != k.expected[i]) {
                std::fprintf(stderr, "%s results n=%zu enc=%d: row %zu verdict %d, known %d%s\n", what, n, int(enc), i,
                             got[i], k.expected[i], high_s ? " (high-S row)" : "");
                ok = false;
                ++shown;
            }
        } else if (std::memcmp(rows.data() + i * k.stride, expected_rows.data() + i * k.stride, k.stride) != 0) {
            std::fprintf(stderr, "%s collect n=%zu enc=%d: row %zu (%s%s) not as the collect rule says: tail %s\n", what,
                         n, int(enc), i, k.expected[i] ? "valid" : "invalid", high_s ? ", high-S" : "",
                         k.expected[i] ? "not zeroed" : "changed");
            ok = false;
            ++shown;
        }
    }
    return ok;
}

}  // namespace sigverify::test
