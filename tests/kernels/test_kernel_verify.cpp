// SPDX-License-Identifier: MIT
// The host-compiled kernel verification against libsecp256k1 (through the
// reference verifier): BIP-340 and Wycheproof vectors, generated rows of all
// four tables, and hand-constructed adversarial signatures (r + n < p,
// results at infinity, x >= p, zero/overflowing r and s, bad prefixes, odd R.y).
#include <catch2/catch.hpp>

#include <array>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "kernels/kernel_math.hpp"
#include "kernels/verify32.hpp"
#include "kernels/selftest_vectors.hpp"
#include "kernels/exact_verify.hpp"
#include "reference/reference_verifier.hpp"
#include "support/first_differences.hpp"
#include "support/be256.hpp"
#include "support/test_vectors.hpp"
#include "tests/kernels/differential.hpp"
#include "tests/kernels/curve_points.hpp"
#include "tests/kernels/host_rows.hpp"

using namespace sigverify;
using namespace sigverify::kernels;
using wire::SigEncoding;
using wire::Table;
using kernel_test::forge_key_for;
using kernel_test::lin;
using kernel_test::point_with_x_from;
using kernel_test::sc_bytes;
using kernel_test::detail::mul_g;  // the row generator's k * G

namespace {

const Table kTables[] = {Table::ecdsa, Table::multisig, Table::schnorr, Table::threshold};

bool kernel_ecdsa(const u8* rec, SigEncoding enc) {
    return verify_record(rec, wire::RecordKind::ecdsa, enc);
}
bool kernel_schnorr(const u8* rec) { return verify_record(rec, wire::RecordKind::schnorr, SigEncoding::opaque); }

Sc random_scalar(std::mt19937_64& g) {
    u8 b[32];
    for (auto& x : b) x = static_cast<u8>(g());
    Sc s;
    sc_set_bytes(s, b, ByteOrder::big);
    if (sc_is_zero(s)) s = sc_one();
    return s;
}

void put_compressed(u8* out, const Ge& p) {
    out[0] = fe_is_odd(p.y) ? 0x03 : 0x02;
    fe_get_b32(out + 1, p.x);
}

// An ECDSA record (compact signature) from raw 32-byte big-endian r and s.
wire::EcdsaRecord ecdsa_record(const u8* hash, const Ge& key, const u8* r32, const u8* s32) {
    wire::EcdsaRecord rec{};
    std::memcpy(rec.hash, hash, 32);
    put_compressed(rec.point, key);
    std::memcpy(rec.sig, r32, 32);
    std::memcpy(rec.sig + 32, s32, 32);
    return rec;
}

// Every hand-made record and its verdict, re-run at the end of each test
// through the span path the host-kernel backend uses (verify_rows), with
// valid and invalid records side by side in one span.
struct Seen {
    std::vector<u8> ecdsa, ecdsa_want, schnorr, schnorr_want;
};
Seen& seen() {
    static Seen s;
    return s;
}

void check_batched() {
    Seen& s = seen();
    for (int kind = 0; kind < 2; ++kind) {
        auto& rows = kind == 0 ? s.ecdsa : s.schnorr;
        auto& want = kind == 0 ? s.ecdsa_want : s.schnorr_want;
        if (want.empty()) continue;
        const wire::RowSpan span{kind == 0 ? wire::RecordKind::ecdsa : wire::RecordKind::schnorr, 0,
                                 SigEncoding::compact, rows.data(), want.size()};
        std::vector<u8> got(want.size(), 0xEE);
        verify_rows(span, wire::Mode::results, got.data(), 1);
        const std::string diff = test::first_differences(got, want);
        INFO((kind == 0 ? "ecdsa" : "schnorr") << " batched: " << diff);
        CHECK(diff.empty());
        rows.clear();
        want.clear();
    }
}

// Checks one ECDSA record (compact) both ways and in both encodings; returns
// the agreed verdict.
// A kernel bug can make every one of thousands of rows disagree; report the
// first few disagreements and then stop the test case, so a failure finishes
// quickly instead of printing thousands of failed CHECKs.
constexpr int kMaxDisagreements = 5;
int& disagreements() {
    static int n = 0;
    return n;
}
void note_agreement(bool agree, const char* what) {
    if (agree) return;
    ++disagreements();
    INFO(what << " (disagreement " << disagreements() << ")");
    CHECK(agree);
    REQUIRE(disagreements() < kMaxDisagreements);
}

bool agree_ecdsa(const reference::RowVerifier& ref, const wire::EcdsaRecord& compact) {
    const u8* c = reinterpret_cast<const u8*>(&compact);
    wire::EcdsaRecord opaque = compact;
    reference::swap_sig_encoding(compact.sig, opaque.sig);
    const u8* o = reinterpret_cast<const u8*>(&opaque);
    const bool want = ref.verify_ecdsa(c, SigEncoding::compact);
    note_agreement(ref.verify_ecdsa(o, SigEncoding::opaque) == want, "reference opaque vs compact");
    note_agreement(kernel_ecdsa(c, SigEncoding::compact) == want, "kernel compact vs reference");
    note_agreement(kernel_ecdsa(o, SigEncoding::opaque) == want, "kernel opaque vs reference");
    seen().ecdsa.insert(seen().ecdsa.end(), c, c + sizeof compact);
    seen().ecdsa_want.push_back(want ? 1 : 0);
    return want;
}

bool agree_schnorr(const reference::RowVerifier& ref, const wire::SchnorrRecord& rec) {
    const u8* p = reinterpret_cast<const u8*>(&rec);
    const bool want = ref.verify_schnorr(p);
    note_agreement(kernel_schnorr(p) == want, "kernel schnorr vs reference");
    seen().schnorr.insert(seen().schnorr.end(), p, p + sizeof rec);
    seen().schnorr_want.push_back(want ? 1 : 0);
    return want;
}

// 32 big-endian bytes of a 256-bit hex value.
std::array<u8, 32> be32(const char* hex) {
    const auto v = test::from_hex(hex);
    std::array<u8, 32> out{};
    REQUIRE(v.size() <= 32);
    std::memcpy(out.data() + (32 - v.size()), v.data(), v.size());
    return out;
}

using test::add_be;

const char* kNHexV = "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141";
const char* kPHexV = "FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEFFFFFC2F";

}  // namespace

