// SPDX-License-Identifier: MIT
// The 4-lane width of lanes_ifma.hpp: ladder_ifma.hpp on 256-bit registers,
// each call of eight as two halves of four. This file alone is compiled
// with -mavx512f -mavx512dq -mavx512ifma -mavx512vl (kernels/CMakeLists.txt);
// lanes.cpp calls in only after cpu_has_ifma4().
#include "kernels/lanes/ladder_ifma.hpp"
#include "kernels/lanes/vec_ifma4.hpp"

namespace sigverify::kernels::lanes {

using V4 = VecIfma4;

void field_op8_ifma4(FieldOp op, const Fe* a, const Fe* b, Fe* r, bool* ok) { ifma::field_op8<V4>(op, a, b, r, ok); }
void ecmult8_ifma4(const Ecmult8In& in, Ecmult8Out& out) { ifma::ecmult8<V4>(in, out); }
void bip340_challenge8_ifma4(const u8* const records[8], u8 out[8][32]) { ifma::bip340_challenge8<V4>(records, out); }
void group_op8_ifma4(GroupOp op, const Gej* a, const Ge* b, Gej* r, bool* degenerate) {
    ifma::group_op8<V4>(op, a, b, r, degenerate);
}

}  // namespace sigverify::kernels::lanes
