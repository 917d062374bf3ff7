// SPDX-License-Identifier: MIT
// Unit tests of the GPU kernel's math (fe32.hpp, scalar32.hpp, ecmult32.hpp)
// against independent oracles: OpenSSL BIGNUM for the field and scalar
// arithmetic, the exact path's plain double-and-add (ecmult_simple) for the
// uniform ladder. The host twins run exactly the instruction sequences the
// GPU runs (fe32_ops.hpp is generated from one list for both).
#include <catch2/catch.hpp>

#include <openssl/bn.h>

#include <array>
#include <random>
#include <string>
#include <vector>

#include "bignum.hpp"
#include "kernels/exact_ecmult.hpp"
#include "kernels/kernel_math.hpp"
#include "kernels/verify32.hpp"

using namespace sigverify::kernels;

namespace {

using sigverify::test::Bn;
using sigverify::test::BnCtx;


void words_to_bn(const u32* v, int n, Bn& out) {
    std::vector<unsigned char> be(std::size_t(n) * 4);
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < 4; ++j) be[std::size_t((n - 1 - i) * 4 + j)] = static_cast<unsigned char>(v[i] >> (24 - 8 * j));
    BN_bin2bn(be.data(), n * 4, out.b);
}

std::string hex(const Bn& x) {
    char* h = BN_bn2hex(x.b);
    std::string s(h);
    OPENSSL_free(h);
    return s;
}

// 256-bit inputs: edge values (as 32-bit words) and random ones biased to
// all-zero / all-one words, which drive the carry paths.
std::vector<std::array<u32, 8>> inputs(int random_count) {
    std::vector<std::array<u32, 8>> out;
    const std::array<u32, 8> p = {0xFFFFFC2F, 0xFFFFFFFE, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u};
    const std::array<u32, 8> n = {0xD0364141, 0xBFD25E8C, 0xAF48A03B, 0xBAAEDCE6, 0xFFFFFFFE, ~0u, ~0u, ~0u};
    out.push_back({});
    out.push_back({1});
    out.push_back({~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u});
    out.push_back(p);
    auto pm1 = p;
    pm1[0] -= 1;
    out.push_back(pm1);
    auto pp1 = p;
    pp1[0] += 1;
    out.push_back(pp1);
    out.push_back(n);
    auto nm1 = n;
    nm1[0] -= 1;
    out.push_back(nm1);
    out.push_back({977, 1});
    out.push_back({0, 0, 0, 0, 0, 0, 0, 0x80000000u});
    std::mt19937_64 g(0x32);
    for (int i = 0; i < random_count; ++i) {
        std::array<u32, 8> v{};
        for (auto& w : v) {
            const auto k = g() % 8;
            w = k == 0 ? 0u : k == 1 ? ~0u : u32(g());
        }
        out.push_back(v);
    }
    return out;
}

Fe32 fe32_of(const std::array<u32, 8>& a) {
    Fe32 r;
    for (int i = 0; i < 8; ++i) r.v[i] = a[std::size_t(i)];
    return r;
}

}  // namespace

TEST_CASE("fe32: generated carry-chain sequences match a BIGNUM oracle mod p", "[kernels][unit]") {
    BnCtx ctx;
    Bn p, x, y, want, got, t;
    BN_hex2bn(&p.b, "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F");
    const auto in = inputs(600);
    int checked = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
        const auto& av = in[i];
        const auto& bv = in[(i * 7 + 3) % in.size()];
        const Fe32 a = fe32_of(av), b = fe32_of(bv);
        words_to_bn(a.v, 8, x);
        words_to_bn(b.v, 8, y);
        auto expect = [&](const Fe32& r, auto op, const char* what) {
            op();  // want = exact result mod p
            Fe32 n;
            fe32_normalize(n, r);
            words_to_bn(n.v, 8, got);
            INFO(what << " a=" << hex(x) << " b=" << hex(y));
            REQUIRE(hex(got) == hex(want));
            ++checked;
        };
        Fe32 r;
        fe32_mul(r, a, b);
        expect(r, [&] { BN_mod_mul(want.b, x.b, y.b, p.b, ctx.ctx); }, "mul");
        fe32_sqr(r, a);
        expect(r, [&] { BN_mod_mul(want.b, x.b, x.b, p.b, ctx.ctx); }, "sqr");
        fe32_add(r, a, b);
        expect(r, [&] { BN_mod_add(want.b, x.b, y.b, p.b, ctx.ctx); }, "add");
        fe32_sub(r, a, b);
        expect(r, [&] { BN_mod_sub(want.b, x.b, y.b, p.b, ctx.ctx); }, "sub");
        fe32_half(r, a);
        Fe32 twice;
        fe32_add(twice, r, r);
        REQUIRE(fe32_equal(twice, a));
        if (!fe32_is_zero(a)) {
            r = fe32_inv(a);
            expect(r, [&] { BN_mod_inverse(want.b, x.b, p.b, ctx.ctx); }, "inv");
        }
        const Fe32Root root = fe32_sqrt(a);
        BN_nnmod(t.b, x.b, p.b, ctx.ctx);
        Bn sq;
        const bool is_square = BN_mod_sqrt(sq.b, t.b, p.b, ctx.ctx) != nullptr;
        REQUIRE(bool(root.is_square) == is_square);
    }
    REQUIRE(checked > 3000);
}

