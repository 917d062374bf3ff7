// SPDX-License-Identifier: MIT
// The block-wide batch inversions (kernels/batch_inverse32.hpp): ECDSA's s
// mod n in the verify kernel and BIP-340's Z mod p in the parity kernel, the
// code the GPU runs, here with its host block:
//  * the tree's inverses equal sc32_inv / fe32_inv of each value and
//    multiply back to 1 under the exact path's 64-bit products, for every
//    block size the GPU options allow (and the odd ones a short launch gets),
//    with repeated and edge values;
//  * a row checks the inverse it gets (s * 1/s = 1) and makes a wrong one 0,
//    which the ladder turns into a recheck;
//  * a block in which some rows carry an s outside [1, n) (or other defects)
//    gives every row libsecp256k1's verdict: a bad row never disturbs its
//    neighbours' inverses.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/exact_verify.hpp"
#include "kernels/kernel_math.hpp"
#include "kernels/verify32.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"
#include "tests/kernels/host_rows.hpp"

using namespace sigverify;
using namespace sigverify::kernels;

namespace {

// A deterministic scalar in [1, n) (splitmix64 words, reduced).
Sc scalar_from(std::uint64_t& state) {
    u8 b[32];
    for (int w = 0; w < 4; ++w) {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        for (int k = 0; k < 8; ++k) b[8 * w + k] = static_cast<u8>(z >> (8 * k));
    }
    Sc s;
    sc_set_bytes(s, b, ByteOrder::big);
    return sc_is_zero(s) ? sc_one() : s;
}

template <class Tree, class V>
std::vector<V> tree_inverse(const std::vector<V>& values) {
    const u32 n = u32(values.size());
    std::vector<u32> words(sc_tree_words(n));
    std::vector<V> out(n);
    batch_inverse(
        HostBlock{n}, Tree{words.data(), sc_tree_leaves(n)}, [&](u32 t) { return values[t]; },
        [&](u32 t, const V& v) { out[t] = v; });
    return out;
}
std::vector<Sc> invert_all(const std::vector<Sc>& values) { return tree_inverse<ScTree>(values); }

// A field element from a scalar's bits (any 256-bit value: weakly reduced).
Fe32 fe_from(const Sc& s) {
    Fe32 f;
    for (int i = 0; i < 4; ++i) {
        f.v[2 * i] = u32(s.v[i]);
        f.v[2 * i + 1] = u32(s.v[i] >> 32);
    }
    return f;
}
Fe fe64(const Fe32& a) {  // the exact path's field, reduced
    Fe32 n;
    fe32_normalize(n, a);
    Fe f;
    for (int i = 0; i < 4; ++i) f.v[i] = u64(n.v[2 * i]) | u64(n.v[2 * i + 1]) << 32;
    return f;
}

Sc n_minus(unsigned k) {
    Sc r;
    sc_neg(r, Sc{{k, 0, 0, 0}});
    return r;
}

}  // namespace

TEST_CASE("batch inverse: every leaf gets its own inverse, any block size", "[kernels][unit]") {
    std::uint64_t state = 0x5EED;
    for (u32 n : {1u, 2u, 3u, 5u, 31u, 32u, 33u, 64u, 96u, 127u, 128u, 160u, 224u, 255u, 256u}) {
        std::vector<Sc> v(n);
        for (u32 t = 0; t < n; ++t) v[t] = scalar_from(state);
        // edge values and repeats at both ends and in the middle
        v[0] = sc_one();
        if (n > 1) v[n - 1] = n_minus(1);
        if (n > 2) v[n / 2] = v[0];
        if (n > 3) v[n / 2 + 1] = n_minus(2);
        if (n > 8) v[7] = v[3];
        const std::vector<Sc> inv = invert_all(v);
        for (u32 t = 0; t < n; ++t) {
            INFO("block of " << n << ", thread " << t);
            CHECK(sc_equal(inv[t], sc32_inv(v[t])));
            Sc one;
            sc_mul(one, v[t], inv[t]);  // the exact path's 64-bit product
            CHECK(sc_equal(one, sc_one()));
        }
    }
}

TEST_CASE("batch inverse: a zero value zeroes the block (the documented fail-safe)", "[kernels][unit]") {
    // Callers never put 0 (ecdsa_batch_value32 puts 1 for it); should one
    // enter, every inverse is 0 (na = ng = 0: the ladder's flagged addition,
    // the exact path's verdict), never a wrong nonzero inverse.
    std::uint64_t state = 7;
    std::vector<Sc> v(40);
    for (Sc& s : v) s = scalar_from(state);
    v[17] = sc_zero();
    for (const Sc& s : invert_all(v)) CHECK(sc_is_zero(s));
    CHECK(sc_equal(ecdsa_batch_value32(std::vector<u8>(wire::kEcdsaRecordSize, 0).data(), true), sc_one()));
}

