// SPDX-License-Identifier: MIT
// 256-bit values as four 64-bit limbs, v[0] the least significant: what the
// exact path's field (field.hpp, mod p) and the scalars (scalar.hpp, mod n)
// do alike, written once. Both moduli m lie just below 2^256, so each is
// given here by its complement k = 2^256 - m (four limbs): v >= m exactly
// when v + k carries out of 256 bits, and v - m is then v + k mod 2^256.
// Nothing branches on the values: selections are masks.
#pragma once

#include "kernels/sv_hd.hpp"

namespace sigverify::kernels {

// A 256-bit constant (a modulus' complement k), returned by value from
// functions, not held in a namespace-scope array, so that host and device
// code read the same definition.
struct U256 {
    u64 v[4];
};

SV_HD void u256_copy(u64 dst[4], const u64 src[4]) {
    SV_UNROLL
    for (int i = 0; i < 4; ++i) dst[i] = src[i];
}

SV_HD bool u256_is_zero(const u64 v[4]) { return (v[0] | v[1] | v[2] | v[3]) == 0; }

SV_HD bool u256_equal(const u64 a[4], const u64 b[4]) {
    return ((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a[3] ^ b[3])) == 0;
}

// t = (v + k) mod 2^256; returns the carry out: 1 exactly when v >= m.
SV_HD u64 u256_add_complement(u64 t[4], const u64 v[4], const U256& k) {
    u64 c = addc(v[0], k.v[0], 0, t[0]);
    c = addc(v[1], k.v[1], c, t[1]);
    c = addc(v[2], k.v[2], c, t[2]);
    return addc(v[3], k.v[3], c, t[3]);
}

// v >= m.
SV_HD bool u256_ge_modulus(const u64 v[4], const U256& k) {
    u64 t[4];
    return u256_add_complement(t, v, k) != 0;
}

// r = (v + carry * 2^256) mod m for a value < 2m (carry 0 or 1): one
// conditional subtraction of m, as an addition of k.
SV_HD void u256_reduce_once(u64 r[4], const u64 v[4], u64 carry, const U256& k) {
    u64 t[4];
    const u64 mask = 0 - (u256_add_complement(t, v, k) | carry);  // all ones when the value is >= m
    SV_UNROLL
    for (int i = 0; i < 4; ++i) r[i] = (t[i] & mask) | (v[i] & ~mask);
}

// r = (a + b) mod m for a, b < m.
SV_HD void u256_add_mod(u64 r[4], const u64 a[4], const u64 b[4], const U256& k) {
    u64 s[4];
    u64 c = addc(a[0], b[0], 0, s[0]);
    c = addc(a[1], b[1], c, s[1]);
    c = addc(a[2], b[2], c, s[2]);
    c = addc(a[3], b[3], c, s[3]);
    u256_reduce_once(r, s, c, k);
}

// How a 32-byte value is stored in a record: big-endian (keys, the hash,
// BIP-340's values, compact ECDSA) or little-endian (the opaque ECDSA
// encoding).
enum class ByteOrder { big, little };

// The one reader of a record's 32-byte values: v[0] the least significant
// 64-bit limb. The field and scalar parsers both read through it.
SV_HD void read_u256(u64 v[4], const u8* b, ByteOrder order) {
    const bool little = order == ByteOrder::little;
    SV_UNROLL
    for (int i = 0; i < 4; ++i) {
        u64 w = 0;
        SV_UNROLL
        for (int j = 0; j < 8; ++j) w |= u64(little ? b[i * 8 + j] : b[(3 - i) * 8 + 7 - j]) << (8 * j);
        v[i] = w;
    }
}

// r = the 32 bytes at b mod m (a value < 2^256 < 2m: one subtraction at
// most). Returns whether the value was >= m: the parsers' overflow flag.
// The flag is its own carry chain, not the reduction's carry: taking the one
// for both cost sm_100 26 registers in the kernel (ptxas), the two chains
// cost nothing measurable on sm_90.
SV_HD bool u256_set_bytes_mod(u64 r[4], const u8* b, ByteOrder order, const U256& k) {
    u64 v[4];
    read_u256(v, b, order);
    const bool overflow = u256_ge_modulus(v, k);
    u256_reduce_once(r, v, 0, k);
    return overflow;
}

// 32 big-endian bytes of v (read_u256's inverse for ByteOrder::big).
SV_HD void write_u256_be(u8* b, const u64 v[4]) {
    SV_UNROLL
    for (int i = 0; i < 4; ++i) {
        SV_UNROLL
        for (int j = 0; j < 8; ++j) b[(3 - i) * 8 + j] = u8(v[i] >> (56 - 8 * j));
    }
}

}  // namespace sigverify::kernels
