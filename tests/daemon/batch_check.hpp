// Shared helpers of the daemon tests: generate signed rows, send them through a
// Client with the table's own API, and compare with the reference verifier row
// by row (results) or byte by byte (collect).
#pragma once

#include <cstdio>
#include <cstring>
#include <span>
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

// Returns true when the daemon's answer equals the reference's, printing the
// first difference otherwise. Also requires some invalid rows when n >= 20 so
// the comparison is not vacuous.
inline bool check_batch(Client& c, wire::Table table, wire::Mode mode, wire::SigEncoding enc, std::size_t n,
                        std::uint64_t seed, bool allow_local = false) {
    using namespace wire;
    auto rows = make_rows(table, n, enc, seed);
    const char* what = to_string(table).data();
    reference::Verifier ref(1);
    if (mode == Mode::results) {
        std::vector<std::uint8_t> expected(n), got(n, 0xAA);
        const auto t = ref.verify(span_of(table, enc, rows, n), expected.data());
        const BatchResult r = send(c, table, mode, enc, rows, n, got.data());
        if (!r.ok()) {
            std::fprintf(stderr, "%s results n=%zu: status %s\n", what, n, shm::to_string(r.status).data());
            return false;
        }
        if (!allow_local && r.local_rows != 0) {
            std::fprintf(stderr, "%s results n=%zu: verified locally, not by the daemon\n", what, n);
            return false;
        }
        if (r.valid != t.valid || r.invalid != t.invalid) {
            std::fprintf(stderr, "%s results n=%zu: counts %llu/%llu, reference %llu/%llu\n", what, n,
                         (unsigned long long)r.valid, (unsigned long long)r.invalid, (unsigned long long)t.valid,
                         (unsigned long long)t.invalid);
            return false;
        }
        for (std::size_t i = 0; i < n; ++i) {
            if (got[i] != expected[i]) {
                std::fprintf(stderr, "%s results n=%zu enc=%d: row %zu verdict %d, reference %d\n", what, n, int(enc), i,
                             got[i], expected[i]);
                return false;
            }
        }
        if (n >= 20 && (t.invalid == 0 || t.valid == 0)) {
            std::fprintf(stderr, "%s n=%zu: test data lacks valid or invalid rows\n", what, n);
            return false;
        }
    } else {
        std::vector<std::uint8_t> expected = rows;
        const auto t = ref.collect(span_of(table, enc, expected, n));
        const BatchResult r = send(c, table, mode, enc, rows, n, nullptr);
        if (!r.ok()) {
            std::fprintf(stderr, "%s collect n=%zu: status %s\n", what, n, shm::to_string(r.status).data());
            return false;
        }
        if (!allow_local && r.local_rows != 0) {
            std::fprintf(stderr, "%s collect n=%zu: verified locally, not by the daemon\n", what, n);
            return false;
        }
        if (r.valid != t.valid || r.invalid != t.invalid) {
            std::fprintf(stderr, "%s collect n=%zu: counts %llu/%llu, reference %llu/%llu\n", what, n,
                         (unsigned long long)r.valid, (unsigned long long)r.invalid, (unsigned long long)t.valid,
                         (unsigned long long)t.invalid);
            return false;
        }
        if (rows.size() != expected.size() || (n != 0 && std::memcmp(rows.data(), expected.data(), rows.size()) != 0)) {
            for (std::size_t i = 0; i < rows.size(); ++i) {
                if (rows[i] != expected[i]) {
                    std::fprintf(stderr, "%s collect n=%zu: byte %zu (row %zu) is %d, reference %d\n", what, n, i,
                                 i / wire::stride(record_kind(table), canonical_tail_size(table)), rows[i], expected[i]);
                    break;
                }
            }
            return false;
        }
    }
    return true;
}

}  // namespace sigverify::test
