// SPDX-License-Identifier: MIT
// The rows the GPU ladder hands back (issue 28.2). Kernel v2 computes
// R = u1 G + u2 P with additions whose formula does not hold when the two
// points share their x (equal or opposite points); such a row must come back
// as kVerdictRecheck and then get libsecp256k1's verdict from the exact path.
// The rows here meet such an addition by construction:
//
//  * R = O (cancellation of the whole sum). ECDSA with z = -r d (mod n), so
//    u1 + u2 d = 0; BIP-340 with s = e d (mod n). A ladder of correct
//    additions and doublings cannot end at the point at infinity on a curve of
//    prime order (a doubling of a finite point is finite, an addition of
//    points with different x is finite), so some addition met equal x: this
//    holds for any incomplete-addition ladder, whatever its windows. Both rows
//    are invalid.
//  * A doubling and a cancellation in the middle of the ladder, in VALID rows.
//    These follow the GPU kernel's recoding as kernels/ecmult32.hpp documents
//    it and with its constants (the only part of this file that does): the P
//    scalar u2 is recoded from c = (u2 + K) / 2 = c1 + lambda c2 with
//    v_i = c_i + 2^128 in signed odd 4-bit windows (digit 2b - 15), the G
//    scalar from vg = (u1 + 2^L - 1) / 2, L = 2 kGTableBits, in w-bit windows
//    (w = kGWindowBits, digit 2b - (2^w - 1)), the top one of the first G
//    table added in P window j_g = kGStep (kGWindowsPerTable - 1), after the
//    P additions of windows 32 .. j_g. With c small (c1 = c, c2 = 0) the top P
//    digits are -13 and those below -15, so the accumulator is then
//    -A (1 + lambda) P with A = 13 16^k + 15 (16^(k-1) + ... + 1) = 14 16^k - 1,
//    k = 32 - j_g; with vg small the G digit is -(2^w - 1): that addition is
//    degenerate when P = +-(2^w - 1) / (A (1 + lambda)) G. (12-bit windows:
//    j_g = 30, A = 3583, digit -4095; the 8-bit windows before issue 30 had
//    j_g = 32, A = 13, digit -255.)
//    The signature is then made valid for the scalars chosen: R = u1 G + u2 P,
//    r = R.x mod n, s = r / u2, z = u1 s.
// Each row is checked through the kernel's row entry point
// (kernels::verify_record32: kVerdictRecheck; kernels::verify_record: the
// resolved verdict), the host-kernel backend, and a daemon running the GPU
// path on the CPU (--backend host-kernel, every verdict cross-checked), all
// against libsecp256k1 (reference::RowVerifier).
#include <secp256k1.h>

#include <array>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon/backends/host_kernel_backend.hpp"
#include "daemon_fixture.hpp"
#include "kernels/kernel_math.hpp"
#include "kernels/verify32.hpp"
#include "ops/ops_helpers.hpp"
#include "support/first_differences.hpp"

using namespace sigverify;
using namespace sigverify::test;

namespace {

using Scalar = std::array<std::uint8_t, 32>;  // big-endian, < n

// Arithmetic modulo n through libsecp256k1's public key-tweak calls (they
// want non-zero operands: add takes a zero one, and a zero result throws).
class ModN {
public:
    ModN() : ctx_(secp256k1_context_create(SECP256K1_CONTEXT_NONE)) {}
    ~ModN() { secp256k1_context_destroy(ctx_); }
    ModN(const ModN&) = delete;
    ModN& operator=(const ModN&) = delete;

