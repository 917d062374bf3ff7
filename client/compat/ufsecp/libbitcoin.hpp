// SPDX-License-Identifier: MIT
// A stand-in for the accelerator header libbitcoin-system includes under
// HAVE_ULTRAFAST (docs/libbitcoin.md): the names libbitcoin calls, in its
// namespace, forwarding to libsigverify's own hook (sigverify/lbtc.hpp).
// Installed only with the opt-in libbitcoin compatibility layer
// (-DSIGVERIFY_LIBBITCOIN_COMPAT=ON, or its own install component).
#pragma once

#include <cstddef>
#include <cstdint>

#include "sigverify/lbtc.hpp"

// libbitcoin batches only when this is defined and gpu_available() is true.
#define UFSECP_LBTC_HAS_GPU_AVAILABLE 1

namespace ufsecp::lbtc {

[[nodiscard]] inline bool ecdsa_verify_columns(const std::uint8_t* digests32, const std::uint8_t* points33,
                                               const std::uint8_t* sigs64, std::size_t count,
                                               std::uint8_t* out_results, std::size_t max_threads) {
    return sigverify::lbtc::ecdsa_verify_columns(digests32, points33, sigs64, count, out_results, max_threads);
}

[[nodiscard]] inline bool schnorr_verify_columns(const std::uint8_t* digests32, const std::uint8_t* xonly32,
                                                 const std::uint8_t* sigs64, std::size_t count,
                                                 std::uint8_t* out_results, std::size_t max_threads) {
    return sigverify::lbtc::schnorr_verify_columns(digests32, xonly32, sigs64, count, out_results, max_threads);
}

[[nodiscard]] inline bool gpu_available() { return sigverify::lbtc::gpu_available(); }

}  // namespace ufsecp::lbtc