TEST_CASE("sc32: the generated product mod n, inversion and halving match a BIGNUM oracle", "[kernels][unit]") {
    BnCtx ctx;
    Bn n, x, y, want, got;
    BN_hex2bn(&n.b, "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141");
    const auto in = inputs(300);
    for (std::size_t i = 0; i < in.size(); ++i) {
        // scalars are fully reduced Sc values; the product accepts any 256 bits
        u32 a[8], b[8], r[8];
        for (int k = 0; k < 8; ++k) {
            a[k] = in[i][std::size_t(k)];
            b[k] = in[(i * 5 + 1) % in.size()][std::size_t(k)];
        }
        sc32_mul_limbs(r, a, b);
        words_to_bn(a, 8, x);
        words_to_bn(b, 8, y);
        words_to_bn(r, 8, got);
        BN_mod_mul(want.b, x.b, y.b, n.b, ctx.ctx);
        INFO("a=" << hex(x) << " b=" << hex(y));
        REQUIRE(hex(got) == hex(want));
        Sc s;
        sc_reduce_once(s, reinterpret_cast<const u64*>(a), 0);  // little-endian words = limbs
        if (sc_is_zero(s)) continue;
        Sc inv = sc32_inv(s), one;
        sc_mul(one, inv, s);
        REQUIRE(sc_equal(one, sc_one()));
        Sc h, h2;
        sc_half(h, s);
        sc_add(h2, h, h);
        REQUIRE(sc_equal(h2, s));
    }
}

TEST_CASE("sc32: the recoding offset K is (2^132 - 2^129 - 1)(1 + lambda) mod n", "[kernels][unit]") {
    Sc one_plus_lambda, k;
    sc_add(one_plus_lambda, sc_one(), sc_lambda());
    sc_mul(k, Sc{{~0ull, ~0ull, 0xDull, 0}}, one_plus_lambda);  // the exact path's product
    CHECK(sc_equal(k, sc_recode_offset()));
    sc32_mul(k, Sc{{~0ull, ~0ull, 0xDull, 0}}, one_plus_lambda);  // the kernel's
    CHECK(sc_equal(k, sc_recode_offset()));
}

TEST_CASE("pt32: a degenerate addition is flagged, a regular one is not", "[kernels][unit]") {
    const Ge g = ge_generator();
    const Aff32 ga{fe32_from_fe(g.x), fe32_from_fe(g.y)};
    const Pt32 gj{ga.x, ga.y, fe32_one()};
    Pt32 r;
    Fe32 h;
    u32 degenerate = 0;
    pt32_add_affine(r, gj, ga, degenerate, h);  // G + G
    REQUIRE(degenerate != 0);
    Aff32 neg = ga;
    fe32_neg(neg.y, neg.y);
    degenerate = 0;
    pt32_add_affine(r, gj, neg, degenerate, h);  // G - G
    REQUIRE(degenerate != 0);
    Pt32 d;
    pt32_double(d, gj);  // 2G, then 2G + G = 3G
    degenerate = 0;
    pt32_add_affine(r, d, ga, degenerate, h);
    REQUIRE(degenerate == 0);
    Gej want;
    Sc three = sc_zero();
    three.v[0] = 3;
    ecmult_simple(want, g, sc_zero(), three);
    Ge wa;
    ge_set_gej(wa, want);
    const Fe32 zi = fe32_inv(r.z);
    Fe32 zi2, x;
    fe32_sqr(zi2, zi);
    fe32_mul(x, r.x, zi2);
    REQUIRE(fe32_equal(x, fe32_from_fe(wa.x)));
}

