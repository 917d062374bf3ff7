// SPDX-License-Identifier: MIT
// libbitcoin's batch hook in libsigverify's own name (docs/libbitcoin.md).
//
// libbitcoin-system verifies a block's signatures in bulk as column tables:
// ECDSA (digest 32, compressed key 33, signature 64) and Schnorr (digest 32,
// x-only key 32, signature 64), signatures in libsecp256k1's in-memory form
// (r and s, each 32 bytes little-endian: the `opaque` encoding). These three
// free functions have exactly the shapes its accelerator call site uses.
//
// Contract:
//   * true iff every row is valid; with out_results != nullptr one byte per
//     row is written (1 valid, 0 invalid), with nullptr no byte anywhere;
//   * max_threads: the most threads this process spends verifying locally
//     (0 = all cores); the daemon's own threads are the daemon's;
//   * fail closed, by construction: a false return or a 0 byte only ever
//     comes from a verdict of sigverifyd or of libsecp256k1 in this process.
//     Whatever stands in the way of a daemon verdict (no daemon, one killed,
//     stopped, restarted, refusing or shutting down, a piece that timed out
//     or was cancelled) the rows are verified here with libsecp256k1; the
//     call returns only with true verdicts (it retries the local verifier
//     until it can run rather than answer without one);
//   * count 0 is true; a null column with count > 0 is a broken caller, for
//     which no verdict exists: the process aborts rather than answer;
//   * thread-safe: call from any thread; the calls share one daemon session
//     per distinct max_threads (made on first use, kept for the process).
//
// Environment (read once, on first use): SIGVERIFY_RUNTIME_DIR (where the
// daemon's socket is, as for every client), SIGVERIFY_LBTC_BATCH_TIMEOUT_MS
// (how long one call may wait for the daemon, a connect and handshake made
// for it included, before its rows are verified here; default 10000: a
// stopped or hung daemon costs each call that long at most).
#pragma once

#include <cstddef>
#include <cstdint>

#include "sigverify/export.h"

namespace sigverify::lbtc {

// count rows of ECDSA columns: digests32[count][32], points33[count][33]
// (compressed SEC1), sigs64[count][64] (r, s little-endian). High-S is valid
// (consensus), a key that does not parse or r, s out of range is invalid.
[[nodiscard]] SIGVERIFY_API bool ecdsa_verify_columns(const std::uint8_t* digests32, const std::uint8_t* points33,
                                                      const std::uint8_t* sigs64, std::size_t count,
                                                      std::uint8_t* out_results, std::size_t max_threads);

// count rows of BIP-340 columns: digests32[count][32], xonly32[count][32],
// sigs64[count][64] (R.x || s, big-endian).
[[nodiscard]] SIGVERIFY_API bool schnorr_verify_columns(const std::uint8_t* digests32, const std::uint8_t* xonly32,
                                                        const std::uint8_t* sigs64, std::size_t count,
                                                        std::uint8_t* out_results, std::size_t max_threads);

// True iff a daemon answers now and at least one of its GPUs is enabled
// (false with no daemon, on a CPU daemon, or once every GPU is switched off).
// libbitcoin reads it once, to decide whether to batch at all.
[[nodiscard]] SIGVERIFY_API bool gpu_available();

}  // namespace sigverify::lbtc