TEST_CASE("batch inverse: field elements mod p, any block size", "[kernels][unit]") {
    std::uint64_t state = 0xF1E1D;
    for (u32 n : {1u, 2u, 7u, 32u, 33u, 100u, 128u, 129u, 256u}) {
        std::vector<Fe32> v(n);
        for (u32 t = 0; t < n; ++t) v[t] = fe_from(scalar_from(state));
        v[0] = fe32_one();
        if (n > 1) v[n - 1] = Fe32{{0xFFFFFC2E, 0xFFFFFFFE, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u}};  // p - 1
        if (n > 2) v[1] = Fe32{{0xFFFFFC30, 0xFFFFFFFE, ~0u, ~0u, ~0u, ~0u, ~0u, ~0u}};      // p + 1, weakly reduced
        if (n > 4) v[3] = v[2];
        const std::vector<Fe32> inv = tree_inverse<FeTree>(v);
        for (u32 t = 0; t < n; ++t) {
            INFO("block of " << n << ", thread " << t);
            CHECK(fe32_equal(inv[t], fe32_inv(v[t])));
            Fe one;
            fe_mul(one, fe64(v[t]), fe64(inv[t]));  // the exact path's 64-bit product
            CHECK(fe_equal(one, fe_one()));
        }
    }
}

TEST_CASE("batch inverse: the BIP-340 parity step checks its 1/Z", "[kernels][unit]") {
    std::uint64_t state = 11;
    const Fe32 y = fe_from(scalar_from(state)), z = fe_from(scalar_from(state));
    CHECK(fe32_equal(parity_value32(true, z), z));
    CHECK(fe32_equal(parity_value32(false, z), fe32_one()));
    CHECK(fe32_equal(parity_value32(true, fe32_zero()), fe32_one()));  // infinity: 1, never 0
    CHECK(finish_parity32(y, z, fe32_inv(z)) != kVerdictRecheck);
    for (const Fe32& wrong : {fe32_zero(), fe32_one(), z}) CHECK(finish_parity32(y, z, wrong) == kVerdictRecheck);
    // and whoever reads a verdict sends anything above valid to the exact path
    std::vector<u8> rec(wire::kSchnorrRecordSize, 0);
    for (u8 v : {kVerdictRecheck, kVerdictParity, u8(200)})
        CHECK(resolve_verdict32(v, rec.data(), wire::RecordKind::schnorr, wire::SigEncoding::opaque) ==
              verify_record_exact(rec.data(), wire::RecordKind::schnorr, wire::SigEncoding::opaque));
}

TEST_CASE("batch inverse: a row checks its 1/s, and a wrong one makes it a recheck", "[kernels][unit]") {
    reference::GenOptions o;
    o.table = wire::Table::ecdsa;
    o.count = 3;
    o.tail_size = 0;
    o.encoding = wire::SigEncoding::compact;
    const std::vector<u8> rows = reference::generate_rows(o);
    const std::size_t stride = wire::stride(wire::RecordKind::ecdsa, 0);
    HostScratch32 scratch;
    const PTable32 ptab = scratch.view();
    for (std::size_t i = 0; i < o.count; ++i) {
        INFO("row " << i);
        const u8* rec = rows.data() + i * stride;
        const Sc s = ecdsa_batch_value32(rec, true), inv = sc32_inv(s);
        CHECK(sc_equal(ecdsa_checked_inverse32(rec, true, inv), inv));
        ptab.store_sinv(inv);
        CHECK(verify_row32(rec, false, true, ptab, host_g_table32()) == kVerdictValid);
        for (const Sc& wrong : {sc_one(), s}) {
            // unchecked, a wrong 1/s makes the valid row invalid: a wrong verdict
            ptab.store_sinv(wrong);
            CHECK(verify_row32(rec, false, true, ptab, host_g_table32()) == kVerdictInvalid);
            // checked it is 0: na = ng = 0, R at infinity, a flagged addition
            CHECK(sc_is_zero(ecdsa_checked_inverse32(rec, true, wrong)));
            ptab.store_sinv(ecdsa_checked_inverse32(rec, true, wrong));
            CHECK(verify_row32(rec, false, true, ptab, host_g_table32()) == kVerdictRecheck);
        }
    }
}

