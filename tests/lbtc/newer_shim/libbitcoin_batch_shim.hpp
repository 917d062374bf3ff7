// SPDX-License-Identifier: MIT
// A stand-in for the newest libbitcoin-system batch headers, as far as the
// patched function needs them (contrib/libbitcoin/README.md): the type names
// and row layouts libbitcoin's batch tables use (facts of its published
// interface, written here in this project's words; no libbitcoin source),
// and a batch_verify of the patched shape: sigverifyd first, then the
// device, then the CPU. The device never exists here; the CPU step is
// libsecp256k1 (test_libbitcoin_branch counts how often it ran).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "sigverifyd_branch.hpp"

namespace libbitcoin::system {

using data_chunk = std::vector<std::uint8_t>;
using stopper = std::atomic_bool;
using hash_digest = std::array<std::uint8_t, 32>;
using ec_compressed = std::array<std::uint8_t, 33>;
using ec_xonly = std::array<std::uint8_t, 32>;
using ec_signature = std::array<std::uint8_t, 64>;

namespace ecdsa {
// The newest table: packed rows plus a span of correlates (not read here).
struct batch {
#pragma pack(push, 1)
    struct row_t {
        hash_digest digest;
        ec_compressed point;
        ec_signature signature;
    };
#pragma pack(pop)
    std::span<const row_t> rows;
};
// The table before it: three columns.
struct columns_batch {
    std::span<const ec_compressed> points;
    std::span<const hash_digest> digests;
    std::span<const ec_signature> signatures;
};
}  // namespace ecdsa

namespace schnorr {
struct batch {
#pragma pack(push, 1)
    struct row_t {
        hash_digest digest;
        ec_xonly point;
        ec_signature signature;
    };
#pragma pack(pop)
    std::span<const row_t> rows;
};
struct columns_batch {
    std::span<const ec_xonly> points;
    std::span<const hash_digest> digests;
    std::span<const ec_signature> signatures;
};
}  // namespace schnorr

static_assert(sizeof(ecdsa::batch::row_t) == 129 && sizeof(schnorr::batch::row_t) == 128);

namespace shim {
inline bool device_available() { return false; }
template <class Batch>
bool device_verify(data_chunk&, const stopper&, const Batch&) { return false; }
}  // namespace shim

// The patched order. cpu(results, cancel, batch) stands for libbitcoin's
// lanes: it fills results in the same convention (empty when all valid).
template <typename Batch, typename Cpu>
data_chunk batch_verify(const stopper& cancel, const Batch& batch, Cpu&& cpu) {
    data_chunk results{};
    // The line the patch adds (contrib/libbitcoin/libbitcoin-system.patch):
    if (sigverify::libbitcoin_branch::try_verify(results, cancel, batch)) return results;
    if (shim::device_available() && shim::device_verify(results, cancel, batch)) return results;
    cpu(results, cancel, batch);
    return results;
}

}  // namespace libbitcoin::system
