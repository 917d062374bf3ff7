// SPDX-License-Identifier: MIT
// The divsteps inversion (kernels/safegcd32.hpp) against OpenSSL BIGNUM,
// mod n and mod p: edge values (0, 1, 2, m-1, m-2, (m±1)/2, powers of two,
// 30-bit limb boundaries), values whose inverse is small, and random values
// biased to all-zero / all-one words; then the kernel's two users of it,
// sc32_inv and fe32_inv (weakly reduced inputs up to 2^256 - 1). The code is
// portable C++ that the GPU compiles unchanged, so this is the proof of the
// device's inversion too.
#include <catch2/catch.hpp>

#include <openssl/bn.h>

#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <vector>

#include "bignum.hpp"
#include "kernels/kernel_math.hpp"
#include "kernels/safegcd32.hpp"
#include "kernels/verify32.hpp"

using namespace sigverify::kernels;

namespace {

using sigverify::test::Bn;
using sigverify::test::BnCtx;


using Words = std::array<u32, 8>;

void to_bn(const Words& w, Bn& out) {
    std::vector<unsigned char> be(32);
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 4; ++j) be[std::size_t((7 - i) * 4 + j)] = static_cast<unsigned char>(w[std::size_t(i)] >> (24 - 8 * j));
    BN_bin2bn(be.data(), 32, out.b);
}

Words from_bn(const Bn& x) {
    std::vector<unsigned char> be(32);
    REQUIRE(BN_bn2binpad(x.b, be.data(), 32) == 32);
    Words w{};
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 4; ++j) w[std::size_t(i)] |= u32(be[std::size_t((7 - i) * 4 + j)]) << (24 - 8 * j);
    return w;
}

std::string hex(const Bn& x) {
    char* h = BN_bn2hex(x.b);
    std::string s(h);
    OPENSSL_free(h);
    return s;
}

const char* kHexN = "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141";
const char* kHexP = "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F";

// Inputs in [0, m): edges, then random ones (reduced mod m).
std::vector<Words> inputs_below(const Bn& m, int random_count, BnCtx& ctx) {
    std::vector<Words> out;
    auto push = [&](const Bn& v) {
        Bn r;
        BN_nnmod(r.b, v.b, m.b, ctx.ctx);
        out.push_back(from_bn(r));
    };
    Bn v, inv_small;
    for (long k : {0L, 1L, 2L, 3L, 977L, 0x3FFFFFFFL, 0x40000000L, 0x7FFFFFFFL}) {
        BN_set_word(v.b, static_cast<BN_ULONG>(k));
        push(v);
    }
    for (long k : {1L, 2L, 3L}) {  // m - k
        BN_set_word(v.b, static_cast<BN_ULONG>(k));
        BN_sub(v.b, m.b, v.b);
        push(v);
    }
    BN_rshift1(v.b, m.b);  // (m - 1) / 2, (m + 1) / 2
    push(v);
    BN_add_word(v.b, 1);
    push(v);
    for (int bit : {29, 30, 31, 32, 60, 64, 128, 240, 255}) {  // 2^k, 2^k - 1 (limb edges)
        BN_zero(v.b);
        BN_set_bit(v.b, bit);
        push(v);
        BN_sub_word(v.b, 1);
        push(v);
    }
    for (long k : {2L, 3L, 0x3FFFFFFFL}) {  // values whose inverse is small: many divsteps to g = 0?
        BN_set_word(v.b, static_cast<BN_ULONG>(k));
        BN_mod_inverse(inv_small.b, v.b, m.b, ctx.ctx);
        push(inv_small);
    }
    std::mt19937_64 g(0x5afe6cd);
    for (int i = 0; i < random_count; ++i) {
        Words w{};
        for (auto& x : w) {
            const auto k = g() % 8;
            x = k == 0 ? 0u : k == 1 ? ~0u : u32(g());
        }
        to_bn(w, v);
        push(v);
    }
    return out;
}

// safegcd_inverse(a) == BN_mod_inverse(a) for every input (0 -> 0).
void check_inverse(const char* m_hex, const Modulus30& mod, int random_count) {
    BnCtx ctx;
    Bn m, x, want, got;
    BN_hex2bn(&m.b, m_hex);
    for (const Words& a : inputs_below(m, random_count, ctx)) {
        u32 r[8];
        safegcd_inverse(r, a.data(), mod);
        to_bn(a, x);
        Words rw{};
        for (int i = 0; i < 8; ++i) rw[std::size_t(i)] = r[i];
        to_bn(rw, got);
        if (BN_is_zero(x.b))
            BN_zero(want.b);
        else
            REQUIRE(BN_mod_inverse(want.b, x.b, m.b, ctx.ctx) != nullptr);
        INFO("m=" << m_hex << " a=" << hex(x));
        REQUIRE(hex(got) == hex(want));
    }
}

}  // namespace

TEST_CASE("safegcd: the moduli's 30-bit limbs and inverses mod 2^30 are n and p", "[kernels][unit]") {
    for (const auto& [hexm, mod] : {std::pair{kHexN, modulus30_n()}, std::pair{kHexP, modulus30_p()}}) {
        BnCtx ctx;
        Bn m, limbs, t;
        BN_hex2bn(&m.b, hexm);
        BN_zero(limbs.b);
        for (int i = kSafegcdLimbs - 1; i >= 0; --i) {
            REQUIRE(mod.m.v[i] >= 0);
            REQUIRE(mod.m.v[i] <= kLimb30Mask);
            BN_lshift(limbs.b, limbs.b, 30);
            BN_add_word(limbs.b, static_cast<BN_ULONG>(mod.m.v[i]));
        }
        REQUIRE(hex(limbs) == hex(m));
        REQUIRE(((u32(mod.m.v[0]) * mod.m_inv30) & u32(kLimb30Mask)) == 1u);
    }
}

