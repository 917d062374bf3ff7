// SPDX-License-Identifier: MIT
// ECDSA and BIP-340 verification of one wire-format record, with the
// reference's verdict rules (reference/reference_verifier.hpp):
//   * ECDSA high-S is VALID (s is normalized to low-S in a local copy);
//   * a key that does not parse (prefix not 02/03, x >= p, not on the curve),
//     r or s zero or >= n, Schnorr R.x >= p or s >= n: invalid;
//   * every verdict equals libsecp256k1's for the same row.
#pragma once

#include <cstddef>

#include "kernels/ecmult.hpp"
#include "kernels/sha256.hpp"
#include "shm_protocol/wire_format.hpp"

namespace sigverify::kernels {

// Record offsets, from the layouts of shm_protocol/wire_format.hpp (its
// records are plain byte arrays, so offsetof is the whole contract). Both
// kinds start with the 32-byte hash and put the key at byte 32; the
// signature follows the key (33 bytes compressed, 32 x-only).
constexpr int kRecHash = int(offsetof(wire::EcdsaRecord, hash));
constexpr int kRecKey = int(offsetof(wire::EcdsaRecord, point));
constexpr int kEcdsaSig = int(offsetof(wire::EcdsaRecord, sig));
constexpr int kSchnorrSig = int(offsetof(wire::SchnorrRecord, sig));
constexpr int kEcdsaRecordBytes = int(sizeof(wire::EcdsaRecord));
constexpr int kSchnorrRecordBytes = int(sizeof(wire::SchnorrRecord));
static_assert(offsetof(wire::SchnorrRecord, hash) == std::size_t(kRecHash), "one hash offset for both kinds");
static_assert(offsetof(wire::SchnorrRecord, xonly) == std::size_t(kRecKey), "one key offset for both kinds");
static_assert(kRecHash == 0 && kRecKey == 32 && kEcdsaSig == 65 && kSchnorrSig == 64, "the bridge's layout");
static_assert(kEcdsaRecordBytes == 129 && kSchnorrRecordBytes == 128, "the bridge's record sizes");

// p - n: r + n is a field element exactly when r < p - n.
SV_HD Sc p_minus_n() { return Sc{{0x402DA1722FC9BAEEull, 0x4551231950B75FC4ull, 1, 0}}; }

// Parses a 33-byte compressed key.
SV_HD bool parse_compressed_key(Ge& p, const u8* key) {
    const u8 prefix = key[0];
    if (prefix != 0x02 && prefix != 0x03) return false;
    Fe x;
    if (!fe_set_b32(x, key + 1)) return false;
    return ge_set_xo(p, x, prefix == 0x03);
}

// Inversion-free final check of ECDSA: R.x mod n == r, i.e. X == r Z^2 or,
// when r + n < p, X == (r + n) Z^2.
SV_HD bool ecdsa_check_rx(const Gej& R, const Sc& r) {
    if (R.infinity) return false;
    Fe xr;
    SV_UNROLL
    for (int i = 0; i < 4; ++i) xr.v[i] = r.v[i];  // r < n < p
    Fe z2, t;
    fe_sqr(z2, R.z);
    fe_mul(t, xr, z2);
    if (fe_equal(t, R.x)) return true;
    // r < p - n ?
    if (!limbs_gt(p_minus_n().v, r.v)) return false;
    Fe nfe;
    nfe.v[0] = kN0;
    nfe.v[1] = kN1;
    nfe.v[2] = kN2;
    nfe.v[3] = kN3;
    fe_add(xr, xr, nfe);
    fe_mul(t, xr, z2);
    return fe_equal(t, R.x);
}

// ---------------------------------------------------------------------------
// Batched verification: up to K records per call share one scalar inversion
// (ECDSA s^-1) or one field inversion (Schnorr R's affine y) through
// Montgomery's trick. On the device a thread verifies K rows this way; the
// host uses the same path, so the host tests exercise it row by row.
// ---------------------------------------------------------------------------
#ifndef SV_VERIFY_BATCH
#define SV_VERIFY_BATCH 4
#endif
constexpr int kVerifyBatch = SV_VERIFY_BATCH;
static_assert(kVerifyBatch >= 1 && kVerifyBatch <= 64, "batch size");

// Reads the (r, s) of an ECDSA record as 32-byte big-endian values.
SV_HD void ecdsa_sig_be(const u8* record, bool compact, u8* rb, u8* sb) {
    const u8* sig = record + kEcdsaSig;
    for (int i = 0; i < 32; ++i) {
        rb[i] = compact ? sig[i] : sig[31 - i];
        sb[i] = compact ? sig[32 + i] : sig[63 - i];
    }
}

// ok[i] = verdict of records[i], i < n <= K.
template <int K>
SV_HD void ecdsa_verify_batch(const u8* const* records, int n, bool compact, const GTableView& tab, bool* ok) {
    Ge p[K];
    Sc r[K], z[K], sinv[K], scratch[K];
    for (int i = 0; i < n; ++i) {
        u8 rb[32], sb[32];
        ecdsa_sig_be(records[i], compact, rb, sb);
        Sc s;
        bool good = !sc_set_b32(r[i], rb);
        good &= !sc_set_b32(s, sb);
        good = good && !sc_is_zero(r[i]) && !sc_is_zero(s);
        good = good && parse_compressed_key(p[i], records[i] + kRecKey);
        if (sc_is_high(s)) sc_neg(s, s);
        sc_set_b32(z[i], records[i] + kRecHash);
        ok[i] = good;
        sinv[i] = good ? s : sc_one();
    }
    sc_batch_inv(sinv, scratch, n);
    for (int i = 0; i < n; ++i) {
        if (!ok[i]) continue;
        Sc u1, u2;
        sc_mul(u1, z[i], sinv[i]);
        sc_mul(u2, r[i], sinv[i]);
        Gej R;
        ecmult(R, p[i], u2, u1, tab);
        ok[i] = ecdsa_check_rx(R, r[i]);
    }
}

template <int K>
SV_HD void schnorr_verify_batch(const u8* const* records, int n, const GTableView& tab, bool* ok) {
    Fe ry[K], rz[K], scratch[K];
    for (int i = 0; i < n; ++i) {
        const u8* rec = records[i];
        ok[i] = false;
        rz[i] = fe_one();
        ry[i] = fe_zero();
        Fe rx;
        if (!fe_set_b32(rx, rec + kSchnorrSig)) continue;
        Sc s;
        if (sc_set_b32(s, rec + kSchnorrSig + 32)) continue;
        Fe x;
        if (!fe_set_b32(x, rec + kRecKey)) continue;
        Ge p;
        if (!ge_set_xo(p, x, false)) continue;
        u8 eb[32];
        bip340_challenge(eb, rec + kSchnorrSig, rec + kRecKey, rec + kRecHash);
        Sc e;
        sc_set_b32(e, eb);
        sc_neg(e, e);
        Gej R;
        ecmult(R, p, e, s, tab);  // s G - e P
        if (R.infinity || !gej_eq_x(R, rx)) continue;
        ok[i] = true;  // pending the y parity
        rz[i] = R.z;
        ry[i] = R.y;
    }
    fe_batch_inv(rz, scratch, n);
    for (int i = 0; i < n; ++i) {
        if (!ok[i]) continue;
        Fe zi3, y;
        fe_sqr(zi3, rz[i]);
        fe_mul(zi3, zi3, rz[i]);
        fe_mul(y, ry[i], zi3);
        ok[i] = !fe_is_odd(y);
    }
}

// One record: the batch path with K = 1.
// record: an EcdsaRecord (129 bytes); compact selects r BE || s BE, else the
// opaque encoding r LE || s LE.
SV_HD bool ecdsa_verify_record(const u8* record, bool compact, const GTableView& tab) {
    bool ok = false;
    ecdsa_verify_batch<1>(&record, 1, compact, tab, &ok);
    return ok;
}

// record: a SchnorrRecord (128 bytes).
SV_HD bool schnorr_verify_record(const u8* record, const GTableView& tab) {
    bool ok = false;
    schnorr_verify_batch<1>(&record, 1, tab, &ok);
    return ok;
}

}  // namespace sigverify::kernels