TEST_CASE("batch inverse: bad rows in a block leave their neighbours' verdicts exact", "[kernels][differential]") {
    reference::RowVerifier ref;
    for (wire::SigEncoding enc : {wire::SigEncoding::compact, wire::SigEncoding::opaque}) {
        reference::GenOptions o;
        o.table = wire::Table::ecdsa;
        o.count = 300;  // two full host blocks and a partial one
        o.tail_size = 0;
        o.encoding = enc;
        o.invalid_rate = 0.2;
        o.high_s_rate = 0.25;
        o.seed = 0xB10C + unsigned(enc);
        std::vector<u8> rows = reference::generate_rows(o);
        const std::size_t stride = wire::stride(wire::RecordKind::ecdsa, 0);
        // s = 0, n, n + 1 and 2^256 - 1 (either byte order: all-zero and
        // all-one bytes read the same; n and n + 1 written in the row's
        // order), a zero r, a bad key prefix, at block edges and inside
        const std::size_t bad[] = {0, 1, 63, 64, 127, 128, 129, 200, 255, 256, 299};
        for (std::size_t k = 0; k < std::size(bad); ++k) {
            u8* rec = rows.data() + bad[k] * stride;
            u8* s = rec + kEcdsaSig + 32;
            u8 val[32];
            Sc x = sc_zero();                                      // k % 4 == 0: s = 0
            if (k % 4 == 1) x = Sc{{kN0, kN1, kN2, kN3}};          // s = n
            if (k % 4 == 2) x = Sc{{kN0 + 1, kN1, kN2, kN3}};      // s = n + 1
            sc_get_b32(val, x);
            if (k % 4 == 3) std::memset(val, 0xFF, 32);
            if (enc == wire::SigEncoding::opaque) std::reverse(val, val + 32);  // little-endian
            std::memcpy(s, val, 32);
            if (k == 5) std::memset(rec + kEcdsaSig, 0, 32);  // and r = 0
            if (k == 7) rec[kRecKey] = 0x05;                  // and a bad key
        }
        const wire::RowSpan span{wire::RecordKind::ecdsa, 0, enc, rows.data(), o.count};
        std::vector<u8> results(o.count, 0xAA);
        verify_rows(span, wire::Mode::results, results.data(), 2);
        std::size_t valid = 0;
        for (std::size_t i = 0; i < o.count; ++i) {
            INFO("encoding " << int(enc) << ", row " << i);
            const bool want = ref.verify_row(span, i);
            CHECK(bool(results[i]) == want);
            valid += want;
        }
        for (std::size_t i : bad) CHECK(results[i] == 0);
        // the kernel's own verdicts, before any recheck: a bad s must not
        // reach the tree (0 there would send the whole block to the exact
        // path, right verdicts that hide the defect)
        for (std::size_t b = 0; b < o.count; b += kHostBlockRows) {
            u8 v[kHostBlockRows];
            const std::size_t n = std::min(kHostBlockRows, o.count - b);
            verify_block32(span, b, n, v);
            for (std::size_t t = 0; t < n; ++t) {
                INFO("encoding " << int(enc) << ", row " << b + t);
                CHECK(int(v[t]) == (ref.verify_row(span, b + t) ? int(kVerdictValid) : int(kVerdictInvalid)));
            }
        }
        CHECK(valid > 150);  // most rows stay valid: the test sees wrong inverses
    }
}

TEST_CASE("batch inverse: BIP-340 blocks through the parity step against libsecp256k1", "[kernels][differential]") {
    reference::RowVerifier ref;
    reference::GenOptions o;
    o.table = wire::Table::schnorr;
    o.count = 300;  // two full host blocks and a partial one
    o.tail_size = 0;
    o.invalid_rate = 0.3;
    o.seed = 0x5C4;
    std::vector<u8> rows = reference::generate_rows(o);
    const std::size_t stride = wire::stride(wire::RecordKind::schnorr, 0);
    // and rows refused before the ladder, at block edges
    for (std::size_t i : {0u, 127u, 128u, 299u}) std::memset(rows.data() + i * stride + kSchnorrSig, 0xFF, 32);
    const wire::RowSpan span{wire::RecordKind::schnorr, 0, wire::SigEncoding::opaque, rows.data(), o.count};
    std::size_t valid = 0;
    for (std::size_t b = 0; b < o.count; b += kHostBlockRows) {
        u8 v[kHostBlockRows];
        const std::size_t n = std::min(kHostBlockRows, o.count - b);
        verify_block32(span, b, n, v);
        for (std::size_t t = 0; t < n; ++t) {
            INFO("row " << b + t);
            const bool want = ref.verify_row(span, b + t);
            // the kernel's own verdicts: no kVerdictParity left, no recheck
            CHECK(int(v[t]) == (want ? int(kVerdictValid) : int(kVerdictInvalid)));
            valid += want;
        }
    }
    CHECK(valid > 150);
}

// --- BIP-340's parity in the row: the placement without park words (issue 40.4)

