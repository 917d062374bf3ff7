// SPDX-License-Identifier: MIT
// What lanes.cpp calls in lanes_ifma8.cpp (plain types only: no AVX-512
// type crosses between the two files).
#pragma once

#include "kernels/lanes/lanes.hpp"

namespace sigverify::kernels::lanes {

void field_op8_ifma(FieldOp op, const Fe* a, const Fe* b, Fe* r, bool* ok);
void ecmult8_ifma(const Ecmult8In& in, Ecmult8Out& out);
// The BIP-340 challenges (tagged hash of R.x || key x || msg) of eight
// SchnorrRecords, big-endian, eight SHA-256 at once.
void bip340_challenge8_ifma(const u8* const records[8], u8 out[8][32]);
void group_op8_ifma(GroupOp op, const Gej* a, const Ge* b, Gej* r, bool* degenerate);

}  // namespace sigverify::kernels::lanes
