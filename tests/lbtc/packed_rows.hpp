// SPDX-License-Identifier: MIT
// The known tables (known_tables.hpp) as libbitcoin's newest packed rows
// (newer_shim/): 129-byte ECDSA and 128-byte Schnorr rows, for the tests of
// contrib/libbitcoin's sigverifyd branch.
#pragma once

#include <cstring>
#include <vector>

#include "known_tables.hpp"
#include "libbitcoin_batch_shim.hpp"

namespace sigverify::test {

struct PackedRows {
    std::vector<libbitcoin::system::ecdsa::batch::row_t> ecdsa;
    std::vector<libbitcoin::system::schnorr::batch::row_t> schnorr;
};

inline PackedRows pack(const lbtc_call_site::Tables& t) {
    PackedRows p;
    p.ecdsa.resize(t.ecdsa_rows());
    for (std::size_t i = 0; i < p.ecdsa.size(); ++i) {
        std::memcpy(p.ecdsa[i].digest.data(), t.ecdsa_digest.data() + i * 32, 32);
        std::memcpy(p.ecdsa[i].point.data(), t.ecdsa_key.data() + i * 33, 33);
        std::memcpy(p.ecdsa[i].signature.data(), t.ecdsa_signature.data() + i * 64, 64);
    }
    p.schnorr.resize(t.schnorr_rows());
    for (std::size_t i = 0; i < p.schnorr.size(); ++i) {
        std::memcpy(p.schnorr[i].digest.data(), t.schnorr_digest.data() + i * 32, 32);
        std::memcpy(p.schnorr[i].point.data(), t.schnorr_key.data() + i * 32, 32);
        std::memcpy(p.schnorr[i].signature.data(), t.schnorr_signature.data() + i * 64, 64);
    }
    return p;
}

}  // namespace sigverify::test
