// SPDX-License-Identifier: MIT
// SHA-256 (FIPS 180-4) for the kernels: the compression function, a one-shot
// hash for short inputs, and the BIP-340 challenge hash with the tag prefix
// already absorbed (precomputed midstate).
#pragma once

#include <cstddef>

#include "kernels/sv_hd.hpp"

namespace sigverify::kernels {

SV_HD u32 sha_rotr(u32 x, int n) { return (x >> n) | (x << (32 - n)); }

SV_HD u32 sha_k(int i) {
    // Kept in a function-local table: usable from host and device code alike.
    const u32 k[64] = {
        0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u,
        0xab1c5ed5u, 0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu,
        0x9bdc06a7u, 0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu,
        0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
        0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
        0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u, 0xa2bfe8a1u, 0xa81a664bu,
        0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u,
        0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
        0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u,
        0xc67178f2u};
    return k[i];
}

// Sets the state to a known start: the IV, or a midstate. Unrolled over a
// local constant table, so on the device the words are immediates.
SV_HD void sha256_set_state(u32 s[8], const u32 (&start)[8]) {
    SV_UNROLL
    for (int i = 0; i < 8; ++i) s[i] = start[i];
}

SV_HD void sha256_init(u32 s[8]) {
    const u32 iv[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
                       0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u};
    sha256_set_state(s, iv);
}

// One 64-byte block, as 16 big-endian words, into the state. Inline: with
// the rounds unrolled every w[] index is a constant, so w stays in registers.
SV_HD void sha256_compress_words(u32 s[8], u32 w[16]) {
    u32 a = s[0], b = s[1], c = s[2], d = s[3], e = s[4], f = s[5], g = s[6], h = s[7];
    SV_UNROLL
    for (int i = 0; i < 64; ++i) {
        u32 wi;
        if (i < 16) {
            wi = w[i];
        } else {
            const u32 w15 = w[(i - 15) & 15], w2 = w[(i - 2) & 15];
            const u32 s0 = sha_rotr(w15, 7) ^ sha_rotr(w15, 18) ^ (w15 >> 3);
            const u32 s1 = sha_rotr(w2, 17) ^ sha_rotr(w2, 19) ^ (w2 >> 10);
            wi = w[i & 15] + s0 + w[(i - 7) & 15] + s1;
            w[i & 15] = wi;
        }
        const u32 S1 = sha_rotr(e, 6) ^ sha_rotr(e, 11) ^ sha_rotr(e, 25);
        const u32 ch = (e & f) ^ (~e & g);
        const u32 t1 = h + S1 + ch + sha_k(i) + wi;
        const u32 S0 = sha_rotr(a, 2) ^ sha_rotr(a, 13) ^ sha_rotr(a, 22);
        const u32 maj = (a & b) ^ (a & c) ^ (b & c);
        const u32 t2 = S0 + maj;
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    s[0] += a;
    s[1] += b;
    s[2] += c;
    s[3] += d;
    s[4] += e;
    s[5] += f;
    s[6] += g;
    s[7] += h;
}

SV_HD u32 load_be32(const u8* p) {
    return (u32(p[0]) << 24) | (u32(p[1]) << 16) | (u32(p[2]) << 8) | u32(p[3]);
}

// One 64-byte block into the state (a real call on the device).
SV_HD_NOINLINE void sha256_compress(u32 s[8], const u8* block) {
    u32 w[16];
    SV_UNROLL
    for (int i = 0; i < 16; ++i) w[i] = load_be32(block + 4 * i);
    sha256_compress_words(s, w);
}

SV_HD void sha256_state_out(u8* out, const u32 s[8]) {
    SV_UNROLL
    for (int i = 0; i < 8; ++i) {
        out[4 * i] = u8(s[i] >> 24);
        out[4 * i + 1] = u8(s[i] >> 16);
        out[4 * i + 2] = u8(s[i] >> 8);
        out[4 * i + 3] = u8(s[i]);
    }
}

// Finishes a hash: absorbs len bytes of data after `prior` bytes already
// compressed into s (prior a multiple of 64), pads, writes the digest.
SV_HD void sha256_finish(u32 s[8], u64 prior, const u8* data, size_t len, u8* out) {
    size_t off = 0;
    while (len - off >= 64) {
        sha256_compress(s, data + off);
        off += 64;
    }
    u8 block[64];
    const size_t rem = len - off;
    for (size_t i = 0; i < 64; ++i) block[i] = i < rem ? data[off + i] : 0;
    block[rem] = 0x80;
    if (rem >= 56) {
        sha256_compress(s, block);
        for (int i = 0; i < 64; ++i) block[i] = 0;
    }
    const u64 bits = (prior + len) * 8;
    for (int i = 0; i < 8; ++i) block[56 + i] = u8(bits >> (56 - 8 * i));
    sha256_compress(s, block);
    sha256_state_out(out, s);
}

SV_HD void sha256(u8 out[32], const u8* data, size_t len) {
    u32 s[8];
    sha256_init(s);
    sha256_finish(s, 0, data, len, out);
}

// State after absorbing SHA256("BIP0340/challenge") twice (one 64-byte
// block): the start of every BIP-340 challenge hash.
SV_HD void bip340_challenge_midstate(u32 s[8]) {
    const u32 midstate[8] = {0x9cecba11u, 0x23925381u, 0x11679112u, 0xd1627e0fu,
                             0x97c87550u, 0x003cc765u, 0x90f61164u, 0x33e9b66au};
    sha256_set_state(s, midstate);
}

// tagged_hash("BIP0340/challenge", rx || px || msg) with 32-byte parts: two
// compressions after the midstate.
// The BIP-340 challenge state (digest words, big-endian order) straight from
// the three 32-byte inputs, no byte buffers: what the GPU kernel uses (its
// verify kernel has no stack frame). The second block is msg, the padding
// bit and the length: 64 (tag prefix) + 96 bytes = 1280 bits.
SV_HD void bip340_challenge_words(u32 s[8], const u8* rx, const u8* px, const u8* msg) {
    bip340_challenge_midstate(s);
    SV_NO_UNROLL
    for (int block = 0; block < 2; ++block) {
        u32 w[16];
        SV_UNROLL
        for (int i = 0; i < 8; ++i) {
            w[i] = load_be32((block == 0 ? rx : msg) + 4 * i);
            w[8 + i] = block == 0 ? load_be32(px + 4 * i) : 0;
        }
        if (block == 1) {
            w[8] = 0x80000000u;
            w[15] = 1280;
        }
        sha256_compress_words(s, w);
    }
}

SV_HD void bip340_challenge(u8 out[32], const u8* rx, const u8* px, const u8* msg) {
    u32 s[8];
    bip340_challenge_midstate(s);
    u8 block[64];
    for (int i = 0; i < 32; ++i) {
        block[i] = rx[i];
        block[32 + i] = px[i];
    }
    sha256_compress(s, block);
    for (int i = 0; i < 32; ++i) block[i] = msg[i];
    block[32] = 0x80;
    for (int i = 33; i < 62; ++i) block[i] = 0;
    // total length: 64 (tag prefix) + 96 bytes = 1280 bits
    block[62] = 0x05;
    block[63] = 0x00;
    sha256_compress(s, block);
    sha256_state_out(out, s);
}

}  // namespace sigverify::kernels
