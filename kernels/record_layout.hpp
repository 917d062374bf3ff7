// SPDX-License-Identifier: MIT
// Where the kernels read a wire-format record: the offsets of its fields,
// taken from the layouts of sigverify/shm_protocol/wire_format.hpp (its records are
// plain byte arrays, so offsetof is the whole contract). Every path that
// parses a record (the GPU ladder, its host twin, the exact path) uses these
// names and no literal offset; the static_asserts stop the build when the
// wire format moves a field.
#pragma once

#include <cstddef>

#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::kernels {

// Both kinds start with the 32-byte hash and put the key at byte 32; the
// signature follows the key (33 bytes compressed, 32 x-only).
constexpr int kRecHash = int(offsetof(wire::EcdsaRecord, hash));
constexpr int kRecKey = int(offsetof(wire::EcdsaRecord, point));
constexpr int kEcdsaSig = int(offsetof(wire::EcdsaRecord, sig));
constexpr int kSchnorrSig = int(offsetof(wire::SchnorrRecord, sig));
constexpr int kEcdsaRecordBytes = int(sizeof(wire::EcdsaRecord));
constexpr int kSchnorrRecordBytes = int(sizeof(wire::SchnorrRecord));
static_assert(offsetof(wire::SchnorrRecord, hash) == std::size_t(kRecHash), "one hash offset for both kinds");
static_assert(offsetof(wire::SchnorrRecord, xonly) == std::size_t(kRecKey), "one key offset for both kinds");
static_assert(sizeof(wire::EcdsaRecord::point) == 33 && sizeof(wire::SchnorrRecord::xonly) == 32,
              "compressed and x-only keys");
static_assert(sizeof(wire::EcdsaRecord::sig) == 64 && sizeof(wire::SchnorrRecord::sig) == 64,
              "64-byte signatures: two 32-byte values");
static_assert(kEcdsaSig == kRecKey + 33 && kSchnorrSig == kRecKey + 32, "the signature follows the key");
static_assert(kEcdsaRecordBytes == kEcdsaSig + 64 && kSchnorrRecordBytes == kSchnorrSig + 64,
              "the signature ends the record");
static_assert(kEcdsaRecordBytes == int(wire::kEcdsaRecordSize) && kSchnorrRecordBytes == int(wire::kSchnorrRecordSize),
              "the record sizes the rings use");

}  // namespace sigverify::kernels
