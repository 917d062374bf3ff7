// SPDX-License-Identifier: MIT
// The exact path: ECDSA and BIP-340 verification of one wire-format record
// with complete formulas (64-bit-limb field fully reduced after every
// operation, group law with every special case, exact_ecmult.hpp). It decides
// the rows the GPU ladder hands back (kVerdictRecheck, verify32.hpp) and runs
// on the host only: the device never compiles it.
//
// Verdict rules, the reference's (reference/reference_verifier.hpp):
//   * ECDSA high-S is VALID (s is normalized to low-S in a local copy);
//   * a key that does not parse (prefix not 02/03, x >= p, not on the curve),
//     r or s zero or >= n, Schnorr R.x >= p or s >= n: invalid;
//   * every verdict equals libsecp256k1's for the same row.
#pragma once

#include "kernels/exact_ecmult.hpp"
#include "kernels/record_layout.hpp"
#include "kernels/scalar32.hpp"
#include "kernels/sha256.hpp"

namespace sigverify::kernels {

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
    if (!limbs_gt(sc_p_minus_n().v, r.v)) return false;  // r + n >= p
    fe_add(xr, xr, Fe{{kN0, kN1, kN2, kN3}});
    fe_mul(t, xr, z2);
    return fe_equal(t, R.x);
}

// record: an EcdsaRecord (129 bytes); compact selects r BE || s BE, else the
// opaque encoding r LE || s LE.
inline bool exact_ecdsa_verify(const u8* record, bool compact, const GTableView& tab) {
    const ByteOrder order = compact ? ByteOrder::big : ByteOrder::little;
    Sc r, s, z;
    bool good = !sc_set_bytes(r, record + kEcdsaSig, order);
    good &= !sc_set_bytes(s, record + kEcdsaSig + 32, order);
    good = good && !sc_is_zero(r) && !sc_is_zero(s);
    Ge p;
    good = good && parse_compressed_key(p, record + kRecKey);
    if (!good) return false;
    if (sc_is_high(s)) sc_neg(s, s);
    sc_set_bytes(z, record + kRecHash, ByteOrder::big);  // the hash is reduced silently
    const Sc sinv = sc32_inv(s);
    Sc u1, u2;
    sc_mul(u1, z, sinv);
    sc_mul(u2, r, sinv);
    Gej R;
    ecmult(R, p, u2, u1, tab);
    return ecdsa_check_rx(R, r);
}

// record: a SchnorrRecord (128 bytes).
inline bool exact_schnorr_verify(const u8* record, const GTableView& tab) {
    Fe rx, x;
    Sc s, e;
    if (!fe_set_b32(rx, record + kSchnorrSig)) return false;
    if (sc_set_bytes(s, record + kSchnorrSig + 32, ByteOrder::big)) return false;
    if (!fe_set_b32(x, record + kRecKey)) return false;
    Ge p;
    if (!ge_set_xo(p, x, false)) return false;
    u8 eb[32];
    bip340_challenge(eb, record + kSchnorrSig, record + kRecKey, record + kRecHash);
    sc_set_bytes(e, eb, ByteOrder::big);
    sc_neg(e, e);
    Gej R;
    ecmult(R, p, e, s, tab);  // s G - e P
    if (R.infinity || !gej_eq_x(R, rx)) return false;
    Fe zi, zi3, y;
    fe_inv(zi, R.z);
    fe_sqr(zi3, zi);
    fe_mul(zi3, zi3, zi);
    fe_mul(y, R.y, zi3);
    return !fe_is_odd(y);
}

}  // namespace sigverify::kernels
