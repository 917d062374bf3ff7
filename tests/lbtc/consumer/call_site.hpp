// SPDX-License-Identifier: MIT
// libbitcoin's accelerator call site, written from its contract (no libbitcoin
// source): the gate read once, Schnorr first with no results (the all-valid
// fast path) and again with results only when that fails, ECDSA always with
// results. Built two ways: in-tree against sigverify/lbtc.hpp, and by the
// compat test as an outside consumer (-DLBTC_OUTSIDE_CONSUMER) against the
// installed <ufsecp/libbitcoin.hpp>, with nothing but what the installed
// package's flags give: as in libbitcoin, HAVE_ULTRAFAST comes from
// WITH_ULTRAFAST, which libbitcoin's builds never define themselves, so the
// package's pkg-config Cflags and CMake target must.
//
// Depends on the hook's header and the standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#if defined(LBTC_OUTSIDE_CONSUMER) && !defined(WITH_ULTRAFAST)
#error "the installed secp256k1-fast package must define WITH_ULTRAFAST (libbitcoin's builds do not)"
#endif
#if defined(WITH_ULTRAFAST) && !defined(HAVE_ULTRAFAST)
#define HAVE_ULTRAFAST
#endif

#if defined(HAVE_ULTRAFAST)
#include <ufsecp/libbitcoin.hpp>
#if !defined(UFSECP_LBTC_HAS_GPU_AVAILABLE)
#error "ufsecp/libbitcoin.hpp must define UFSECP_LBTC_HAS_GPU_AVAILABLE (libbitcoin gates batching on it)"
#endif
namespace hook = ufsecp::lbtc;
#else
#include "sigverify/lbtc.hpp"
namespace hook = sigverify::lbtc;
#endif

namespace lbtc_call_site {

// Both tables as libbitcoin holds them, and the verdicts they must get.
struct Tables {
    std::vector<std::uint8_t> ecdsa_digest, ecdsa_key, ecdsa_signature, ecdsa_expected;        // 32, 33, 64, 1
    std::vector<std::uint8_t> schnorr_digest, schnorr_key, schnorr_signature, schnorr_expected;  // 32, 32, 64, 1
    std::size_t ecdsa_rows() const { return ecdsa_expected.size(); }
    std::size_t schnorr_rows() const { return schnorr_expected.size(); }
};

// The gate: read once per process, as libbitcoin-node's validation chaser does.
inline bool accelerated() {
    static const bool gate = hook::gpu_available();
    return gate;
}

inline bool all_ones(const std::vector<std::uint8_t>& v) {
    for (std::uint8_t b : v)
        if (b != 1) return false;
    return true;
}

inline std::string first_difference(const char* what, const std::vector<std::uint8_t>& got,
                                    const std::vector<std::uint8_t>& want) {
    std::size_t diffs = 0, first = 0;
    for (std::size_t i = 0; i < want.size(); ++i)
        if (got[i] != want[i] && diffs++ == 0) first = i;
    if (diffs == 0) return {};
    return std::string(what) + ": " + std::to_string(diffs) + " verdicts differ, first row " + std::to_string(first) +
           " got " + std::to_string(got[first]) + " want " + std::to_string(want[first]);
}

// One batch as libbitcoin verifies it; "" when every verdict and return value
// is exact, else what differed.
inline std::string verify_batch(const Tables& t, std::size_t max_threads) {
    std::string why;
    const std::string tag = " (max_threads " + std::to_string(max_threads) + ")";
    // Schnorr: nullptr first; results only when some row failed.
    const std::size_t sn = t.schnorr_rows();
    const bool schnorr_all = all_ones(t.schnorr_expected);
    const bool fast = hook::schnorr_verify_columns(t.schnorr_digest.data(), t.schnorr_key.data(),
                                                   t.schnorr_signature.data(), sn, nullptr, max_threads);
    if (fast != schnorr_all) return "schnorr fast path returned " + std::to_string(fast) + tag;
    if (!fast) {
        std::vector<std::uint8_t> results(sn, 0xAA);  // not 0 or 1: every byte must be written
        const bool again = hook::schnorr_verify_columns(t.schnorr_digest.data(), t.schnorr_key.data(),
                                                        t.schnorr_signature.data(), sn, results.data(), max_threads);
        if (again) return "schnorr second pass returned true after the fast path said false" + tag;
        why = first_difference("schnorr", results, t.schnorr_expected);
        if (!why.empty()) return why + tag;
    }
    // ECDSA: always with results (multisig bands expect row misses).
    const std::size_t en = t.ecdsa_rows();
    std::vector<std::uint8_t> results(en, 0xAA);
    const bool ok = hook::ecdsa_verify_columns(t.ecdsa_digest.data(), t.ecdsa_key.data(), t.ecdsa_signature.data(),
                                               en, results.data(), max_threads);
    if (ok != all_ones(t.ecdsa_expected)) return "ecdsa returned " + std::to_string(ok) + tag;
    why = first_difference("ecdsa", results, t.ecdsa_expected);
    return why.empty() ? why : why + tag;
}

// The whole call site: the gate once (expect_gate -1: either answer), then the
// batch with max_threads 0 (auto) and 1.
inline std::string run(const Tables& t, int expect_gate) {
    const bool gate = accelerated();
    if (expect_gate >= 0 && gate != (expect_gate == 1))
        return "gpu_available() = " + std::to_string(gate) + ", expected " + std::to_string(expect_gate);
    for (std::size_t threads : {std::size_t{0}, std::size_t{1}})
        if (std::string why = verify_batch(t, threads); !why.empty()) return why;
    return {};
}

}  // namespace lbtc_call_site
