// SPDX-License-Identifier: MIT
// The parsing step of a row, tested directly: the scalar and field-element
// range checks that come before any curve arithmetic. A verdict-only test
// cannot see most of them: a row with s >= n or R.x >= p is invalid whether
// the check is there or not (no valid BIP-340 signature has s + n < 2^256 or
// R.x + p < 2^256 that could be built), so the GPU kernel's prepare_*32 functions
// are called directly and must refuse, and then every verifier (the GPU kernel's math,
// the exact path, the resolved kernel verdict, libsecp256k1 through the reference)
// must say INVALID. For ECDSA the signature can be forged for any (r, s) by
// choosing the key, so there the encodings r + n and s + n of a valid small
// r or s are built and the verdicts themselves show an accepting bug, and so
// does the valid R.x >= n signature that needs the second, (r + n) comparison.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/kernel_math.hpp"
#include "kernels/exact_verify.hpp"
#include "kernels/verify32.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"
#include "support/be256.hpp"
#include "support/test_vectors.hpp"
#include "tests/kernels/curve_points.hpp"

using namespace sigverify;
using namespace sigverify::kernels;
using wire::RecordKind;
using wire::SigEncoding;
using B32 = std::array<u8, 32>;
using kernel_test::forge_key_for;
using kernel_test::lin;
using kernel_test::point_with_x_from;
using kernel_test::sc_bytes;

namespace {

B32 be32(const char* hex) {
    const auto v = test::from_hex(hex);
    B32 out{};  // (used for namespace-scope constants: no REQUIRE here)
    std::memcpy(out.data() + (32 - std::min<std::size_t>(v.size(), 32)), v.data(), std::min<std::size_t>(v.size(), 32));
    return out;
}

// Big-endian a + k (k small); REQUIREs no carry out of 256 bits.
B32 add_small(const B32& a, unsigned k) {
    B32 r{};
    unsigned carry = k;
    for (int i = 31; i >= 0; --i) {
        const unsigned s = unsigned(a[i]) + (carry & 0xFF);
        carry = (carry >> 8) + (s >> 8);
        r[i] = static_cast<u8>(s);
    }
    REQUIRE(carry == 0);
    return r;
}
B32 sub_one(const B32& a) {
    B32 r = a;
    for (int i = 31; i >= 0; --i)
        if (r[i]-- != 0) break;
    return r;
}
using test::add_be;

std::string hex(const B32& v) {
    static const char* d = "0123456789abcdef";
    std::string s;
    for (u8 b : v) {
        s += d[b >> 4];
        s += d[b & 15];
    }
    return s;
}

const B32 kN = be32("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141");
const B32 kP = be32("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F");
const B32 kAllOnes = be32("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF");

Sc sc_from(unsigned v) {
    B32 b{};
    b[31] = static_cast<u8>(v);
    b[30] = static_cast<u8>(v >> 8);
    Sc s;
    sc_set_bytes(s, b.data(), ByteOrder::big);
    return s;
}

// Valid rows from the reference generator (libsecp256k1 signs), no tail.
std::vector<std::uint8_t> valid_rows(wire::Table t, std::size_t n, std::uint64_t seed) {
    reference::GenOptions o;
    o.table = t;
    o.count = n;
    o.tail_size = 0;
    o.encoding = SigEncoding::compact;
    o.seed = seed;
    return reference::generate_rows(o);
}

// Every verifier's verdict on one Schnorr record.
struct Verdicts {
    u8 v2;
    bool exact, resolved, reference;
};
Verdicts schnorr_verdicts(const reference::RowVerifier& ref, const wire::SchnorrRecord& rec) {
    const u8* p = reinterpret_cast<const u8*>(&rec);
    return {verify_record32(p, RecordKind::schnorr, SigEncoding::opaque),
            verify_record_exact(p, RecordKind::schnorr, SigEncoding::opaque),
            verify_record(p, RecordKind::schnorr, SigEncoding::opaque), ref.verify_schnorr(p)};
}

// An ECDSA record in the given encoding from big-endian r and s.
wire::EcdsaRecord ecdsa_record(const wire::EcdsaRecord& base, const B32& r, const B32& s, SigEncoding enc) {
    wire::EcdsaRecord rec = base;
    std::memcpy(rec.sig, r.data(), 32);
    std::memcpy(rec.sig + 32, s.data(), 32);
    if (enc == SigEncoding::opaque) {
        u8 swapped[64];
        reference::swap_sig_encoding(rec.sig, swapped);
        std::memcpy(rec.sig, swapped, 64);
    }
    return rec;
}
Verdicts ecdsa_verdicts(const reference::RowVerifier& ref, const wire::EcdsaRecord& rec, SigEncoding enc) {
    const u8* p = reinterpret_cast<const u8*>(&rec);
    return {verify_record32(p, RecordKind::ecdsa, enc), verify_record_exact(p, RecordKind::ecdsa, enc),
            verify_record(p, RecordKind::ecdsa, enc), ref.verify_ecdsa(p, enc)};
}
bool prepare_ecdsa(const wire::EcdsaRecord& rec, SigEncoding enc, Job32* out = nullptr) {
    Job32 j;
    const u8* p = reinterpret_cast<const u8*>(&rec);
    const bool compact = enc == SigEncoding::compact;
    HostScratch32 scratch;
    const PTable32 ptab = scratch.view();
    ptab.store_sinv(sc32_inv(ecdsa_batch_value32(p, compact)));
    const bool ok = prepare_ecdsa32(j, p, compact, ptab);
    if (out != nullptr) *out = j;
    return ok;
}

void require_all_invalid(const Verdicts& v) {
    CHECK(v.v2 == kVerdictInvalid);
    CHECK_FALSE(v.exact);
    CHECK_FALSE(v.resolved);
    CHECK_FALSE(v.reference);
}
// A valid row here is an honest one (libsecp256k1 signed it, or a forged
// signature whose ladder meets no special case): the GPU kernel's math must decide it
// itself. A recheck would be right but cost a CPU verification; no honest
// row ever needs one (verify32.hpp), so only kVerdictValid is accepted.
void require_all_valid(const Verdicts& v) {
    CHECK(int(v.v2) == int(kVerdictValid));
    CHECK(v.exact);
    CHECK(v.resolved);
    CHECK(v.reference);
}

wire::EcdsaRecord forged_ecdsa(const Ge& R, const Sc& r, const Sc& s, const Sc& z) {
    const Ge key = forge_key_for(R, r, s, z);
    wire::EcdsaRecord rec{};
    sc_get_b32(rec.hash, z);
    rec.point[0] = fe_is_odd(key.y) ? 0x03 : 0x02;
    fe_get_b32(rec.point + 1, key.x);
    sc_get_b32(rec.sig, r);
    sc_get_b32(rec.sig + 32, s);
    return rec;
}

}  // namespace