    static Scalar small(std::uint64_t v) {
        Scalar s{};
        for (int i = 0; i < 8; ++i) s[31 - i] = std::uint8_t(v >> (8 * i));
        return s;
    }
    static Scalar hex(const char* h) {
        Scalar s{};
        for (int i = 0; i < 32; ++i) s[i] = std::uint8_t(std::stoul(std::string(h + 2 * i, 2), nullptr, 16));
        return s;
    }
    static bool zero(const Scalar& a) { return a == Scalar{}; }
    Scalar add(Scalar a, const Scalar& b) const {
        if (zero(a)) return b;
        if (!secp256k1_ec_seckey_tweak_add(ctx_, a.data(), b.data())) throw std::logic_error("add: zero");
        return a;
    }
    Scalar mul(Scalar a, const Scalar& b) const {
        if (!secp256k1_ec_seckey_tweak_mul(ctx_, a.data(), b.data())) throw std::logic_error("mul: zero");
        return a;
    }
    Scalar neg(Scalar a) const {
        if (!secp256k1_ec_seckey_negate(ctx_, a.data())) throw std::logic_error("neg: zero");
        return a;
    }
    Scalar sub(const Scalar& a, const Scalar& b) const { return add(a, neg(b)); }
    Scalar inv(const Scalar& a) const {  // a^(n - 2)
        const Scalar e = hex("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD036413F");
        Scalar r = small(1);
        for (int bit = 255; bit >= 0; --bit) {
            r = mul(r, r);
            if ((e[31 - bit / 8] >> (bit % 8)) & 1) r = mul(r, a);
        }
        return r;
    }
    Scalar pow2(unsigned k) const {
        Scalar r = small(1);
        for (unsigned i = 0; i < k; ++i) r = add(r, r);
        return r;
    }
    // k G: compressed (33 bytes).
    std::array<std::uint8_t, 33> point(const Scalar& k) const {
        secp256k1_pubkey pub;
        if (!secp256k1_ec_pubkey_create(ctx_, &pub, k.data())) throw std::logic_error("point: bad scalar");
        std::array<std::uint8_t, 33> out{};
        std::size_t len = out.size();
        secp256k1_ec_pubkey_serialize(ctx_, out.data(), &len, &pub, SECP256K1_EC_COMPRESSED);
        return out;
    }
    Scalar tagged_hash(const char* tag, const std::uint8_t* msg, std::size_t size) const {
        Scalar h{};
        if (!secp256k1_tagged_sha256(ctx_, h.data(), reinterpret_cast<const unsigned char*>(tag), std::strlen(tag),
                                     msg, size))
            throw std::logic_error("tagged hash");
        return h;
    }
    // 32 big-endian bytes (< 2n) mod n; zero is refused (not a scalar here).
    Scalar reduce(const std::uint8_t* x) const {
        Scalar s;
        std::memcpy(s.data(), x, 32);
        if (secp256k1_ec_seckey_verify(ctx_, s.data())) return s;
        const Scalar n = hex("FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141");
        int borrow = 0;
        for (int i = 31; i >= 0; --i) {
            const int v = int(s[i]) - int(n[i]) - borrow;
            s[i] = std::uint8_t(v & 0xFF);
            borrow = v < 0;
        }
        if (!secp256k1_ec_seckey_verify(ctx_, s.data())) throw std::logic_error("reduce: zero");
        return s;
    }

private:
    secp256k1_context* ctx_;
};

constexpr const char* kLambda = "5363AD4CC05C30E0A5261C028812645A122E22EA20816678DF02967C1B23BD72";

struct DegenerateRow {
    std::vector<std::uint8_t> record;  // EcdsaRecord (compact encoding) or SchnorrRecord
    wire::RecordKind kind;
    std::string what;
};

wire::EcdsaRecord ecdsa_record(const Scalar& z, const std::array<std::uint8_t, 33>& key, const Scalar& r,
                               const Scalar& s) {
    wire::EcdsaRecord rec{};
    std::memcpy(rec.hash, z.data(), 32);
    std::memcpy(rec.point, key.data(), 33);
    std::memcpy(rec.sig, r.data(), 32);  // compact: r || s, big-endian
    std::memcpy(rec.sig + 32, s.data(), 32);
    return rec;
}

DegenerateRow as_row(const wire::EcdsaRecord& rec, std::string what) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&rec);
    return {std::vector<std::uint8_t>(p, p + sizeof rec), wire::RecordKind::ecdsa, std::move(what)};
}

// ECDSA with u1 + u2 d = 0: R = O.
DegenerateRow ecdsa_infinity(const ModN& m, std::uint64_t seed) {
    const Scalar d = m.tagged_hash("sigverify/test/d", reinterpret_cast<const std::uint8_t*>(&seed), sizeof seed);
    const Scalar r = m.tagged_hash("sigverify/test/r", reinterpret_cast<const std::uint8_t*>(&seed), sizeof seed);
    const Scalar s = m.tagged_hash("sigverify/test/s", reinterpret_cast<const std::uint8_t*>(&seed), sizeof seed);
    const Scalar z = m.neg(m.mul(r, d));
    return as_row(ecdsa_record(z, m.point(d), r, s), "ECDSA, u1 G + u2 P = O");
}

