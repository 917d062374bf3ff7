// SPDX-License-Identifier: MIT
#include "reference/reference_verifier.hpp"

#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <vector>

#include "reference/parallel_for.hpp"
#include "shm_protocol/verdict_publish.hpp"

namespace sigverify::reference {

void swap_sig_encoding(const std::uint8_t in[64], std::uint8_t out[64]) {
    for (int i = 0; i < 32; ++i) {
        out[i] = in[31 - i];
        out[32 + i] = in[63 - i];
    }
}

// ---------------------------------------------------------------------------
// RowVerifier
// ---------------------------------------------------------------------------

RowVerifier::RowVerifier() : ctx_(secp256k1_context_create(SECP256K1_CONTEXT_NONE)) {
    if (ctx_ == nullptr) throw std::runtime_error("secp256k1_context_create failed");
}

RowVerifier::~RowVerifier() { secp256k1_context_destroy(ctx_); }

bool RowVerifier::verify_ecdsa(const std::uint8_t* record, SigEncoding encoding) const {
    const auto* r = reinterpret_cast<const wire::EcdsaRecord*>(record);
    secp256k1_pubkey key;
    // A 33-byte input must carry prefix 0x02/0x03, x < p and a point on the curve.
    if (!secp256k1_ec_pubkey_parse(ctx_, &key, r->point, sizeof r->point)) return false;

    std::uint8_t compact[64];
    if (encoding == SigEncoding::opaque) {
        swap_sig_encoding(r->sig, compact);
    } else {
        std::memcpy(compact, r->sig, 64);
    }
    secp256k1_ecdsa_signature sig;
    // Fails when r or s >= n; zero values parse but never verify.
    if (!secp256k1_ecdsa_signature_parse_compact(ctx_, &sig, compact)) return false;
    // Consensus accepts high-S: normalize in scratch memory (sig is our copy).
    secp256k1_ecdsa_signature_normalize(ctx_, &sig, &sig);
    return secp256k1_ecdsa_verify(ctx_, &sig, r->hash, &key) == 1;
}

bool RowVerifier::verify_schnorr(const std::uint8_t* record) const {
    const auto* r = reinterpret_cast<const wire::SchnorrRecord*>(record);
    secp256k1_xonly_pubkey key;
    if (!secp256k1_xonly_pubkey_parse(ctx_, &key, r->xonly)) return false;
    // Rejects R.x >= p and s >= n itself.
    return secp256k1_schnorrsig_verify(ctx_, r->sig, r->hash, sizeof r->hash, &key) == 1;
}

bool RowVerifier::verify_row(const RowSpan& rows, std::size_t i) const {
    const std::uint8_t* rec = rows.row(i);
    return rows.kind == RecordKind::ecdsa ? verify_ecdsa(rec, rows.encoding) : verify_schnorr(rec);
}

Tally RowVerifier::run(const RowSpan& rows, std::size_t begin, std::size_t end, Mode mode,
                       std::uint8_t* results) const {
    return verify_and_publish([&](std::size_t i) { return verify_row(rows, i); }, wire::row_tails(rows), begin,
                              std::min(end, rows.count), mode, results);
}

// ---------------------------------------------------------------------------
// Verifier: the reference's one pool (parallel_for.hpp), a libsecp256k1
// context per worker. Its column calls are in columns.cpp.
// ---------------------------------------------------------------------------

Verifier::Verifier(unsigned threads) : pool_(std::make_unique<WorkerPool>(threads)) {
    verifiers_.resize(pool_->size());
    for (auto& v : verifiers_) v = std::make_unique<RowVerifier>();
}

Verifier::~Verifier() = default;

unsigned Verifier::threads() const { return pool_->size(); }

void Verifier::prepare(std::size_t count, Mode mode, std::uint8_t* results) {
    if (mode != Mode::results && mode != Mode::collect) throw std::invalid_argument("reference::Verifier: unknown mode");
    if (mode != Mode::results || count == 0) return;
    if (results == nullptr) throw std::invalid_argument("reference::Verifier: results mode needs a results buffer");
    std::memset(results, 0, count);  // fail closed
}

Tally Verifier::verify(const RowSpan& rows, std::uint8_t* results) { return run(rows, Mode::results, results); }

Tally Verifier::collect(const RowSpan& rows) { return run(rows, Mode::collect, nullptr); }

Tally Verifier::run(const RowSpan& rows, Mode mode, std::uint8_t* results) {
    if (!rows.valid()) throw std::invalid_argument("reference::Verifier: invalid row span");
    prepare(rows.count, mode, results);
    return sum_over<Tally>(*pool_, rows.count, [&](unsigned w, std::size_t begin, std::size_t end) {
        return verifiers_[w]->run(rows, begin, end, mode, results);
    });
}

}  // namespace sigverify::reference