TEST_CASE("parse: Schnorr s >= n and R.x >= p are refused before any curve arithmetic", "[kernels][parse]") {
    reference::RowVerifier ref;
    const auto rows = valid_rows(wire::Table::schnorr, 6, 0x5C1);
    for (std::size_t i = 0; i < 6; ++i) {
        wire::SchnorrRecord rec;
        std::memcpy(&rec, rows.data() + i * sizeof rec, sizeof rec);
        INFO("row " << i);
        Job32 j;
        REQUIRE(prepare_schnorr32(j, reinterpret_cast<const u8*>(&rec)));
        require_all_valid(schnorr_verdicts(ref, rec));

        B32 s{}, rx{};
        std::memcpy(rx.data(), rec.sig, 32);
        std::memcpy(s.data(), rec.sig + 32, 32);
        // s + n fits in 256 bits only when s < 2^256 - n (~2^129): never for a
        // real signature, so the congruent s + n row is left to ECDSA below.
        std::vector<B32> bad_s = {kN, add_small(kN, 1), kAllOnes};
        if (s < be32("014551231950B75FC4402DA1732FC9BEBF")) bad_s.push_back(add_be(s, kN));  // s < 2^256 - n
        for (const B32& v : bad_s) {
            auto r2 = rec;
            std::memcpy(r2.sig + 32, v.data(), 32);
            INFO("s = " << hex(v));
            CHECK_FALSE(prepare_schnorr32(j, reinterpret_cast<const u8*>(&r2)));
            require_all_invalid(schnorr_verdicts(ref, r2));
        }
        // the largest s in range parses (the ladder then says invalid)
        {
            auto r2 = rec;
            const B32 v = sub_one(kN);
            std::memcpy(r2.sig + 32, v.data(), 32);
            CHECK(prepare_schnorr32(j, reinterpret_cast<const u8*>(&r2)));
            require_all_invalid(schnorr_verdicts(ref, r2));
        }
        for (const B32& v : {kP, add_small(kP, 1), kAllOnes}) {
            auto r2 = rec;
            std::memcpy(r2.sig, v.data(), 32);
            INFO("R.x = " << hex(v));
            CHECK_FALSE(prepare_schnorr32(j, reinterpret_cast<const u8*>(&r2)));
            require_all_invalid(schnorr_verdicts(ref, r2));
        }
        {
            auto r2 = rec;
            const B32 v = sub_one(kP);
            std::memcpy(r2.sig, v.data(), 32);
            CHECK(prepare_schnorr32(j, reinterpret_cast<const u8*>(&r2)));
            require_all_invalid(schnorr_verdicts(ref, r2));
        }
        // key x >= p
        for (const B32& v : {kP, add_small(kP, 1)}) {
            auto r2 = rec;
            std::memcpy(r2.xonly, v.data(), 32);
            CHECK_FALSE(prepare_schnorr32(j, reinterpret_cast<const u8*>(&r2)));
            require_all_invalid(schnorr_verdicts(ref, r2));
        }
    }
}