// BIP-340 with s = e d: R = s G - e P = O.
DegenerateRow schnorr_infinity(const ModN& m, std::uint64_t seed) {
    Scalar d = m.tagged_hash("sigverify/test/d", reinterpret_cast<const std::uint8_t*>(&seed), sizeof seed);
    const auto key = m.point(d);
    if (key[0] == 0x03) d = m.neg(d);  // the x-only key stands for the even-y point
    wire::SchnorrRecord rec{};
    const Scalar msg = m.tagged_hash("sigverify/test/m", reinterpret_cast<const std::uint8_t*>(&seed), sizeof seed);
    std::memcpy(rec.hash, msg.data(), 32);
    std::memcpy(rec.xonly, key.data() + 1, 32);
    const auto rx = m.point(m.tagged_hash("sigverify/test/k", reinterpret_cast<const std::uint8_t*>(&seed), sizeof seed));
    std::memcpy(rec.sig, rx.data() + 1, 32);
    std::uint8_t challenge[96];
    std::memcpy(challenge, rec.sig, 32);
    std::memcpy(challenge + 32, rec.xonly, 32);
    std::memcpy(challenge + 64, rec.hash, 32);
    const Scalar e = m.reduce(m.tagged_hash("BIP0340/challenge", challenge, sizeof challenge).data());
    const Scalar s = m.mul(e, d);
    std::memcpy(rec.sig + 32, s.data(), 32);
    const auto* p = reinterpret_cast<const std::uint8_t*>(&rec);
    return {std::vector<std::uint8_t>(p, p + sizeof rec), wire::RecordKind::schnorr, "BIP-340, s G - e P = O"};
}

// An ECDSA row whose ladder's first G addition is a doubling (sign +1) or a
// cancellation (sign -1); c and vg pick the scalars (small, see the top).
// valid: r = R.x mod n; else r = R.x + 1 (mod n), the same scalars u1, u2
// (s and z follow r), so the same ladder, and an invalid signature.
DegenerateRow ecdsa_ladder_meets(const ModN& m, int sign, std::uint64_t c, std::uint64_t vg, bool valid) {
    const Scalar one_plus_lambda = m.add(ModN::small(1), ModN::hex(kLambda));
    const Scalar k_offset = m.mul(ModN::hex("0000000000000000000000000000000DFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF"),
                                  one_plus_lambda);                            // K
    const Scalar u2 = m.sub(m.add(ModN::small(c), ModN::small(c)), k_offset);  // 2c - K
    const Scalar g_offset = m.sub(m.pow2(2 * kernels::kGTableBits), ModN::small(1));  // 2^L - 1
    const Scalar u1 = m.sub(m.add(ModN::small(vg), ModN::small(vg)), g_offset);        // 2 vg - (2^L - 1)
    const int k = (kernels::kPWindows - 1) - kernels::kGStep * (kernels::kGWindowsPerTable - 1);
    const std::uint64_t a = 14 * (std::uint64_t(1) << (4 * k)) - 1;  // A = 14 16^k - 1
    const std::uint64_t g_digit = (std::uint64_t(1) << kernels::kGWindowBits) - 1;
    Scalar d = m.mul(ModN::small(g_digit), m.inv(m.mul(ModN::small(a), one_plus_lambda)));
    if (sign < 0) d = m.neg(d);
    // R = (u1 + u2 d) G; r = R.x mod n; s = r / u2; z = u1 s.
    const auto big_r = m.point(m.add(u1, m.mul(u2, d)));
    const Scalar r = valid ? m.reduce(big_r.data() + 1) : m.add(m.reduce(big_r.data() + 1), ModN::small(1));
    const Scalar s = m.mul(r, m.inv(u2));
    const Scalar z = m.mul(u1, s);
    return as_row(ecdsa_record(z, m.point(d), r, s),
                  std::string("ECDSA, ") + (valid ? "valid" : "invalid") + ", the ladder's first G addition is a " +
                      (sign > 0 ? "doubling" : "cancellation") +
                      " (c " + std::to_string(c) + ", vg " + std::to_string(vg) + ")");
}

std::vector<DegenerateRow> degenerate_rows() {
    const ModN m;
    std::vector<DegenerateRow> rows;
    for (std::uint64_t seed : {1, 2, 3}) rows.push_back(ecdsa_infinity(m, seed));
    for (std::uint64_t seed : {1, 2, 3}) rows.push_back(schnorr_infinity(m, seed));
    for (int sign : {1, -1})
        for (std::uint64_t c : {1, 5})
            for (std::uint64_t vg : {0, 7})
                for (bool valid : {true, false}) rows.push_back(ecdsa_ladder_meets(m, sign, c, vg, valid));
    return rows;
}

bool reference_verdict(const DegenerateRow& d) {
    reference::RowVerifier v;
    const wire::RowSpan one{d.kind, 0, wire::SigEncoding::compact, const_cast<std::uint8_t*>(d.record.data()), 1};
    return v.verify_row(one, 0);
}

}  // namespace

