// SPDX-License-Identifier: MIT
#include "daemon/backends/self_test.hpp"

#include <vector>

#include "reference/row_generator.hpp"

namespace sigverify::daemon {

bool backend_self_test(Backend& backend, std::string& detail) {
    constexpr std::size_t kRows = 8;
    std::size_t checked = 0;
    for (const auto table : {wire::Table::ecdsa, wire::Table::multisig, wire::Table::schnorr, wire::Table::threshold}) {
        const reference::GenOptions o{.table = table, .count = kRows, .high_s_rate = 0.5, .seed = 0x5e1f7e57,
                                      .threads = 1};
        std::vector<std::uint8_t> rows;
        try {
            rows = reference::generate_rows(o);
        } catch (const std::exception& e) {
            detail = std::string("cannot generate self-test rows: ") + e.what();
            return false;
        }
        const std::size_t tail_size = reference::effective_key_size(o);
        const auto kind = wire::record_kind(table);
        const std::size_t stride = wire::stride(kind, tail_size);
        // Second half: flip a bit of s (the last signature byte of the record).
        for (std::size_t i = kRows / 2; i < kRows; ++i) rows[i * stride + wire::record_size(kind) - 1] ^= 0x01;
        const wire::RowSpan span{kind, tail_size, wire::SigEncoding::opaque, rows.data(), kRows};
        std::vector<std::uint8_t> expected(kRows), got(kRows, 0xAA);
        reference::RowVerifier ref;
        for (std::size_t i = 0; i < kRows; ++i) expected[i] = ref.verify_row(span, i) ? 1 : 0;
        const ChunkResult r = backend.verify(0, span, got.data());
        if (r.status != shm::Status::ok) {
            detail = std::string(wire::to_string(table)) + ": backend " + backend.name() + " returned " +
                     std::string(shm::to_string(r.status));
            return false;
        }
        // Multisig/threshold generators also emit key/signature pairs that do
        // not match (verdict 0): the reference decides, but at least one row
        // of the untouched half must be valid and every corrupted row invalid.
        std::size_t valid_untouched = 0;
        for (std::size_t i = 0; i < kRows / 2; ++i) valid_untouched += expected[i];
        if (valid_untouched == 0) {
            detail = std::string(wire::to_string(table)) + ": libsecp256k1 rejected every self-test row";
            return false;
        }
        for (std::size_t i = 0; i < kRows; ++i) {
            if (got[i] != expected[i] || (i >= kRows / 2 && expected[i] != 0)) {
                detail = std::string(wire::to_string(table)) + " row " + std::to_string(i) + ": backend " +
                         backend.name() + " said " + std::to_string(got[i]) + ", libsecp256k1 said " +
                         std::to_string(expected[i]);
                return false;
            }
        }
        checked += kRows;
    }
    detail = "passed (" + std::to_string(checked) + " rows, 4 tables)";
    return true;
}

}  // namespace sigverify::daemon
