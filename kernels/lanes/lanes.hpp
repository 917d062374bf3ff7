// SPDX-License-Identifier: MIT
// The CPU lanes verifier's entry points (docs/kernels.md, "CPU lanes"): which
// lane width this CPU runs (chosen at run time, SIGVERIFY_LANES forces one),
// and the field primitives over eight elements at once that the tests prove
// against kernels/field.hpp. Plain C++: callers need no AVX-512 flags; the
// IFMA code is in lanes_ifma8.cpp, compiled alone with those flags and
// entered only when the CPU has them.
#pragma once

#include <string_view>

#include "kernels/exact_group.hpp"
#include "kernels/field.hpp"

namespace sigverify::kernels::lanes {

enum class Width { scalar, ifma8 };

// Whether this CPU has AVX-512 F, DQ and IFMA (what lanes_ifma8.cpp needs).
bool cpu_has_ifma8();

// The width to run: SIGVERIFY_LANES=ifma8|scalar if set (ifma8 only where
// the CPU has it; otherwise falls back to scalar), else the widest the CPU has.
Width chosen_width();

std::string_view width_name(Width w);

// Parses a SIGVERIFY_LANES value; false for an unknown name.
bool parse_width(std::string_view name, Width& out);

// Field primitives over 8 elements (inputs fully reduced, outputs fully
// reduced), at width w; ifma8 must only be asked for where cpu_has_ifma8().
// chain: 64 rounds of every operation on unreduced (weak) intermediates
// (field_chain below), to prove the limb bounds hold through compositions.
enum class FieldOp { mul, sqr, add, sub, neg, inv, sqrt_ok, chain };
// r[i] = op(a[i], b[i]); for sqrt_ok r[i] is the root and ok[i] whether a[i]
// is a square (ok may be null for other ops).
// The chain op, for any F with the fe_* names (Fe here, Fe8 in the lanes).
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

}  // namespace sigverify::kernels::lanes