TEST_CASE("rows that meet a degenerate ladder addition come back as recheck, and the exact path gives "
          "libsecp256k1's verdict",
          "[kernel][ladder][recheck]") {
    std::size_t valid = 0;
    for (const DegenerateRow& d : degenerate_rows()) {
        INFO(d.what);
        const bool want = reference_verdict(d);
        valid += want;
        CHECK(int(kernels::verify_record32(d.record.data(), d.kind, wire::SigEncoding::compact)) ==
              int(kernels::kVerdictRecheck));
        CHECK(kernels::verify_record(d.record.data(), d.kind, wire::SigEncoding::compact) == want);
        CHECK(kernels::verify_record_exact(d.record.data(), d.kind, wire::SigEncoding::compact) == want);
    }
    // The cancellations of the whole sum are invalid, half the ladder-crafted rows valid.
    CHECK(valid == 8);
}

TEST_CASE("the host-kernel backend gives degenerate rows libsecp256k1's verdicts among ordinary ones",
          "[kernel][ladder][recheck][backend]") {
    for (wire::RecordKind kind : {wire::RecordKind::ecdsa, wire::RecordKind::schnorr}) {
        const wire::Table table = kind == wire::RecordKind::ecdsa ? wire::Table::ecdsa : wire::Table::schnorr;
        INFO(wire::to_string(table));
        // Known rows (tail-less) with the degenerate rows of this kind spliced in.
        const KnownRows k = make_known_rows(table, 40, wire::SigEncoding::compact, 2800);
        std::vector<std::uint8_t> records;
        std::vector<std::uint8_t> want;
        std::size_t next = 0;
        for (std::size_t i = 0; i < 40; ++i) {
            records.insert(records.end(), k.rows.begin() + i * k.stride, k.rows.begin() + i * k.stride + k.record);
            want.push_back(k.expected[i]);
            if (i % 5 == 2) {
                const auto all = degenerate_rows();
                for (std::size_t j = 0; j < all.size(); ++j) {
                    if (all[(next + j) % all.size()].kind != kind) continue;
                    const DegenerateRow& d = all[(next + j) % all.size()];
                    records.insert(records.end(), d.record.begin(), d.record.end());
                    want.push_back(reference_verdict(d) ? 1 : 0);
                    next = (next + j + 1) % all.size();
                    break;
                }
            }
        }
        const wire::RowSpan span{kind, 0, wire::SigEncoding::compact, records.data(), want.size()};
        daemon::HostKernelBackend backend(0, 1);
        std::vector<std::uint8_t> got(want.size(), 0xAA);
        REQUIRE(backend.verify(0, span, got.data()).status == shm::Status::ok);
        CHECK(first_differences(got, want) == "");
    }
}

TEST_CASE("degenerate rows through a daemon on the GPU path (host kernel): libsecp256k1's verdicts, no GPU "
          "switched off",
          "[daemon][ladder][recheck]") {
    // Every verdict cross-checked (samples 1): a recheck resolved wrongly
    // would switch the "GPU" off and show as a mismatch.
    DaemonProcess d({"--backend", "host-kernel", "--gpus", "0", "--cpu-threads", "1", "--cross-check-sample", "1",
                     "--cross-check-invalid-sample", "1", "--gpu-min-rows", "1", "--gpu-split", "off",
                     "--arena-size", "1M"});
    ClientOptions o;
    o.runtime_dir = d.dir();
    o.name = "ladder";
    auto c = Client::connect(o);
    const auto all = degenerate_rows();
    for (wire::RecordKind kind : {wire::RecordKind::ecdsa, wire::RecordKind::schnorr}) {
        const wire::Table table = kind == wire::RecordKind::ecdsa ? wire::Table::ecdsa : wire::Table::schnorr;
        INFO(wire::to_string(table));
        const std::size_t tail = wire::canonical_tail_size(table);
        std::vector<std::uint8_t> rows, want;
        for (const DegenerateRow& r : all) {
            if (r.kind != kind) continue;
            rows.insert(rows.end(), r.record.begin(), r.record.end());
            for (std::size_t b = 0; b < tail; ++b) rows.push_back(std::uint8_t(0x30 + b));
            want.push_back(reference_verdict(r) ? 1 : 0);
        }
        std::vector<std::uint8_t> got(want.size(), 0xAA);
        const BatchResult r = send(*c, table, wire::Mode::results, wire::SigEncoding::compact, rows, want.size(), got.data());
        REQUIRE(r.ok());
        CHECK(r.local_rows == 0);
        CHECK(first_differences(got, want) == "");
    }
    const std::string backends = stats_command(d.dir(), "backends");
    INFO(backends);
    CHECK(backends.find("backend=gpu0 ") != std::string::npos);
    CHECK(backends.find("switched off") == std::string::npos);
    CHECK(backends.find("crosscheck_mismatches=0 ") != std::string::npos);
}
