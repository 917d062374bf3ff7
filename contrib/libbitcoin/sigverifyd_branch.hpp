// SPDX-License-Identifier: MIT
// sigverifyd in front of libbitcoin-system's own batch verifier
// (contrib/libbitcoin/README.md). Header-only, over libsigverify's public
// Client API; the patch beside it adds this file to libbitcoin-system and one
// call at the top of its batch verify, before its device and its CPU lanes.
//
// try_verify(results, cancel, batch) answers for a whole ECDSA or Schnorr
// batch, in libbitcoin's results convention:
//   * true: every row has a verdict of sigverifyd (libsecp256k1 confirmed
//     every invalid one: the rows go unlabelled, so no group rule relaxes
//     that), and results is empty when every row is valid (or when *cancel
//     reads true: the caller discards a cancelled batch), else one byte per
//     row, 1 valid, 0 invalid;
//   * false: no verdict (no daemon, one that refused, timed out, went away,
//     or an answer whose counts do not add up); results is empty and the
//     caller goes on with its own order. A non-verdict never reads as
//     invalid.
// Rows: the newest tables (`batch.rows`, packed 129-byte ECDSA rows of
// digest || compressed key || parsed signature, 128-byte Schnorr rows of
// digest || x-only key || signature) go to the daemon as they are, as
// tail-less rows; the older column tables (`batch.digests`, `batch.points`,
// `batch.signatures`) as columns. A parsed ECDSA signature is r and s as
// little-endian words on the machines libbitcoin builds for: libsigverify's
// `opaque` encoding.
//
// The session: one Client per process (the library gives a forked child its
// own), made on first use with SIGVERIFY_RUNTIME_DIR's socket and
// SIGVERIFY_LBTC_BATCH_TIMEOUT_MS as the batch deadline (default 10000), a
// failed connect tried again at most once a second, and never waited for by
// a second thread (it verifies with libbitcoin's own order meanwhile).
// Each call waits for a connect or for a batch, never both, so no call takes
// longer than the timeout (plus the verifying of what comes back): the call
// that connects answers false and leaves its batch to libbitcoin's order,
// and the Client never reconnects inside a batch call (reconnect = false);
// a session the daemon ended is dropped and made again by a later call.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <vector>

#include <unistd.h>

#include "sigverify/client.hpp"

namespace sigverify::libbitcoin_branch {

// The process's live session, or null while there is none: no daemon
// answers, another thread is connecting, or this call just connected (the
// next call uses the session). A caller holds its own reference, so a
// session dropped here meanwhile stays valid until its call ends.
inline std::shared_ptr<Client> session() noexcept {
    using clock = std::chrono::steady_clock;
    static std::mutex mutex;
    static std::shared_ptr<Client> client;
    static clock::time_point next_try{};
    std::unique_lock lock(mutex, std::try_to_lock);
    if (!lock.owns_lock()) return nullptr;  // another thread is connecting
    if (client && client->connected()) return client;
    client.reset();  // the daemon ended it (died, stopped, restarted): a new one below
    if (clock::now() < next_try) return nullptr;
    next_try = clock::now() + std::chrono::seconds(1);
    ClientOptions options;
    options.name = "libbitcoin-pid-" + std::to_string(::getpid());
    options.fallback = Fallback::none;
    options.reconnect = false;  // a batch call never waits for a handshake
    long timeout_ms = 10000;
    if (const char* text = std::getenv("SIGVERIFY_LBTC_BATCH_TIMEOUT_MS")) {
        char* end = nullptr;
        const long parsed = std::strtol(text, &end, 10);
        if (end != text && *end == '\0' && parsed > 0) timeout_ms = parsed;
    }
    options.batch_timeout = std::chrono::milliseconds(timeout_ms);
    // A connect (to a stopped daemon with a full backlog, a socket nobody
    // accepts) never waits longer than a batch may.
    options.connect_timeout = std::min(options.connect_timeout, options.batch_timeout);
    Status status = Status::ok;
    std::string message;
    client = Client::connect(options, status, message);
    return nullptr;  // this call spent its time connecting
}

// Whether an answer is a verdict for each of n rows: the call succeeded,
// its counts cover the rows, and the bytes say what the counts say.
inline bool is_verdict(const BatchResult& answer, const std::uint8_t* bytes, std::size_t n) noexcept {
    if (!answer.ok() || answer.valid + answer.invalid != n) return false;
    std::size_t ones = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (bytes[i] > 1) return false;
        ones += bytes[i];
    }
    return ones == answer.valid;
}

// Libbitcoin's shape of a verdict: empty when every row is valid.
template <class Results>
bool give_verdicts(Results& results, const BatchResult& answer, std::vector<std::uint8_t>& bytes) {
    if (answer.invalid == 0) {
        results.clear();
    } else {
        results.assign(bytes.begin(), bytes.end());
    }
    return true;
}

template <class Results, class Stopper, class Batch>
bool try_verify(Results& results, const Stopper& cancel, const Batch& batch) noexcept {
    results.clear();
    try {
        const std::shared_ptr<Client> client = session();
        if (client == nullptr) return false;
        std::vector<std::uint8_t> bytes;
        BatchResult answer;
        if constexpr (requires { batch.rows; }) {
            using Row = typename Batch::row_t;
            static_assert(sizeof(Row) == wire::kEcdsaRecordSize || sizeof(Row) == wire::kSchnorrRecordSize,
                          "libbitcoin's packed row must be a sigverify record without a tail");
            constexpr bool ecdsa = sizeof(Row) == wire::kEcdsaRecordSize;
            const std::size_t n = batch.rows.size();
            if (n == 0) return true;
            bytes.assign(n, 0);
            wire::RowSpan span;
            span.kind = ecdsa ? wire::RecordKind::ecdsa : wire::RecordKind::schnorr;
            span.encoding = wire::SigEncoding::opaque;
            // Results mode reads the rows and never writes them.
            span.data = const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(batch.rows.data()));
            span.count = n;
            const std::atomic<bool>* flag = nullptr;
            if constexpr (std::is_convertible_v<const Stopper*, const std::atomic<bool>*>) flag = &cancel;
            answer = client->run(span, wire::Mode::results, bytes.data(), shm::kTableUnspecified, flag);
        } else {
            const std::size_t n = batch.signatures.size();
            if (n == 0) return true;
            if (batch.digests.size() != n || batch.points.size() != n) return false;
            bytes.assign(n, 0);
            const auto* digests = reinterpret_cast<const std::uint8_t*>(batch.digests.data());
            const auto* points = reinterpret_cast<const std::uint8_t*>(batch.points.data());
            const auto* signatures = reinterpret_cast<const std::uint8_t*>(batch.signatures.data());
            constexpr std::size_t key = sizeof(batch.points[0]);
            static_assert(key == 33 || key == 32, "keys are compressed (ECDSA) or x-only (Schnorr)");
            answer = key == 33 ? client->verify_ecdsa_columns(digests, points, signatures, n, bytes.data())
                               : client->verify_schnorr_columns(digests, points, signatures, n, bytes.data());
        }
        if (static_cast<bool>(cancel)) return true;  // discarded by the caller
        if (!is_verdict(answer, bytes.data(), bytes.size())) return false;
        return give_verdicts(results, answer, bytes);
    } catch (...) {
        results.clear();
        return false;
    }
}

}  // namespace sigverify::libbitcoin_branch
