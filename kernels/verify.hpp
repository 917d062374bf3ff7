// ECDSA and BIP-340 verification of one wire-format record, with the
// reference's verdict rules (reference/reference_verifier.hpp):
//   * ECDSA high-S is VALID (s is normalized to low-S in a local copy);
//   * a key that does not parse (prefix not 02/03, x >= p, not on the curve),
//     r or s zero or >= n, Schnorr R.x >= p or s >= n: invalid;
//   * every verdict equals libsecp256k1's for the same row.
#pragma once

#include "kernels/ecmult.hpp"
#include "kernels/sha256.hpp"

namespace sigverify::kernels {

// Record offsets (shm_protocol/wire_format.hpp pins the same numbers; the
// device code does not include that header).
constexpr int kRecHash = 0;
constexpr int kRecKey = 32;
constexpr int kEcdsaSig = 65;
constexpr int kSchnorrSig = 64;
constexpr int kEcdsaRecordBytes = 129;
constexpr int kSchnorrRecordBytes = 128;

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

// ECDSA with the signature already decoded to (r, s) as 32-byte big-endian.
SV_HD bool ecdsa_verify_parts(const u8* hash32, const u8* key33, const u8* r32, const u8* s32,
                              const GTableView& tab) {
    Sc r, s;
    if (sc_set_b32(r, r32) || sc_set_b32(s, s32)) return false;
    if (sc_is_zero(r) || sc_is_zero(s)) return false;
    Ge p;
    if (!parse_compressed_key(p, key33)) return false;
    if (sc_is_high(s)) sc_neg(s, s);
    Sc z;
    sc_set_b32(z, hash32);  // reduced mod n, overflow allowed
    Sc sinv, u1, u2;
    sc_inv(sinv, s);
    sc_mul(u1, z, sinv);
    sc_mul(u2, r, sinv);
    Gej R;
    ecmult(R, p, u2, u1, tab);
    return ecdsa_check_rx(R, r);
}

// record: an EcdsaRecord (129 bytes); compact selects r BE || s BE, else the
// opaque encoding r LE || s LE.
SV_HD bool ecdsa_verify_record(const u8* record, bool compact, const GTableView& tab) {
    u8 rb[32], sb[32];
    const u8* sig = record + kEcdsaSig;
    if (compact) {
        for (int i = 0; i < 32; ++i) {
            rb[i] = sig[i];
            sb[i] = sig[32 + i];
        }
    } else {
        for (int i = 0; i < 32; ++i) {
            rb[i] = sig[31 - i];
            sb[i] = sig[63 - i];
        }
    }
    return ecdsa_verify_parts(record + kRecHash, record + kRecKey, rb, sb, tab);
}

// Affine y parity of a finite Jacobian point: y = Y / Z^3.
SV_HD bool gej_y_is_odd(const Gej& a) {
    Fe zi, zi3, y;
    fe_inv(zi, a.z);
    fe_sqr(zi3, zi);
    fe_mul(zi3, zi3, zi);
    fe_mul(y, a.y, zi3);
    return fe_is_odd(y);
}

// BIP-340, record: a SchnorrRecord (128 bytes).
SV_HD bool schnorr_verify_record(const u8* record, const GTableView& tab) {
    const u8* msg = record + kRecHash;
    const u8* px = record + kRecKey;
    const u8* sig = record + kSchnorrSig;
    Fe rx;
    if (!fe_set_b32(rx, sig)) return false;
    Sc s;
    if (sc_set_b32(s, sig + 32)) return false;
    Fe x;
    if (!fe_set_b32(x, px)) return false;
    Ge p;
    if (!ge_set_xo(p, x, false)) return false;
    u8 eb[32];
    bip340_challenge(eb, sig, px, msg);
    Sc e;
    sc_set_b32(e, eb);
    sc_neg(e, e);
    Gej R;
    ecmult(R, p, e, s, tab);  // s G - e P
    if (R.infinity) return false;
    if (!gej_eq_x(R, rx)) return false;
    return !gej_y_is_odd(R);
}

}  // namespace sigverify::kernels
