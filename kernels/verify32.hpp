// SPDX-License-Identifier: MIT
// The GPU kernel's row: ECDSA and BIP-340 verification of one wire-format
// record with the reference's verdict rules (exact_verify.hpp lists them),
// the same code on the device and in the host twin.
//
// A row's verdict is kVerdictInvalid, kVerdictValid, or kVerdictRecheck when
// an addition of the uniform ladder met a special case (equal or opposite
// points) that its formula does not cover; the caller then verifies that row
// with the exact path (exact_verify.hpp, on the host). No honest row ever
// needs it; a crafted one costs the attacker one CPU verification.
#pragma once

#include "kernels/batch_inverse32.hpp"
#include "kernels/ecmult32.hpp"
#include "kernels/record_layout.hpp"
#include "kernels/sha256.hpp"

namespace sigverify::kernels {

constexpr u8 kVerdictInvalid = 0;
constexpr u8 kVerdictValid = 1;
constexpr u8 kVerdictRecheck = 2;
// Between the two kernels only (never a result): a BIP-340 row whose x
// matched, its R's Y and Z parked for the parity step (finish_parity32),
// which replaces it by one of the three above. Whoever reads a verdict
// treats any value above kVerdictValid as a recheck (resolve_verdict32).
constexpr u8 kVerdictParity = 3;

// Lifts x to the point with the given y parity; false when x is not on the
// curve.
SV_HD bool aff32_lift_x(Aff32& r, const Fe32& x, bool odd) {
    Fe32 c;
    c = fe32_mul_call(fe32_sqr_call(x), x);
    fe32_add(c, c, Fe32{{7, 0, 0, 0, 0, 0, 0, 0}});
    const Fe32Root y = fe32_sqrt(c);
    if (!y.is_square) return false;
    fe32_normalize(r.y, y.root);
    fe32_cneg(r.y, r.y, 0u - u32(((r.y.v[0] & 1u) != 0) != odd));
    r.x = x;
    return true;
}

// X == a Z^2 (mod p): the affine x of (X, Y, Z) equals a.
SV_HD bool pt32_x_equals(const Pt32& r, const Fe32& a) {
    Fe32 z2, t;
    z2 = fe32_sqr_call(r.z);
    t = fe32_mul_call(a, z2);
    return fe32_equal(t, r.x);
}

// What a row asks of the ladder: R = na P + ng G, then R's affine x must be
// x_target (or x_alt when has_alt: ECDSA's r + n), and for BIP-340 y even.
struct Job32 {
    Aff32 p;
    Sc na, ng;
    Fe32 x_target, x_alt;
    bool has_alt, even_y;
};

// The x targets of a record that prepare_*32 accepted, from the record's
// bytes: x_target and x_alt are read again after the ladder rather than kept
// through it (16 registers live across every window otherwise).
SV_HD void x_targets32(Job32& j, const u8* record, bool schnorr, bool compact) {
    if (schnorr) {
        fe32_set_b32(j.x_target, record + kSchnorrSig);  // < p: prepare_schnorr32 checked it
        j.x_alt = j.x_target;
        j.has_alt = false;
        j.even_y = true;
        return;
    }
    Sc r;
    sc_set_bytes(r, record + kEcdsaSig, compact ? ByteOrder::big : ByteOrder::little);
    // R.x mod n == r: x == r, or x == r + n when r + n < p
    j.x_target = fe32_from_fe(Fe{{r.v[0], r.v[1], r.v[2], r.v[3]}});
    j.has_alt = limbs_gt(sc_p_minus_n().v, r.v);
    fe32_add(j.x_alt, j.x_target, fe32_from_fe(Fe{{kN0, kN1, kN2, kN3}}));
    j.even_y = false;
}

// What an ECDSA row puts into its block's batch inversion
// (batch_inverse32.hpp): s when 1 <= s < n; 1 for any other s, whose row
// prepare_ecdsa32 refuses (the block's product must stay nonzero).
SV_HD Sc ecdsa_batch_value32(const u8* record, bool compact) {
    Sc s;
    const bool over = sc_set_bytes(s, record + kEcdsaSig + 32, compact ? ByteOrder::big : ByteOrder::little);
    return over || sc_is_zero(s) ? sc_one() : s;
}

// The block's inversion checked on the row's own value: sinv must be the
// inverse of ecdsa_batch_value32 (1 for a row refused anyway). A wrong one (a
// defect, or a fault of the device) becomes 0: na = ng = 0, so R is infinity,
// which the ladder reaches only through a flagged addition — the row is a
// recheck, never a verdict (and no flag stays live across the row: a flag
// made the 168-register sm_120 build spill).
SV_HD Sc ecdsa_checked_inverse32(const u8* record, bool compact, const Sc& sinv) {
    return sc_equal(sc32_mul_call(ecdsa_batch_value32(record, compact), sinv), sc_one()) ? sinv : sc_zero();
}

// ptab.reload_sinv(): 1/s mod n for the row's s, from the block's batch
// inversion (any value when s is out of range: the row is refused before it
// is read).
SV_HD bool prepare_ecdsa32(Job32& j, const u8* record, bool compact, const PTable32& ptab) {
    const ByteOrder order = compact ? ByteOrder::big : ByteOrder::little;
    // the key first: nothing of the signature is live across its lift
    const u8* key = record + kRecKey;
    Fe32 kx;
    bool good = (key[0] == 0x02 || key[0] == 0x03) && fe32_set_b32(kx, key + 1);
    good = good && aff32_lift_x(j.p, kx, key[0] == 0x03);
    Sc r, s, z;
    good &= !sc_set_bytes(r, record + kEcdsaSig, order);
    good &= !sc_set_bytes(s, record + kEcdsaSig + 32, order);
    good = good && !sc_is_zero(r) && !sc_is_zero(s);
    if (!good) return false;
    sc_set_bytes(z, record + kRecHash, ByteOrder::big);  // the hash is reduced silently
    // high-S is valid: (r, n - s) verifies iff (r, s) does
    const Sc sinv = ptab.reload_sinv();
    j.ng = sc32_mul_call(z, sinv);
    j.na = sc32_mul_call(r, sinv);
    x_targets32(j, record, false, compact);
    return true;
}

SV_HD bool prepare_schnorr32(Job32& j, const u8* record) {
    const u8* sig = record + kSchnorrSig;
    Fe32 px;
    if (!fe32_set_b32(j.x_target, sig) || sc_set_bytes(j.ng, sig + 32, ByteOrder::big) || !fe32_set_b32(px, record + kRecKey))
        return false;
    if (!aff32_lift_x(j.p, px, false)) return false;
    u32 h[8];
    bip340_challenge_words(h, sig, record + kRecKey, record + kRecHash);
    const u64 e[4] = {(u64(h[6]) << 32) | h[7], (u64(h[4]) << 32) | h[5], (u64(h[2]) << 32) | h[3],
                      (u64(h[0]) << 32) | h[1]};
    sc_reduce_once(j.na, e, 0);  // e = digest mod n
    sc_neg(j.na, j.na);          // R = s G - e P
    x_targets32(j, record, true, false);
    return true;
}

// y = Y / Z^3 must be even; zi is the block's 1/Z for this row, checked on
// the row's own Z first (a wrong inverse is a recheck, never a verdict).
SV_HD u8 finish_parity32(const Fe32& y, const Fe32& z, const Fe32& zi) {
    if (!fe32_equal(fe32_mul_call(z, zi), fe32_one())) return kVerdictRecheck;
    Fe32 zi3, ya;
    zi3 = fe32_mul_call(fe32_sqr_call(zi), zi);
    ya = fe32_mul_call(y, zi3);
    return fe32_is_odd(ya) ? kVerdictInvalid : kVerdictValid;
}

// Words of a parked R (Y, then Z): word w at park[w * kScratchStride].
constexpr int kParityParkWords = 16;

// Whether BIP-340's parity step runs in the second kernel (parity_kernel:
// the row's global scratch can hold its parked Y and Z), or in the row
// (finish32<false>: fe32_inv of its own Z), as a placement with less global
// scratch does (`allshared`, all of it in shared memory). gpu_verifier.cu
// launches by it; the host twin runs the parked form, and
// test_kernel_batch_inverse holds the in-row form to it and to libsecp256k1.
SV_HD constexpr bool parity_kernel_runs(ScratchPlacement p) { return global_words_per_thread(p) >= kParityParkWords; }

// The row's end after the ladder. kPark (BIP-340 with the parity step in the
// second kernel): a row that needs y's parity parks Y and Z and answers
// kVerdictParity, so that the block's rows share one inversion of Z there;
// otherwise the row inverts Z itself.
template <bool kPark>
SV_HD u8 finish32(const Job32& j, const Pt32& R, u32* park) {
    const bool x_ok = pt32_x_equals(R, j.x_target) || (j.has_alt && pt32_x_equals(R, j.x_alt));
    if (!x_ok) return kVerdictInvalid;
    if (!j.even_y) return kVerdictValid;
    if constexpr (kPark) {
        SV_UNROLL
        for (int w = 0; w < 8; ++w) {
            park[u32(w) * kScratchStride] = R.y.v[w];
            park[u32(8 + w) * kScratchStride] = R.z.v[w];
        }
        return kVerdictParity;
    } else {
        (void)park;
        return finish_parity32(R.y, R.z, fe32_inv(R.z));  // one inversion, only for rows that got here
    }
}

// A parked R's Y and Z.
SV_HD void parity_unpark32(const u32* park, Fe32& y, Fe32& z) {
    SV_UNROLL
    for (int w = 0; w < 8; ++w) {
        y.v[w] = park[u32(w) * kScratchStride];
        z.v[w] = park[u32(8 + w) * kScratchStride];
    }
}

// What a row puts into its block's inversion of Z (batch_inverse32.hpp): Z
// when it waits for the parity and Z is not 0 (infinity only comes of a
// flagged addition), else 1.
SV_HD Fe32 parity_value32(bool waits, const Fe32& z) { return waits && !fe32_is_zero(z) ? z : fe32_one(); }

// The parity step of a block (the second kernel, and the host twin's):
// every thread takes part (barriers). waits(t): thread t's row answered
// kVerdictParity; load(t, y, z) reads its parked Y and Z; out(t, verdict)
// its final verdict. words: sc_tree_words of memory for the tree.
template <class Block, class Waits, class Load, class Out>
SV_HD void parity_block32(const Block& block, u32* words, Waits waits, Load load, Out out) {
    batch_inverse(
        block, FeTree{words, sc_tree_leaves(block.threads())},
        [&](u32 t) {
            Fe32 y, z = fe32_zero();
            if (waits(t)) load(t, y, z);
            return parity_value32(waits(t), z);
        },
        [&](u32 t, const Fe32& zi) {
            if (!waits(t)) return;
            Fe32 y, z;
            load(t, y, z);
            out(t, finish_parity32(y, z, zi));
        });
}

// One row, either kind: a single call site of the ladder (one copy of its
// code in the kernel). An ECDSA row's 1/s (the inverse of
// ecdsa_batch_value32) must be in ptab (store_sinv); BIP-340 rows need none.
// kPark: finish32's; park: the row's kParityParkWords words for it.
template <bool kPark = false>
SV_HD u8 verify_row32(const u8* record, bool schnorr, bool compact, const PTable32& ptab, const GTable32& gtab,
                      u32* park = nullptr) {
    Job32 j;
    const bool parsed = schnorr ? prepare_schnorr32(j, record) : prepare_ecdsa32(j, record, compact, ptab);
    if (!parsed) return kVerdictInvalid;
    u32 degenerate = 0;
    Pt32 R;
    ecmult32(R, j.p, j.na, j.ng, ptab, gtab, degenerate);
    if (degenerate) return kVerdictRecheck;
    Job32 t;
    x_targets32(t, record, schnorr, compact);
    return finish32<kPark>(t, R, park);
}

}  // namespace sigverify::kernels
