// SPDX-License-Identifier: MIT
// What lanes.cpp calls in lanes_ifma8.cpp and lanes_ifma4.cpp (plain types
// only: no vector type crosses between the files). Both take lanes.hpp's
// eight elements or records a call; the 4-lane width runs them as two halves.
#pragma once

#include "kernels/lanes/lanes.hpp"

namespace sigverify::kernels::lanes {

void field_op8_ifma8(FieldOp op, const Fe* a, const Fe* b, Fe* r, bool* ok);
void ecmult8_ifma8(const Ecmult8In& in, Ecmult8Out& out);
// The BIP-340 challenges (tagged hash of R.x || key x || msg) of eight
// SchnorrRecords, big-endian, eight SHA-256 at once.
void bip340_challenge8_ifma8(const u8* const records[8], u8 out[8][32]);
void group_op8_ifma8(GroupOp op, const Gej* a, const Ge* b, Gej* r, bool* degenerate);

void field_op8_ifma4(FieldOp op, const Fe* a, const Fe* b, Fe* r, bool* ok);
void ecmult8_ifma4(const Ecmult8In& in, Ecmult8Out& out);
void bip340_challenge8_ifma4(const u8* const records[8], u8 out[8][32]);
void group_op8_ifma4(GroupOp op, const Gej* a, const Ge* b, Gej* r, bool* degenerate);

}  // namespace sigverify::kernels::lanes