TEST_CASE("parse: ECDSA r and s outside [1, n) are refused in both encodings", "[kernels][parse]") {
    reference::RowVerifier ref;
    const auto rows = valid_rows(wire::Table::ecdsa, 4, 0xEC1);
    for (std::size_t i = 0; i < 4; ++i) {
        wire::EcdsaRecord base;
        std::memcpy(&base, rows.data() + i * sizeof base, sizeof base);
        B32 r{}, s{};
        std::memcpy(r.data(), base.sig, 32);
        std::memcpy(s.data(), base.sig + 32, 32);
        for (SigEncoding enc : {SigEncoding::compact, SigEncoding::opaque}) {
            INFO("row " << i << ", encoding " << int(enc));
            const auto good = ecdsa_record(base, r, s, enc);
            REQUIRE(prepare_ecdsa(good, enc));
            require_all_valid(ecdsa_verdicts(ref, good, enc));
            for (const B32& v : {B32{}, kN, add_small(kN, 1), kAllOnes}) {
                INFO("value " << hex(v));
                const auto bad_r = ecdsa_record(base, v, s, enc), bad_s = ecdsa_record(base, r, v, enc);
                CHECK_FALSE(prepare_ecdsa(bad_r, enc));
                CHECK_FALSE(prepare_ecdsa(bad_s, enc));
                require_all_invalid(ecdsa_verdicts(ref, bad_r, enc));
                require_all_invalid(ecdsa_verdicts(ref, bad_s, enc));
            }
            // n - 1 parses
            CHECK(prepare_ecdsa(ecdsa_record(base, sub_one(kN), s, enc), enc));
            CHECK(prepare_ecdsa(ecdsa_record(base, r, sub_one(kN), enc), enc));
        }
    }
}

TEST_CASE("parse: ECDSA r + n and s + n encodings of a valid signature are invalid", "[kernels][parse]") {
    // Forged valid signatures with a small r (R.x tiny) and a small s, so that
    // r + n and s + n fit in 32 bytes: congruent to the valid values, refused
    // only by the range check.
    reference::RowVerifier ref;
    for (unsigned rep = 0; rep < 6; ++rep) {
        B32 small{};
        small[31] = static_cast<u8>(1 + rep);
        const Ge R = point_with_x_from(small);
        B32 xb{};
        fe_get_b32(xb.data(), R.x);
        Sc r;
        REQUIRE_FALSE(sc_set_bytes(r, xb.data(), ByteOrder::big));
        const Sc s = sc_from(1 + 3 * rep), z = sc_from(0x1234 + rep);
        const auto rec = forged_ecdsa(R, r, s, z);
        const B32 rb = sc_bytes(r), sb = sc_bytes(s);
        for (SigEncoding enc : {SigEncoding::compact, SigEncoding::opaque}) {
            INFO("rep " << rep << ", encoding " << int(enc));
            const auto good = ecdsa_record(rec, rb, sb, enc);
            REQUIRE(prepare_ecdsa(good, enc));
            require_all_valid(ecdsa_verdicts(ref, good, enc));
            const auto r_plus_n = ecdsa_record(rec, add_be(rb, kN), sb, enc);
            const auto s_plus_n = ecdsa_record(rec, rb, add_be(sb, kN), enc);
            CHECK_FALSE(prepare_ecdsa(r_plus_n, enc));
            CHECK_FALSE(prepare_ecdsa(s_plus_n, enc));
            require_all_invalid(ecdsa_verdicts(ref, r_plus_n, enc));
            require_all_invalid(ecdsa_verdicts(ref, s_plus_n, enc));
        }
    }
}