TEST_CASE("ecmult32: the uniform ladder equals double-and-add, or flags the row", "[kernels][unit]") {
    const Ge g = ge_generator();
    std::mt19937_64 rng(0xec32);
    auto random_scalar = [&] {
        Sc s;
        u64 v[4] = {rng(), rng(), rng(), rng()};
        sc_reduce_once(s, v, 0);
        return s;
    };
    auto times_g = [&](const Sc& k) {
        Gej r;
        ecmult_simple(r, g, sc_zero(), k);
        Ge a;
        ge_set_gej(a, r);
        return a;
    };
    Sc minus_one, two128 = sc_zero();
    sc_neg(minus_one, sc_one());
    two128.v[2] = 1;
    // points: G itself, lambda G, random multiples; scalars: 0, 1, -1,
    // lambda, 2^128 and random ones (the related ones make the ladder's
    // streams collide: those rows must be flagged, never wrong)
    std::vector<Ge> points = {g, times_g(sc_lambda()), times_g(two128)};
    for (int i = 0; i < 6; ++i) points.push_back(times_g(random_scalar()));
    std::vector<Sc> scalars = {sc_zero(), sc_one(), minus_one, sc_lambda(), two128};
    for (int i = 0; i < 6; ++i) scalars.push_back(random_scalar());
    HostScratch32 scratch;
    const PTable32 ptab = scratch.view();
    int flagged = 0, exact = 0;
    for (const Ge& p : points) {
        for (const Sc& na : scalars) {
            for (const Sc& ng : {scalars[0], scalars[1], scalars[2], scalars[3], scalars[4], scalars.back()}) {
                Gej want;
                ecmult_simple(want, p, na, ng);
                Pt32 r;
                u32 degenerate = 0;
                ecmult32(r, Aff32{fe32_from_fe(p.x), fe32_from_fe(p.y)}, na, ng, ptab, host_g_table32(), degenerate);
                if (degenerate) {
                    ++flagged;
                    continue;
                }
                REQUIRE_FALSE(want.infinity);  // infinity can only come out of a flagged addition
                Ge wa;
                ge_set_gej(wa, want);
                const Fe32 zi = fe32_inv(r.z);
                Fe32 zi2, zi3, x, y;
                fe32_sqr(zi2, zi);
                fe32_mul(zi3, zi2, zi);
                fe32_mul(x, r.x, zi2);
                fe32_mul(y, r.y, zi3);
                REQUIRE(fe32_equal(x, fe32_from_fe(wa.x)));
                REQUIRE(fe32_equal(y, fe32_from_fe(wa.y)));
                ++exact;
            }
        }
    }
    INFO("flagged " << flagged << ", exact " << exact);
    REQUIRE(exact > 300);
}

namespace {

// a mod n as a scalar, from a BIGNUM.
Sc sc_of_bn(const Bn& a, const Bn& n, BnCtx& ctx) {
    Bn r;
    BN_nnmod(r.b, a.b, n.b, ctx.ctx);
    unsigned char be[32];
    BN_bn2binpad(r.b, be, 32);
    Sc s;
    REQUIRE_FALSE(sc_set_bytes(s, be, ByteOrder::big));
    return s;
}

void sc_to_bn(const Sc& a, Bn& out) {
    unsigned char be[32];
    sc_get_b32(be, a);
    BN_bin2bn(be, 32, out.b);
}

}  // namespace

