// SPDX-License-Identifier: MIT
// The CPU lanes verifier's entry points (docs/kernels.md, "CPU lanes"): which
// lane width this CPU runs (chosen at run time, SIGVERIFY_LANES forces one),
// and the field primitives over eight elements at once that the tests prove
// against kernels/field.hpp. Plain C++: callers need no AVX-512 flags; the
// IFMA code is in lanes_ifma8.cpp (512-bit registers, eight lanes) and
// lanes_ifma4.cpp (256-bit, four lanes: each call of eight runs as two
// halves), each compiled alone with its flags and entered only when the CPU
// has them.
#pragma once

#include <string_view>

#include "kernels/exact_group.hpp"
#include "kernels/field.hpp"

namespace sigverify::kernels::lanes {

enum class Width { scalar, ifma8, ifma4 };

// Whether this CPU has AVX-512 F, DQ and IFMA (what lanes_ifma8.cpp needs).
bool cpu_has_ifma8();
// Whether it has AVX-512 F, DQ, IFMA and VL (what lanes_ifma4.cpp needs).
bool cpu_has_ifma4();
// Whether this CPU runs width w (scalar: everywhere).
bool cpu_runs(Width w);

// The width to run: SIGVERIFY_LANES=ifma8|ifma4|scalar if set (an IFMA
// width only where the CPU has it; otherwise falls back to scalar), else the
// widest the CPU has (ifma8 before ifma4).
Width chosen_width();

std::string_view width_name(Width w);

// Parses a SIGVERIFY_LANES value; false for an unknown name.
bool parse_width(std::string_view name, Width& out);

// Field primitives over 8 elements (inputs fully reduced, outputs fully
// reduced), at width w; an IFMA width the CPU lacks runs the scalar one.
// chain: 64 rounds of every operation on unreduced (weak) intermediates
// (field_chain below), to prove the limb bounds hold through compositions.
enum class FieldOp { mul, sqr, add, sub, neg, inv, sqrt_ok, chain };
// r[i] = op(a[i], b[i]); for sqrt_ok r[i] is the root and ok[i] whether a[i]
// is a square (ok may be null for other ops).
// The chain op, for any F with the fe_* names (Fe here, FeN<V> in the lanes).
template <class F, class Ops>
void field_chain(F& x, F& y, const Ops& ops) {
    for (int round = 0; round < 64; ++round) {
        F t, u, v;
        ops.mul(t, x, y);
        ops.sub(u, t, x);
        ops.add(v, u, y);
        ops.sqr(x, v);
        ops.mul3(u, t);
        ops.sub(x, x, u);
        ops.neg(u, v);
        ops.sub(y, u, x);
    }
}

void field_op8(Width w, FieldOp op, const Fe* a, const Fe* b, Fe* r, bool* ok);

// Point operations over 8 points at width w: dbl r = 2a; add_ge r = a + b
// (b affine, not infinity). degenerate[i] says lane i met equal or opposite
// points (an add_ge with neither a infinity nor a != +-b); r[i] is then
// unspecified.
enum class GroupOp { dbl, add_ge };
void group_op8(Width w, GroupOp op, const Gej* a, const Ge* b, Gej* r, bool* degenerate);

// The verdicts of verify32.hpp: 0 invalid, 1 valid, 2 recheck (the lanes
// met a case they do not decide; the exact path decides it, resolve_verdict32).
// ecdsa_verify8: the verdicts of eight ECDSA records (EcdsaRecord bytes;
// compact: r BE || s BE, else opaque r LE || s LE). Scalar width: the exact
// path's verdict, never recheck.
void ecdsa_verify8(Width w, const u8* const records[8], bool compact, u8 verdicts[8]);
// schnorr_verify8: the verdicts of eight BIP-340 records (SchnorrRecord
// bytes: message, x-only key, R.x || s, all big-endian): R = s G - e P with
// P the key's even-y lift and e the tagged challenge hash, valid where R is
// not infinity, R.x == r and R.y is even. Scalar width: the exact path's
// verdict, never recheck.
void schnorr_verify8(Width w, const u8* const records[8], u8 verdicts[8]);

// What the ladder gets, eight lanes a call: key x coordinates and wanted y parities
// (the lanes lift them: a square root each), and per lane the digits (most
// significant first) of four 128-bit scalars: the key's scalar na split by
// the GLV endomorphism, na = k1 + k2 lambda (signs apart: neg1, neg2), in
// 32 four-bit digits each, and the generator's ng in binary halves ng = g1
// + g2 2^128, in kGWindows digits of kGWindow bits each. It returns R = na P
// + ng G in Jacobian form per lane (after 124 doublings, 64 additions from
// the key's tables and 2 kGWindows from G's) and the lanes that met a
// degenerate addition.
// Limb i (0..4 x, 5..9 y, 52-bit limbs) of the affine multiples 0 ..
// kGEntries - 1 of a base point (entry 0: zeros, never added), built once by
// lanes.cpp: g_table8() of G, g128_table8() of 2^128 G.
constexpr int kGWindow = 8;
constexpr int kGEntries = 1 << kGWindow;
constexpr int kGWindows = 128 / kGWindow;
static_assert(kGWindow % 4 == 0 && 128 % kGWindow == 0, "G digits end on the ladder's four-bit windows");
struct GTable8 {
    alignas(64) u64 e[kGEntries][10];
};
const GTable8& g_table8();
const GTable8& g128_table8();

struct Ecmult8In {
    const GTable8* g;
    const GTable8* g128;
    Fe px[8];
    bool odd[8];
    bool neg1[8], neg2[8];     // k1, k2 stand for -k1, -k2
    u8 dk[2][32][8];           // [k1, k2][window][lane]
    u8 dg[2][kGWindows][8];    // [g1, g2][window][lane]
    bool affine = false;       // also return R in affine form (one inversion in the lanes)
};
struct Ecmult8Out {
    Gej r[8];
    Fe ax[8], ay[8];    // R in affine form (fully reduced; unspecified for infinity)
    bool degenerate[8];
    bool off_curve[8];  // x^3 + 7 is not a square: the key does not parse
};

}  // namespace sigverify::kernels::lanes