TEST_CASE("kernel math: BIP-340 vectors", "[kernels][vectors]") {
    const auto set = test::load_bip340();
    REQUIRE(set.cases.size() == 15);
    reference::RowVerifier ref;
    for (const auto& c : set.cases) {
        INFO("BIP-340 vector " << c.index << " " << c.comment);
        const u8* rec = reinterpret_cast<const u8*>(&c.record);
        CHECK(kernel_schnorr(rec) == c.expected_valid);
        CHECK(ref.verify_schnorr(rec) == c.expected_valid);
    }
}

TEST_CASE("kernel math: all Wycheproof vectors", "[kernels][vectors]") {
    reference::RowVerifier ref;
    struct File {
        const char* name;
        test::WycheproofFormat format;
        bool consensus_high_s;  // bitcoin variant: expected verdicts assume low-S only
    };
    const File files[] = {
        {"ecdsa_secp256k1_sha256_test.json", test::WycheproofFormat::der, false},
        {"ecdsa_secp256k1_sha256_p1363_test.json", test::WycheproofFormat::p1363, false},
        {"ecdsa_secp256k1_sha256_bitcoin_test.json", test::WycheproofFormat::der, true},
    };
    std::size_t checked = 0;
    std::size_t wrong_verdicts = 0;
    for (const auto& f : files) {
        const auto set = test::load_wycheproof(f.name, f.format);
        REQUIRE(!set.cases.empty());
        CHECK(set.skipped_but_valid == 0);
        CHECK(set.cases.size() + set.skipped_encoding == set.total);
        for (const auto& c : set.cases) {
            INFO(f.name << " tcId " << c.tc_id << " " << c.comment);
            const bool verdict = agree_ecdsa(ref, c.record);
            if (!f.consensus_high_s && verdict != c.expected_valid()) {
                ++wrong_verdicts;
                if (wrong_verdicts <= 5) CHECK(verdict == c.expected_valid());  // the first few, then a count
            }
            ++checked;
        }
    }
    CHECK(checked > 700);
    CHECK(wrong_verdicts == 0);
    check_batched();
}