TEST_CASE("parse: ECDSA with R.x >= n is valid through the (r + n) comparison", "[kernels][parse]") {
    reference::RowVerifier ref;
    for (unsigned rep = 0; rep < 6; ++rep) {
        const Ge R = point_with_x_from(add_small(kN, 1 + 97 * rep));  // n < R.x < p
        B32 xb{};
        fe_get_b32(xb.data(), R.x);
        Sc r;
        REQUIRE(sc_set_bytes(r, xb.data(), ByteOrder::big));  // overflowed: r = R.x - n
        const Sc s = sc_from(0x777 + rep), z = sc_from(0x4242 + rep);
        const auto rec = forged_ecdsa(R, r, s, z);
        const B32 rb = sc_bytes(r), sb = sc_bytes(s);
        for (SigEncoding enc : {SigEncoding::compact, SigEncoding::opaque}) {
            INFO("rep " << rep << ", encoding " << int(enc));
            const auto good = ecdsa_record(rec, rb, sb, enc);
            Job32 j;
            REQUIRE(prepare_ecdsa(good, enc, &j));
            CHECK(j.has_alt);  // r < p - n: R.x may be r + n
            CHECK(fe32_equal(j.x_alt, fe32_from_fe(R.x)));
            const Verdicts v = ecdsa_verdicts(ref, good, enc);
            CHECK(v.v2 == kVerdictValid);
            CHECK(v.exact);
            CHECK(v.resolved);
            CHECK(v.reference);
            // R.x itself as r (>= n): refused
            const auto as_x = ecdsa_record(rec, xb, sb, enc);
            CHECK_FALSE(prepare_ecdsa(as_x, enc));
            require_all_invalid(ecdsa_verdicts(ref, as_x, enc));
        }
    }
    // r >= p - n: r + n is not a field element, no second comparison
    const auto rows = valid_rows(wire::Table::ecdsa, 1, 0xEC2);
    wire::EcdsaRecord base;
    std::memcpy(&base, rows.data(), sizeof base);
    B32 s{};
    std::memcpy(s.data(), base.sig + 32, 32);
    Job32 j;
    REQUIRE(prepare_ecdsa(ecdsa_record(base, sub_one(kN), s, SigEncoding::compact), SigEncoding::compact, &j));
    CHECK_FALSE(j.has_alt);
}

TEST_CASE("parse: ECDSA r and s at the range's ends parse, seen in the verdict: a row whose sum cancels is a recheck",
          "[kernels][parse]") {
    // With z = -r d (mod n), u1 G + u2 P = (z + r d) / s G = O whatever r and
    // s are, and a ladder of incomplete additions cannot reach O without an
    // addition of equal or opposite points (test_ladder_rechecks.cpp): the
    // row must come back kVerdictRecheck, then invalid. So at r, s = 1 and
    // n - 1 the verdict itself says that the parse accepted the value (a row
    // refused there is kVerdictInvalid, never a recheck), and that the ladder
    // flagged its degenerate addition (unflagged, it is a plain invalid).
    reference::RowVerifier ref;
    const Sc d = sc_from(0x2357);
    const Ge key = lin(ge_generator(), d, sc_from(0));  // d G
    const B32 nm1 = sub_one(kN);
    const B32 one = sc_bytes(sc_from(1));
    for (const B32& rb : {one, nm1})
        for (const B32& sb : {one, nm1}) {
            Sc r, z;
            REQUIRE_FALSE(sc_set_bytes(r, rb.data(), ByteOrder::big));
            sc_mul(z, r, d);
            sc_neg(z, z);
            wire::EcdsaRecord base{};
            sc_get_b32(base.hash, z);
            base.point[0] = fe_is_odd(key.y) ? 0x03 : 0x02;
            fe_get_b32(base.point + 1, key.x);
            for (SigEncoding enc : {SigEncoding::compact, SigEncoding::opaque}) {
                INFO("r = " << hex(rb) << ", s = " << hex(sb) << ", encoding " << int(enc));
                const auto rec = ecdsa_record(base, rb, sb, enc);
                CHECK(prepare_ecdsa(rec, enc));
                const Verdicts v = ecdsa_verdicts(ref, rec, enc);
                CHECK(int(v.v2) == int(kVerdictRecheck));
                CHECK_FALSE(v.exact);
                CHECK_FALSE(v.resolved);
                CHECK_FALSE(v.reference);
            }
        }
}