// Issue 30's wider G windows: the identity that the ladder relies on, proven
// with BIGNUM, independently of the scalar code that computes v_g: for every
// ng, the windows b the ladder reads (through the same scratch reader) give
// sum over both tables t and windows k of (2 b - (2^w - 1)) 2^(t mw + w k) = ng
// (mod n), and every G window sits on a P window of the ladder.
TEST_CASE("ecmult32: the G stream's signed windows sum to ng (BIGNUM)", "[kernels][unit]") {
    static_assert(kGWindowsPerTable * kGStep <= kPWindows && kGStep * 4 == kGWindowBits);
    BnCtx ctx;
    const Bn n("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141");
    std::vector<Sc> ngs;
    auto add_bn = [&](const Bn& x) { ngs.push_back(sc_of_bn(x, n, ctx)); };
    for (const char* h : {"0", "1", "2", "3", "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364140",
                          "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD036413F",
                          "7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0",
                          "7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A1",
                          "14551231950B75FC4402DA1732FC9BEBF"})
        add_bn(Bn(h));
    for (int k : {11, 12, 31, 32, 63, 64, 127, 128, 131, 132, 133, 143, 191, 192, 252, 255}) {
        Bn p, one, pm1;
        BN_one(one.b);
        BN_lshift(p.b, one.b, k);
        add_bn(p);
        BN_sub(pm1.b, p.b, one.b);
        add_bn(pm1);
    }
    std::mt19937_64 rng(0x6e67);
    for (int i = 0; i < 3000; ++i) {
        Sc s;
        for (auto& w : s.v) {
            const auto k = rng() % 6;
            w = k == 0 ? 0 : k == 1 ? ~0ull : rng();
        }
        unsigned char be[32];
        sc_get_b32(be, s);
        Bn x;
        BN_bin2bn(be, 32, x.b);
        add_bn(x);
    }
    HostScratch32 scratch;
    const PTable32 ptab = scratch.view();
    const long offset = (1L << kGWindowBits) - 1;
    for (const Sc& ng : ngs) {
        Recoded32 rc;
        u32 degenerate = 0;
        recode32(rc, sc_zero(), ng, degenerate);
        ptab.store_stream(2, rc.glo);
        ptab.store_stream(3, rc.ghi);
        Bn sum, term, digit, want;
        BN_zero(sum.b);
        for (int t = 0; t < 2; ++t) {
            for (int k = 0; k < kGWindowsPerTable; ++k) {
                // the ladder reads window k of table t in P window j = k kGStep at bit 4 j
                const u32 b = ptab.window_any(2 + t, 4 * (k * kGStep), kGWindowBits);
                REQUIRE(b < (1u << kGWindowBits));
                BN_set_word(digit.b, 2 * static_cast<unsigned long>(b));
                BN_sub_word(digit.b, static_cast<unsigned long>(offset));  // may go negative: BN is signed
                BN_lshift(term.b, digit.b, t * kGTableBits + kGWindowBits * k);
                BN_add(sum.b, sum.b, term.b);
            }
        }
        BN_nnmod(sum.b, sum.b, n.b, ctx.ctx);
        sc_to_bn(ng, want);
        INFO("ng " << hex(want));
        REQUIRE(BN_cmp(sum.b, want.b) == 0);
    }
}

// The G tables the ladder reads (and the device uploads): entry i of table t
// is (2i + 1) 2^(t kGHighShift) G, checked by double-and-add at the edges and
// in the middle of both.
TEST_CASE("ecmult32: the G tables hold the odd multiples of G and of 2^(mw) G", "[kernels][unit]") {
    BnCtx ctx;
    const Bn n("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141");
    const std::vector<GeStorage> tables = build_g_tables32();
    REQUIRE(tables.size() == std::size_t(2 * kGTableEntries));
    const GTable32 view{tables.data()};
    for (int t = 0; t < 2; ++t) {
        for (int i : {0, 1, 2, 3, kGTableEntries / 2 - 1, kGTableEntries / 2, kGTableEntries - 2, kGTableEntries - 1}) {
            Bn k;
            BN_set_word(k.b, 2 * static_cast<unsigned long>(i) + 1);
            BN_lshift(k.b, k.b, t * kGHighShift);
            Gej want;
            ecmult_simple(want, ge_generator(), sc_zero(), sc_of_bn(k, n, ctx));
            Ge wa;
            ge_set_gej(wa, want);
            const Aff32 e = g_table_entry(view, t * kGTableEntries + i);
            INFO("table " << t << " entry " << i);
            REQUIRE(fe32_equal(e.x, fe32_from_fe(wa.x)));
            REQUIRE(fe32_equal(e.y, fe32_from_fe(wa.y)));
        }
    }
}