TEST_CASE("kernel math: generated rows of all four tables match libsecp256k1", "[kernels][differential]") {
// Every table and encoding, both verdicts and high-S in thousands of rows each;
// the volume is test_kernel_long's (CI's long step).
#ifndef SIGVERIFY_KERNEL_ROWS_DEFAULT
#define SIGVERIFY_KERNEL_ROWS_DEFAULT 5000
#endif
    const std::size_t count = kernel_test::rows_from_env(SIGVERIFY_KERNEL_ROWS_DEFAULT);
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    reference::Verifier verifier(threads);
    for (Table t : kTables) {
        for (SigEncoding enc : {SigEncoding::opaque, SigEncoding::compact}) {
            if (wire::record_kind(t) == wire::RecordKind::schnorr && enc == SigEncoding::compact) continue;
            const auto st = kernel_test::run_differential(t, enc, count, wire::canonical_tail_size(t),
                                                          41 + unsigned(t), verifier, threads);
            kernel_test::print_stats("[kernels]", t, enc, st, threads);
        }
    }
    // odd strides: no tail, and a long tail
    for (Table t : {Table::multisig, Table::threshold}) {
        for (std::size_t ks : {std::size_t(0), std::size_t(255)}) {
            kernel_test::run_differential(t, SigEncoding::opaque, 2'000, ks, 900 + ks, verifier, threads);
        }
    }
}

TEST_CASE("kernel math: ECDSA with R.x >= n (verdict needs the (r + n) Z^2 check)", "[kernels][adversarial]") {
    reference::RowVerifier ref;
    std::mt19937_64 g(1);
    int valid_seen = 0;
    // R.x in [n, p): r = R.x - n < p - n
    for (int rep = 0; rep < 12; ++rep) {
        std::array<u8, 32> off{};
        off[31] = static_cast<u8>(rep * 17);
        off[20] = static_cast<u8>(g());
        Ge R = point_with_x_from(add_be(be32(kNHexV), off));
        if (rep & 1) ge_neg(R, R);
        // r = R.x - n as a scalar: R.x mod n
        u8 xb[32];
        fe_get_b32(xb, R.x);
        Sc r;
        REQUIRE(sc_set_bytes(r, xb, ByteOrder::big));  // overflowed: x >= n
        REQUIRE(!sc_is_zero(r));
        const Sc s = random_scalar(g), z = random_scalar(g);
        const Ge key = forge_key_for(R, r, s, z);
        const auto hb = sc_bytes(z), rb = sc_bytes(r), sb = sc_bytes(s);
        INFO("rep " << rep);
        const bool verified = agree_ecdsa(ref, ecdsa_record(hb.data(), key, rb.data(), sb.data()));
        CHECK(verified);
        valid_seen += verified ? 1 : 0;  // counts only rows that really verified valid
        // high-S form of the same signature: still valid
        Sc ns;
        sc_neg(ns, s);
        const auto nsb = sc_bytes(ns);
        CHECK(agree_ecdsa(ref, ecdsa_record(hb.data(), key, rb.data(), nsb.data())));
        // r encoded as R.x itself (>= n): overflow, invalid
        CHECK(!agree_ecdsa(ref, ecdsa_record(hb.data(), key, xb, sb.data())));
        // a different hash: invalid
        auto hb2 = hb;
        hb2[31] ^= 1;
        CHECK(!agree_ecdsa(ref, ecdsa_record(hb2.data(), key, rb.data(), sb.data())));
    }
    CHECK(valid_seen == 12);
    // R.x < n but r + n would be a field element: the second check must not
    // accept a point whose x is r + n when that is not R.x
    for (int rep = 0; rep < 8; ++rep) {
        std::array<u8, 32> small{};
        small[31] = static_cast<u8>(1 + rep);
        const Ge R = point_with_x_from(small);  // x tiny: r = x < p - n
        u8 xb[32];
        fe_get_b32(xb, R.x);
        Sc r;
        REQUIRE(!sc_set_bytes(r, xb, ByteOrder::big));
        const Sc s = random_scalar(g), z = random_scalar(g);
        const Ge key = forge_key_for(R, r, s, z);
        const auto hb = sc_bytes(z), sb = sc_bytes(s);
        CHECK(agree_ecdsa(ref, ecdsa_record(hb.data(), key, xb, sb.data())));
        // r + n encoded (< 2^256 since r is tiny): overflow, invalid although
        // it is congruent to a valid r
        std::array<u8, 32> xa{};
        std::memcpy(xa.data(), xb, 32);
        const auto rpn = add_be(be32(kNHexV), xa);
        CHECK(!agree_ecdsa(ref, ecdsa_record(hb.data(), key, rpn.data(), sb.data())));
    }
    check_batched();
}

TEST_CASE("kernel math: results at infinity, zero and overflowing r/s, bad keys", "[kernels][adversarial]") {
    reference::RowVerifier ref;
    std::mt19937_64 g(2);
    const auto n = be32(kNHexV);
    const auto p = be32(kPHexV);
    std::array<u8, 32> one{};
    one[31] = 1;
    const std::array<u8, 32> zero{};
    const auto all_ff = be32("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF");

    for (int rep = 0; rep < 10; ++rep) {
        INFO("rep " << rep);
        const Sc d = random_scalar(g);
        const Ge key = mul_g(d);
        // u1 G + u2 P = O: z = -r d
        const Sc r = random_scalar(g), s = random_scalar(g);
        Sc z;
        sc_mul(z, r, d);
        sc_neg(z, z);
        const auto zb = sc_bytes(z), rb = sc_bytes(r), sb = sc_bytes(s);
        CHECK(!agree_ecdsa(ref, ecdsa_record(zb.data(), key, rb.data(), sb.data())));

        // a genuine signature, then broken in each field
        const Sc k = random_scalar(g);
        const Ge R = mul_g(k);
        u8 rxb[32];
        fe_get_b32(rxb, R.x);
        Sc rr;
        sc_set_bytes(rr, rxb, ByteOrder::big);
        const Sc m = random_scalar(g);
        Sc ss, t;
        sc_mul(t, rr, d);
        sc_add(t, t, m);
        Sc kinv;
        kinv = sc32_inv(k);
        sc_mul(ss, kinv, t);  // s = k^-1 (z + r d)
        const auto mb = sc_bytes(m), rrb = sc_bytes(rr), ssb = sc_bytes(ss);
        const auto good = ecdsa_record(mb.data(), key, rrb.data(), ssb.data());
        CHECK(agree_ecdsa(ref, good));
        for (const auto& bad : {zero, n, add_be(n, one), all_ff}) {
            auto rec = good;
            std::memcpy(rec.sig + 32, bad.data(), 32);  // s
            CHECK(!agree_ecdsa(ref, rec));
            rec = good;
            std::memcpy(rec.sig, bad.data(), 32);  // r
            CHECK(!agree_ecdsa(ref, rec));
        }
        // hash values at and above n reduce mod n: z = n + m would need m < 2^256 - n
        for (u8 prefix : {0x00, 0x01, 0x04, 0x05, 0x06, 0x07, 0xFF}) {
            auto rec = good;
            rec.point[0] = prefix;
            CHECK(!agree_ecdsa(ref, rec));
        }
        {
            auto rec = good;
            rec.point[0] ^= 1;  // the other y: another key
            CHECK(!agree_ecdsa(ref, rec));
        }
        // key x >= p and x not on the curve
        for (const auto& x : {p, add_be(p, one), all_ff}) {
            auto rec = good;
            std::memcpy(rec.point + 1, x.data(), 32);
            CHECK(!agree_ecdsa(ref, rec));
        }
        for (int t2 = 0; t2 < 20; ++t2) {
            auto rec = good;
            rec.point[32] = static_cast<u8>(t2);
            agree_ecdsa(ref, rec);
        }
    }
    // z = 0 and z = n (reduces to 0), signed for real: s = k^-1 r d
    for (int rep = 0; rep < 4; ++rep) {
        const Sc d = random_scalar(g), k = random_scalar(g);
        const Ge key = mul_g(d), R = mul_g(k);
        u8 rxb[32];
        fe_get_b32(rxb, R.x);
        Sc rr, ss, kinv;
        sc_set_bytes(rr, rxb, ByteOrder::big);
        kinv = sc32_inv(k);
        sc_mul(ss, rr, d);
        sc_mul(ss, ss, kinv);
        const auto rrb = sc_bytes(rr), ssb = sc_bytes(ss);
        CHECK(agree_ecdsa(ref, ecdsa_record(zero.data(), key, rrb.data(), ssb.data())));
        CHECK(agree_ecdsa(ref, ecdsa_record(n.data(), key, rrb.data(), ssb.data())));
    }
    // s small enough that s + n < 2^256: s + n encodes the same residue but overflows
    {
        Sc s = sc_zero();
        s.v[0] = 12345;
        const Ge R = mul_g(random_scalar(g));
        u8 rxb[32];
        fe_get_b32(rxb, R.x);
        Sc r;
        sc_set_bytes(r, rxb, ByteOrder::big);
        const Sc z = random_scalar(g);
        const Ge k2 = forge_key_for(R, r, s, z);
        const auto zb = sc_bytes(z), rb = sc_bytes(r), sb = sc_bytes(s);
        CHECK(agree_ecdsa(ref, ecdsa_record(zb.data(), k2, rb.data(), sb.data())));
        const auto spn = add_be(n, sb);
        CHECK(!agree_ecdsa(ref, ecdsa_record(zb.data(), k2, rb.data(), spn.data())));
    }
    check_batched();
}

TEST_CASE("kernel math: BIP-340 adversarial cases", "[kernels][adversarial]") {
    reference::RowVerifier ref;
    std::mt19937_64 g(3);
    const auto n = be32(kNHexV);
    const auto p = be32(kPHexV);
    std::array<u8, 32> one{};
    one[31] = 1;
    int valid = 0, odd_rejected = 0;
    for (int rep = 0; rep < 16; ++rep) {
        INFO("rep " << rep);
        Sc d = random_scalar(g);
        Ge P = mul_g(d);
        if (fe_is_odd(P.y)) {  // BIP-340 keys have even y
            sc_neg(d, d);
            ge_neg(P, P);
        }
        const Sc k = random_scalar(g);
        const Ge R = mul_g(k);
        wire::SchnorrRecord rec{};
        for (auto& b : rec.hash) b = static_cast<u8>(g());
        fe_get_b32(rec.xonly, P.x);
        fe_get_b32(rec.sig, R.x);
        u8 eb[32];
        bip340_challenge(eb, rec.sig, rec.xonly, rec.hash);
        Sc e;
        sc_set_bytes(e, eb, ByteOrder::big);
        Sc s;
        sc_mul(s, e, d);
        sc_add(s, s, k);  // s = k + e d: valid exactly when R.y is even
        sc_get_b32(rec.sig + 32, s);
        const bool v = agree_schnorr(ref, rec);
        CHECK(v == !fe_is_odd(R.y));
        valid += v;
        odd_rejected += !v;
        // R = s G - e P at infinity: s = e d
        {
            auto r2 = rec;
            Sc s2;
            sc_mul(s2, e, d);
            sc_get_b32(r2.sig + 32, s2);
            CHECK(!agree_schnorr(ref, r2));
        }
        // s = n, s >= n, R.x >= p, key x >= p, key not on curve
        for (const auto& bad : {n, add_be(n, one)}) {
            auto r2 = rec;
            std::memcpy(r2.sig + 32, bad.data(), 32);
            CHECK(!agree_schnorr(ref, r2));
        }
        for (const auto& bad : {p, add_be(p, one)}) {
            auto r2 = rec;
            std::memcpy(r2.sig, bad.data(), 32);
            CHECK(!agree_schnorr(ref, r2));
            r2 = rec;
            std::memcpy(r2.xonly, bad.data(), 32);
            CHECK(!agree_schnorr(ref, r2));
        }
        for (int t = 0; t < 8; ++t) {
            auto r2 = rec;
            r2.xonly[31] = static_cast<u8>(r2.xonly[31] + 1 + t);
            agree_schnorr(ref, r2);
        }
        // s = 0: valid only if R = -e P, never for a random R
        auto r3 = rec;
        std::memset(r3.sig + 32, 0, 32);
        agree_schnorr(ref, r3);
    }
    CHECK(valid > 0);
    CHECK(odd_rejected > 0);
    check_batched();
}

TEST_CASE("kernel math: the GPU self-test's known answers are right", "[kernels][vectors]") {
    reference::RowVerifier ref;
    std::size_t valid = 0, invalid = 0, rechecks = 0;
    for (const auto& ka : kSelfTestEcdsa) {
        const auto bytes = test::from_hex(ka.record_hex);
        REQUIRE(bytes.size() == sizeof(wire::EcdsaRecord));
        wire::EcdsaRecord rec{};
        std::memcpy(&rec, bytes.data(), sizeof rec);
        CHECK(agree_ecdsa(ref, rec) == (ka.valid == 1));
        // the kernel's own verdict (the GPU self-test counts the rechecks the
        // host twin gives and requires the device to give as many)
        const u8 v = verify_record32(bytes.data(), wire::RecordKind::ecdsa, wire::SigEncoding::compact);
        CHECK((v == kVerdictRecheck || int(v) == ka.valid));
        (ka.valid ? valid : invalid)++;
    }
    for (const auto& ka : kSelfTestSchnorr) {
        const auto bytes = test::from_hex(ka.record_hex);
        REQUIRE(bytes.size() == sizeof(wire::SchnorrRecord));
        wire::SchnorrRecord rec{};
        std::memcpy(&rec, bytes.data(), sizeof rec);
        CHECK(agree_schnorr(ref, rec) == (ka.valid == 1));
        const u8 v = verify_record32(bytes.data(), wire::RecordKind::schnorr, wire::SigEncoding::opaque);
        CHECK((v == kVerdictRecheck || int(v) == ka.valid));
        rechecks += v == kVerdictRecheck;
        (ka.valid ? valid : invalid)++;
    }
    CHECK(valid >= 10);
    CHECK(invalid >= 10);
    CHECK(rechecks == 2);  // BIP-340 vectors whose R is infinity: a flagged addition, as they must be
    check_batched();
}

TEST_CASE("kernel math: the libsecp256k1-free row generator makes rows libsecp256k1 accepts", "[kernels][differential]") {
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    reference::Verifier verifier(threads);
    for (Table t : kTables) {
        for (SigEncoding enc : {SigEncoding::opaque, SigEncoding::compact}) {
            if (wire::record_kind(t) == wire::RecordKind::schnorr && enc == SigEncoding::compact) continue;
            kernel_test::HostGenOptions o;
            o.table = t;
            o.count = 1'000;  // every row checked, and enough of them for the mutated fraction's bounds
            o.tail_size = wire::canonical_tail_size(t);
            o.encoding = enc;
            o.seed = 77 + unsigned(t);
            auto rows = kernel_test::host_generate_rows(o);
            auto clean_opts = o;
            clean_opts.invalid_rate = 0;
            auto clean = kernel_test::host_generate_rows(clean_opts);
            const auto span = kernel_test::span_of(rows, t, o.tail_size, enc);
            const auto cspan = kernel_test::span_of(clean, t, o.tail_size, enc);
            std::vector<std::uint8_t> want(o.count), got(o.count), clean_want(o.count);
            verifier.verify(span, want.data());
            const auto clean_tally = verifier.verify(cspan, clean_want.data());
            verify_rows(span, wire::Mode::results, got.data(), threads);
            const std::string diff = test::first_differences(got, want);
            INFO(wire::to_string(t) << " " << wire::to_string(enc) << ": " << diff);
            REQUIRE(diff.empty());
            CHECK(clean_tally.valid == o.count);  // unmutated rows are all valid (high-S included)
            std::size_t valid = 0;
            for (auto v : want) valid += v;
            CHECK(valid > o.count / 2);
            CHECK(valid < o.count * 85 / 100);
        }
    }
}