TEST_CASE("parity placement: the second kernel runs exactly where the row's global scratch holds Y and Z",
          "[kernels][unit]") {
    for (int bits = 0; bits < 8; ++bits) {
        const ScratchPlacement p{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0};
        INFO("p_table_shared " << p.p_table_shared << ", streams_shared " << p.streams_shared << ", zg_shared "
                               << p.zg_shared);
        CHECK(parity_kernel_runs(p) == (global_words_per_thread(p) >= kParityParkWords));
    }
    // allshared (SV_SCRATCH_ALL_SHARED): no global scratch, the row inverts its own Z
    CHECK_FALSE(parity_kernel_runs(ScratchPlacement{true, true, true}));
    // p12shared on sm_90: only zg global (24 words), enough to park Y and Z
    CHECK(parity_kernel_runs(ScratchPlacement{true, true, false}));
    // this build's placement on every architecture: the parity kernel
    for (int arch : {750, 800, 860, 870, 890, 900, 1000, 1030, 1200}) CHECK(parity_kernel_runs(scratch_placement(arch)));
}

namespace {

// A BIP-340 record for key d and nonce k on message bytes `seed`: s = k + e d,
// valid exactly when R = kG has an even y (the signer's choice, not made
// here), so about half are invalid only through R.y's parity.
wire::SchnorrRecord parity_record(std::uint64_t seed) {
    Sc d = kernel_test::detail::derive_scalar(seed, 1, 'd');
    const Sc k = kernel_test::detail::derive_scalar(seed, 2, 'k');
    Ge P = kernel_test::detail::mul_g(d);
    if (fe_is_odd(P.y)) {  // BIP-340 keys have even y
        sc_neg(d, d);
        ge_neg(P, P);
    }
    const Ge R = kernel_test::detail::mul_g(k);
    wire::SchnorrRecord rec{};
    kernel_test::detail::derive(rec.hash, seed, 3, 'm');
    fe_get_b32(rec.xonly, P.x);
    fe_get_b32(rec.sig, R.x);
    u8 eb[32];
    bip340_challenge(eb, rec.sig, rec.xonly, rec.hash);
    Sc e, s;
    sc_set_bytes(e, eb, ByteOrder::big);
    sc_mul(s, e, d);
    sc_add(s, s, k);
    sc_get_b32(rec.sig + 32, s);
    return rec;
}

}  // namespace

TEST_CASE("parity in the row (allshared's placement) gives the parity kernel's verdicts and libsecp256k1's",
          "[kernels][differential]") {
    reference::RowVerifier ref;
    // generated rows (30% broken), hostile ones, and rows whose R has an odd y
    reference::GenOptions o;
    o.table = wire::Table::schnorr;
    o.count = 400;
    o.tail_size = 0;
    o.invalid_rate = 0.3;
    o.seed = 0x9A41;
    std::vector<u8> rows = reference::generate_rows(o);
    const std::size_t stride = wire::stride(wire::RecordKind::schnorr, 0);
    for (std::size_t i = 5; i < o.count; i += 37) std::memset(rows.data() + i * stride + kSchnorrSig + 32, 0xFF, 32);
    for (std::size_t i = 11; i < o.count; i += 41) std::memset(rows.data() + i * stride + kRecKey, 0xFF, 32);
    for (std::size_t i = 17; i < o.count; i += 43) std::memset(rows.data() + i * stride + kSchnorrSig + 32, 0, 32);
    for (std::uint64_t seed = 0; seed < 120; ++seed) {
        const wire::SchnorrRecord rec = parity_record(0x0DD0 + seed);
        const auto* b = reinterpret_cast<const u8*>(&rec);
        rows.insert(rows.end(), b, b + sizeof rec);
    }
    const std::size_t n = rows.size() / stride;
    const wire::RowSpan span{wire::RecordKind::schnorr, 0, wire::SigEncoding::opaque, rows.data(), n};
    std::size_t reached_parity = 0, odd_rejected = 0, valid = 0;
    for (std::size_t i = 0; i < n; ++i) {
        INFO("row " << i);
        const u8* rec = span.row(i);
        HostScratch32 scratch;
        const u8 in_row = verify_row32<false>(rec, true, false, scratch.view(), host_g_table32());
        // the parked form, as the host twin and the parity kernel run it
        HostScratch32 scratch2;
        u32 park[kParityParkWords];
        const u8 parked_raw = verify_row32<true>(rec, true, false, scratch2.view(), host_g_table32(), park);
        const u8 parked = verify_record32(rec, wire::RecordKind::schnorr, wire::SigEncoding::opaque);
        CHECK(int(in_row) == int(parked));
        CHECK(in_row != kVerdictParity);  // the row answers itself
        const bool want = ref.verify_row(span, i);
        CHECK(resolve_verdict32(in_row, rec, wire::RecordKind::schnorr, wire::SigEncoding::opaque) == want);
        if (parked_raw == kVerdictParity) {
            ++reached_parity;
            odd_rejected += in_row == kVerdictInvalid;
        }
        valid += want;
    }
    // the parity decided many rows, both ways
    CHECK(reached_parity > 200);
    CHECK(odd_rejected > 20);
    CHECK(valid > 200);
}
