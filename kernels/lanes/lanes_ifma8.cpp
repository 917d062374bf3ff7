// SPDX-License-Identifier: MIT
// The 8-lane width of lanes_ifma.hpp: ladder_ifma.hpp on 512-bit registers.
// This file alone is compiled with -mavx512f -mavx512dq -mavx512ifma
// (kernels/CMakeLists.txt); lanes.cpp calls in only after cpu_has_ifma8().
#include "kernels/lanes/ladder_ifma.hpp"
#include "kernels/lanes/vec_ifma8.hpp"

namespace sigverify::kernels::lanes {

using V8 = VecIfma8;

void field_op8_ifma8(FieldOp op, const Fe* a, const Fe* b, Fe* r, bool* ok) { ifma::field_op8<V8>(op, a, b, r, ok); }
void ecmult8_ifma8(const Ecmult8In& in, Ecmult8Out& out) { ifma::ecmult8<V8>(in, out); }
void bip340_challenge8_ifma8(const u8* const records[8], u8 out[8][32]) { ifma::bip340_challenge8<V8>(records, out); }
void group_op8_ifma8(GroupOp op, const Gej* a, const Ge* b, Gej* r, bool* degenerate) {
    ifma::group_op8<V8>(op, a, b, r, degenerate);
}

}  // namespace sigverify::kernels::lanes