TEST_CASE("safegcd: limb conversion round-trips 256-bit words", "[kernels][unit]") {
    std::mt19937_64 g(7);
    for (int i = 0; i < 2000; ++i) {
        u32 w[8], back[8];
        for (auto& x : w) x = i < 2 ? (i == 0 ? 0u : ~0u) : u32(g());
        limbs30_to_words(back, limbs30_from_words(w));
        for (int k = 0; k < 8; ++k) REQUIRE(back[k] == w[k]);
    }
}

// The batches by hand, to see g reach 0 (the gcd found) inside the 600
// divsteps for every input, and how much margin the fixed count leaves on
// these inputs (590 is the proven bound for 256-bit values).
TEST_CASE("safegcd: g reaches 0 within the fixed 20 batches of 30 divsteps", "[kernels][unit]") {
    for (const auto& [hexm, mod] : {std::pair{kHexN, modulus30_n()}, std::pair{kHexP, modulus30_p()}}) {
        BnCtx ctx;
        Bn m;
        BN_hex2bn(&m.b, hexm);
        int worst = 0;
        for (const Words& a : inputs_below(m, 5000, ctx)) {
            Limbs30 f = mod.m, g = limbs30_from_words(a.data());
            i32 D = 1;
            int zero_after = -1;
            for (int batch = 0; batch < kSafegcdBatches; ++batch) {
                Trans30 t;
                D = divsteps30(D, u32(f.v[0]), u32(g.v[0]), t);
                safegcd_update_fg(f, g, t);
                bool g_zero = true;
                for (int i = 0; i < kSafegcdLimbs; ++i) g_zero = g_zero && g.v[i] == 0;
                if (g_zero && zero_after < 0) zero_after = batch + 1;
            }
            REQUIRE(zero_after > 0);
            // f = ±1 exactly, except for a = 0 (f stays m)
            bool a_zero = true;
            for (u32 w : a) a_zero = a_zero && w == 0;
            if (!a_zero) {
                const bool plus_one = f.v[0] == 1 && f.v[8] == 0;
                const bool minus_one = f.v[0] == kLimb30Mask && f.v[8] == -1;
                REQUIRE((plus_one || minus_one));
            }
            worst = std::max(worst, zero_after);
        }
        WARN("modulus " << hexm << ": g = 0 after at most " << worst << " of " << kSafegcdBatches << " batches");
        REQUIRE(worst <= kSafegcdBatches);
    }
}

TEST_CASE("safegcd: inverse mod n matches BIGNUM (edges and random)", "[kernels][unit]") {
    check_inverse(kHexN, modulus30_n(), 20000);
}

TEST_CASE("safegcd: inverse mod p matches BIGNUM (edges and random)", "[kernels][unit]") {
    check_inverse(kHexP, modulus30_p(), 20000);
}

TEST_CASE("safegcd: the kernel's sc32_inv and fe32_inv use it and keep their contracts", "[kernels][unit]") {
    BnCtx ctx;
    Bn n, p, x, want, got;
    BN_hex2bn(&n.b, kHexN);
    BN_hex2bn(&p.b, kHexP);
    std::mt19937_64 g(0xfe32);
    // scalars: fully reduced; 0 -> 0 as before
    for (int i = 0; i < 3000; ++i) {
        Sc s;
        const u64 raw[4] = {i == 1 ? 1u : g(), i == 1 ? 0u : g(), i == 1 ? 0u : g(), i == 1 ? 0u : g()};
        sc_reduce_once(s, raw, 0);
        if (i == 0) s = sc_zero();
        const Sc inv = sc32_inv(s);
        if (sc_is_zero(s)) {
            REQUIRE(sc_is_zero(inv));
            continue;
        }
        Sc one;
        sc_mul(one, inv, s);
        REQUIRE(sc_equal(one, sc_one()));
    }
    // field: weakly reduced inputs, including p (= 0), p + 1, 2^256 - 1
    std::vector<Fe32> fes = {
        Fe32{{0, 0, 0, 0, 0, 0, 0, 0}},
        Fe32{{0xFFFFFC2F, 0xFFFFFFFE, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u}},
        Fe32{{0xFFFFFC30, 0xFFFFFFFE, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u}},
        Fe32{{~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u}},
        Fe32{{1, 0, 0, 0, 0, 0, 0, 0}},
    };
    for (int i = 0; i < 3000; ++i) {
        Fe32 a;
        for (auto& w : a.v) w = u32(g());
        fes.push_back(a);
    }
    for (const Fe32& a : fes) {
        const Fe32 inv = fe32_inv(a);
        Words aw{}, iw{};
        Fe32 in;
        fe32_normalize(in, inv);
        for (int k = 0; k < 8; ++k) {
            aw[std::size_t(k)] = a.v[k];
            iw[std::size_t(k)] = in.v[k];
        }
        to_bn(aw, x);
        to_bn(iw, got);
        BN_nnmod(x.b, x.b, p.b, ctx.ctx);
        if (BN_is_zero(x.b))
            BN_zero(want.b);
        else
            REQUIRE(BN_mod_inverse(want.b, x.b, p.b, ctx.ctx) != nullptr);
        INFO("a=" << hex(x));
        REQUIRE(hex(got) == hex(want));
    }
}