// The device scratch's addresses (ecmult32.hpp: ScratchPlacement, the per-warp
// [word][lane] layout) as the kernel computes them in gpu_verifier.cu, checked
// on the host for every placement a build can choose: every word of every
// thread of a launch has its own address, inside the shared memory the launch
// gives a block and the global scratch it allocates, and a warp's 32 lanes
// read 32 consecutive words. Overlapping rows would be wrong verdicts on a GPU
// that no host twin computes, so this is the only place they show.
TEST_CASE("ecmult32: the device scratch layout gives every thread its own words, in bounds", "[kernels][unit]") {
    const ScratchRegion regions[] = {ScratchRegion::p_table, ScratchRegion::streams, ScratchRegion::zg};
    const u32 region_words[] = {kPTableWords, kStreamWords, kZgWords};
    struct Case {
        const char* name;
        ScratchPlacement place;
    };
    const Case cases[] = {{"sm_90", scratch_placement(900)},
                          {"sm_89", scratch_placement(890)},
                          {"sm_120", scratch_placement(1200)},
                          {"all shared", ScratchPlacement{true, true, true}},
                          {"P table global", ScratchPlacement{false, true, true}},
                          {"all global", ScratchPlacement{false, false, false}}};
    for (const Case& c : cases) {
        const ScratchPlacement p = c.place;
        const u32 shared_words = u32(shared_words_per_thread(p)), global_words = u32(global_words_per_thread(p));
        u32 in_shared = 0;
        for (int r = 0; r < 3; ++r) in_shared += region_in_shared(p, regions[r]) ? region_words[r] : 0;
        REQUIRE(in_shared == shared_words);
        REQUIRE(shared_words + global_words == u32(kScratchWords));
        for (const u32 tpb : {32u, 96u, 128u, 256u}) {
            for (const u32 count : {1u, 33u, 1000u}) {
                INFO(c.name << ", " << tpb << " threads per block, " << count << " rows");
                const u64 global_size = u64(count + 31) / 32 * 32 * global_words;
                const u64 blocks = (count + tpb - 1) / tpb;
                // owner of each word: shared memory per block, then the global scratch
                std::vector<int> owner(std::size_t(blocks * tpb * shared_words + global_size), -1);
                bool in_bounds = true, distinct = true, coalesced = true;
                for (u32 i = 0; i < count; ++i) {
                    const u32 tib = i % tpb, block = i / tpb;
                    for (int r = 0; r < 3; ++r) {
                        const bool sh = region_in_shared(p, regions[r]);
                        const u64 base = sh ? u64(shared_warp_start(p, tib)) + tib % kScratchLanes
                                            : global_warp_start(p, i) + i % kScratchLanes;
                        // lane 0 of the warp: this lane's word 0 is `lane` words on
                        const u32 lane = (sh ? tib : i) % kScratchLanes;
                        const u64 lane0 = sh ? u64(shared_warp_start(p, tib - lane)) : global_warp_start(p, i - lane);
                        coalesced &= base == lane0 + lane;
                        for (u32 w = 0; w < region_words[r]; ++w) {
                            const u64 at = base + u64(kScratchLanes) * (region_start(p, regions[r]) + w);
                            const u64 limit = sh ? u64(tpb) * shared_words : global_size;
                            in_bounds &= at < limit;
                            if (at >= limit) continue;
                            int& o = owner[std::size_t(sh ? u64(block) * tpb * shared_words + at
                                                          : blocks * tpb * shared_words + at)];
                            distinct &= o == -1;
                            o = int(i);
                        }
                    }
                }
                CHECK(in_bounds);
                CHECK(distinct);
                CHECK(coalesced);
            }
        }
    }
}

// The table build's first doubling (aff32_double_call: pt32_double's formula
// with Z1 = 1, through the once-per-row calls) against pt32_double itself on
// G and random multiples: the same point, the same Z (= Y).
TEST_CASE("pt32: the affine doubling of the table build equals pt32_double", "[kernels][unit]") {
    std::mt19937_64 rng(0xd0b1e);
    Ge p = ge_generator();
    for (int rep = 0; rep < 24; ++rep) {
        INFO("point " << rep);
        const Aff32 a{fe32_from_fe(p.x), fe32_from_fe(p.y)};
        Pt32 want, got;
        pt32_double(want, Pt32{a.x, a.y, fe32_one()});
        aff32_double_call(got, a);
        CHECK(fe32_equal(got.x, want.x));
        CHECK(fe32_equal(got.y, want.y));
        CHECK(fe32_equal(got.z, want.z));
        Sc k = sc_zero();
        k.v[0] = rng() | 1;
        k.v[1] = rng();
        Gej q;
        ecmult_simple(q, p, k, sc_zero());
        ge_set_gej(p, q);
    }
}
