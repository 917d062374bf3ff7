// SPDX-License-Identifier: MIT
// A signed-row generator built on the kernel math alone (no libsecp256k1),
// for the GPU check on machines that lack libsecp256k1. Row i depends only on
// (seed, i): key, nonce and message are SHA-256 derived (not RFC 6979: these
// rows are test data, not signatures anyone relies on). ECDSA rows are
// low-S unless picked for high-S; a picked fraction gets one invalidating
// mutation (a flipped bit in hash, key or signature). Tails are filled with
// non-zero seed-derived bytes so collect mode's zeroing is visible.
// test_kernel_verify proves these rows against libsecp256k1.
#pragma once

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels/kernel_math.hpp"
#include "kernels/exact_verify.hpp"

namespace sigverify::kernel_test {

struct HostGenOptions {
    wire::Table table = wire::Table::ecdsa;
    std::size_t count = 0;
    std::size_t tail_size = 3;
    wire::SigEncoding encoding = wire::SigEncoding::opaque;
    double invalid_rate = 0.3;
    double high_s_rate = 0.25;
    std::uint64_t seed = 1;
    unsigned threads = 0;
};

namespace detail {

inline void derive(std::uint8_t out[32], std::uint64_t seed, std::uint64_t i, std::uint8_t what) {
    std::uint8_t in[17];
    for (int b = 0; b < 8; ++b) {
        in[b] = static_cast<std::uint8_t>(seed >> (8 * b));
        in[8 + b] = static_cast<std::uint8_t>(i >> (8 * b));
    }
    in[16] = what;
    kernels::sha256(out, in, sizeof in);
}

inline kernels::Sc derive_scalar(std::uint64_t seed, std::uint64_t i, std::uint8_t what) {
    std::uint8_t b[32];
    derive(b, seed, i, what);
    kernels::Sc s;
    kernels::sc_set_bytes(s, b, kernels::ByteOrder::big);
    if (kernels::sc_is_zero(s)) s = kernels::sc_one();
    return s;
}

inline kernels::Ge mul_g(const kernels::Sc& k) {
    kernels::Gej r;
    kernels::ecmult(r, kernels::ge_generator(), kernels::sc_zero(), k, kernels::host_exact_g_table());
    kernels::Ge a;
    kernels::ge_set_gej(a, r);
    return a;
}

// A fraction as a threshold on one derived byte pair.
inline bool pick(std::uint64_t seed, std::uint64_t i, std::uint8_t what, double rate) {
    std::uint8_t b[32];
    derive(b, seed, i, what);
    const unsigned v = unsigned(b[0]) | (unsigned(b[1]) << 8);
    return double(v) < rate * 65536.0;
}

inline void make_row(const HostGenOptions& o, std::uint64_t i, std::uint8_t* row) {
    using namespace kernels;
    const bool ecdsa = wire::record_kind(o.table) == wire::RecordKind::ecdsa;
    const std::size_t rec = wire::record_size(wire::record_kind(o.table));
    std::uint8_t msg[32];
    derive(msg, o.seed, i, 'm');
    Sc d = derive_scalar(o.seed, i, 'd');
    Sc k = derive_scalar(o.seed, i, 'k');
    Ge P = mul_g(d);
    Ge R = mul_g(k);
    std::memcpy(row, msg, 32);
    if (ecdsa) {
        row[32] = fe_is_odd(P.y) ? 0x03 : 0x02;
        fe_get_b32(row + 33, P.x);
        std::uint8_t rx[32];
        fe_get_b32(rx, R.x);
        Sc r, z, s, t, kinv;
        sc_set_bytes(r, rx, ByteOrder::big);
        sc_set_bytes(z, msg, ByteOrder::big);
        sc_mul(t, r, d);
        sc_add(t, t, z);
        kinv = sc32_inv(k);
        sc_mul(s, kinv, t);
        if (sc_is_high(s)) sc_neg(s, s);
        if (pick(o.seed, i, 'h', o.high_s_rate)) sc_neg(s, s);
        std::uint8_t rb[32], sb[32];
        sc_get_b32(rb, r);
        sc_get_b32(sb, s);
        std::uint8_t* sig = row + kEcdsaSig;
        for (int j = 0; j < 32; ++j) {
            if (o.encoding == wire::SigEncoding::compact) {
                sig[j] = rb[j];
                sig[32 + j] = sb[j];
            } else {
                sig[j] = rb[31 - j];
                sig[32 + j] = sb[31 - j];
            }
        }
    } else {
        if (fe_is_odd(P.y)) {
            sc_neg(d, d);
            ge_neg(P, P);
        }
        if (fe_is_odd(R.y)) sc_neg(k, k);
        fe_get_b32(row + 32, P.x);
        fe_get_b32(row + kSchnorrSig, R.x);
        std::uint8_t eb[32];
        bip340_challenge(eb, row + kSchnorrSig, row + 32, msg);
        Sc e, s;
        sc_set_bytes(e, eb, ByteOrder::big);
        sc_mul(s, e, d);
        sc_add(s, s, k);
        sc_get_b32(row + kSchnorrSig + 32, s);
    }
    if (pick(o.seed, i, 'x', o.invalid_rate)) {
        std::uint8_t b[32];
        derive(b, o.seed, i, 'y');
        // skip byte 32 of ECDSA rows (the prefix) so the mutation is a flipped bit
        // of hash, x or signature, as in the reference generator
        std::size_t pos = (std::size_t(b[0]) | (std::size_t(b[1]) << 8)) % rec;
        if (ecdsa && pos == 32) pos = 33;
        row[pos] ^= static_cast<std::uint8_t>(1u << (b[2] & 7));
    }
    std::uint8_t tail[32];
    derive(tail, o.seed, i, 't');
    for (std::size_t j = 0; j < o.tail_size; ++j) row[rec + j] = static_cast<std::uint8_t>(tail[j % 32] | 1);
}

}  // namespace detail

inline std::vector<std::uint8_t> host_generate_rows(const HostGenOptions& o) {
    const std::size_t stride = wire::stride(wire::record_kind(o.table), o.tail_size);
    std::vector<std::uint8_t> rows(o.count * stride);
    kernels::host_exact_g_table();
    unsigned threads = o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            for (std::size_t i = t; i < o.count; i += threads) detail::make_row(o, i, rows.data() + i * stride);
        });
    }
    for (auto& th : pool) th.join();
    return rows;
}

}  // namespace sigverify::kernel_test
