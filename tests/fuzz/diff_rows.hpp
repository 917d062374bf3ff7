// SPDX-License-Identifier: MIT
// Fuzz bytes -> one span of wire-format rows for fuzz_verify_diff, biased to
// the edges where verifiers go wrong. Signatures are made with the kernel
// math (tests/kernels/host_rows.hpp's helpers); whether a row is valid is
// decided by libsecp256k1 alone, so the signer needs to be right only often
// enough to give valid rows.
//
// Input: a header byte (table = b & 3, encoding = (b >> 2) & 1, tail size =
// (b >> 3) & 3), a count byte (1 + b % kMaxRows rows), then per row an
// operation byte op and the bytes it reads (zeros once the input ends):
//   op & 3 == 0       the whole record raw from the input
//   otherwise         signed: secret d, nonce k (edge_scalar: 0x00-0x7f picks
//                     an edge value near 0 or n, e.g. d = 1 gives P = G and
//                     d = n - 1 gives P = -G; else 32 raw bytes), a 32-byte
//                     hash; then edits, one per set bit:
//     0x04  r (ECDSA) or R.x (BIP-340) := edge value (near 0, n, p, 2^256, n/2)
//     0x08  s := edge value
//     0x10  s := n - s (high-S; a BIP-340 s above n/2 is as good as any other)
//     0x20  key x := edge value, ECDSA prefix := input byte (0x02/0x03 or junk)
//     0x40  a degenerate ladder sum. ECDSA: hash := +-r*d (u1*G = +-u2*P: the
//           final add is a doubling, a valid signature once re-signed, or
//           reaches infinity, s kept); BIP-340: s := +-e*d (s*G - e*P is
//           infinity, or the add of s*G and -e*P a doubling)
//     0x80  flip one bit of the record (position and bit from the input)
//   (edits apply in this order, the degenerate sum first)
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "tests/kernels/host_rows.hpp"

namespace sigverify::fuzz_diff {

constexpr std::size_t kMaxRows = 16;

class Reader {
public:
    Reader(const std::uint8_t* d, std::size_t n) : d_(d), n_(n) {}
    std::uint8_t byte() { return pos_ < n_ ? d_[pos_++] : 0; }
    void bytes(std::uint8_t* out, std::size_t k) {
        for (std::size_t i = 0; i < k; ++i) out[i] = byte();
    }
    bool done() const { return pos_ >= n_; }

private:
    const std::uint8_t* d_;
    std::size_t n_, pos_ = 0;
};

// 32-byte big-endian values the edits start from.
inline const std::uint8_t* edge_base(unsigned i) {
    static const std::uint8_t kBases[6][32] = {
        {0},  // 0 (minus a delta: just below 2^256)
        {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE,
         0xBA, 0xAE, 0xDC, 0xE6, 0xAF, 0x48, 0xA0, 0x3B, 0xBF, 0xD2, 0x5E, 0x8C, 0xD0, 0x36, 0x41, 0x41},  // n
        {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
         0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE, 0xFF, 0xFF, 0xFC, 0x2F},  // p
        {0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
         0x5D, 0x57, 0x6E, 0x73, 0x57, 0xA4, 0x50, 0x1D, 0xDF, 0xE9, 0x2F, 0x46, 0x68, 0x1B, 0x20, 0xA0},  // (n-1)/2
        {0x79, 0xBE, 0x66, 0x7E, 0xF9, 0xDC, 0xBB, 0xAC, 0x55, 0xA0, 0x62, 0x95, 0xCE, 0x87, 0x0B, 0x07,
         0x02, 0x9B, 0xFC, 0xDB, 0x2D, 0xCE, 0x28, 0xD9, 0x59, 0xF2, 0x81, 0x5B, 0x16, 0xF8, 0x17, 0x98},  // G.x
        // p - n (an ECDSA r below it has a second candidate x = r + n)
        {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
         0x45, 0x51, 0x23, 0x19, 0x50, 0xB7, 0x5F, 0xC4, 0x40, 0x2D, 0xA1, 0x72, 0x2F, 0xC9, 0xBA, 0xEE},
    };
    return kBases[i % 6];
}

// out := base + delta (mod 2^256), big-endian.
inline void add_small(std::uint8_t out[32], const std::uint8_t* base, int delta) {
    std::memcpy(out, base, 32);
    int carry = delta;
    for (int i = 31; i >= 0 && carry != 0; --i) {
        const int v = int(out[i]) + carry;
        out[i] = static_cast<std::uint8_t>(v & 0xFF);
        carry = v >> 8;  // arithmetic shift: -1 borrows
    }
}

// An edge value: one byte picks a base and a delta in [-4, 3]; base 6 and 7
// take 32 raw bytes instead.
inline void edge_value(Reader& in, std::uint8_t out[32]) {
    const std::uint8_t b = in.byte();
    const unsigned base = b & 7;
    if (base >= 6) {
        in.bytes(out, 32);
        return;
    }
    add_small(out, edge_base(base), int((b >> 3) & 7) - 4);
}

// A secret or nonce: edges near 0 and n (reduced mod n; 0 becomes 1), or raw.
inline kernels::Sc edge_scalar(Reader& in) {
    const std::uint8_t b = in.byte();
    std::uint8_t v[32];
    if (b < 0x80) add_small(v, edge_base((b & 1) ? 1 : 0), int((b >> 1) & 15) - 8 + ((b & 1) ? 0 : 8));
    else in.bytes(v, 32);
    kernels::Sc s;
    kernels::sc_set_bytes(s, v, kernels::ByteOrder::big);
    if (kernels::sc_is_zero(s)) s = kernels::sc_one();
    return s;
}

inline kernels::Sc sc_of(const std::uint8_t b[32]) {
    kernels::Sc s;
    kernels::sc_set_bytes(s, b, kernels::ByteOrder::big);
    return s;
}

// r and s of an ECDSA record, big-endian, in and out of the record's encoding.
inline void ecdsa_get_rs(const std::uint8_t* rec, wire::SigEncoding enc, std::uint8_t r[32], std::uint8_t s[32]) {
    const std::uint8_t* sig = rec + kernels::kEcdsaSig;
    for (int j = 0; j < 32; ++j) {
        const bool compact = enc == wire::SigEncoding::compact;
        r[j] = compact ? sig[j] : sig[31 - j];
        s[j] = compact ? sig[32 + j] : sig[63 - j];
    }
}
inline void ecdsa_put_rs(std::uint8_t* rec, wire::SigEncoding enc, const std::uint8_t r[32], const std::uint8_t s[32]) {
    std::uint8_t* sig = rec + kernels::kEcdsaSig;
    for (int j = 0; j < 32; ++j) {
        const bool compact = enc == wire::SigEncoding::compact;
        sig[compact ? j : 31 - j] = r[j];
        sig[compact ? 32 + j : 63 - j] = s[j];
    }
}

struct Secrets {
    kernels::Sc d, k;
};

// An ECDSA signature of the record's hash by d with nonce k (low-S).
inline void ecdsa_sign(std::uint8_t* rec, wire::SigEncoding enc, const Secrets& x) {
    using namespace kernels;
    const Ge P = kernel_test::detail::mul_g(x.d), R = kernel_test::detail::mul_g(x.k);
    rec[kRecKey] = fe_is_odd(P.y) ? 0x03 : 0x02;
    fe_get_b32(rec + kRecKey + 1, P.x);
    std::uint8_t rb[32], sb[32];
    fe_get_b32(rb, R.x);
    Sc r = sc_of(rb), z = sc_of(rec + kRecHash), s, t;
    sc_mul(t, r, x.d);
    sc_add(t, t, z);
    sc_mul(s, sc32_inv(x.k), t);
    if (sc_is_high(s)) sc_neg(s, s);
    sc_get_b32(rb, r);
    sc_get_b32(sb, s);
    ecdsa_put_rs(rec, enc, rb, sb);
}

// A BIP-340 signature (d and k negated to even y as the scheme does).
inline void schnorr_sign(std::uint8_t* rec, Secrets& x) {
    using namespace kernels;
    Ge P = kernel_test::detail::mul_g(x.d), R = kernel_test::detail::mul_g(x.k);
    if (fe_is_odd(P.y)) sc_neg(x.d, x.d);
    if (fe_is_odd(R.y)) sc_neg(x.k, x.k);
    fe_get_b32(rec + kRecKey, P.x);
    fe_get_b32(rec + kSchnorrSig, R.x);
    std::uint8_t eb[32];
    bip340_challenge(eb, rec + kSchnorrSig, rec + kRecKey, rec + kRecHash);
    Sc e = sc_of(eb), s;
    sc_mul(s, e, x.d);
    sc_add(s, s, x.k);
    sc_get_b32(rec + kSchnorrSig + 32, s);
}

// Edit 0x40: a degenerate sum in the verifier's u1*G + u2*P (ECDSA) or
// s*G - e*P (BIP-340); `minus` picks infinity over the doubling.
inline void degenerate_sum(std::uint8_t* rec, wire::RecordKind kind, wire::SigEncoding enc, Secrets& x,
                           bool minus) {
    using namespace kernels;
    if (kind == wire::RecordKind::ecdsa) {
        std::uint8_t rb[32], sb[32];
        ecdsa_get_rs(rec, enc, rb, sb);
        Sc z;
        sc_mul(z, sc_of(rb), x.d);
        if (minus) sc_neg(z, z);
        sc_get_b32(rec + kRecHash, z);
        // the doubling: re-signed (same d, k: r unchanged, s for the new hash),
        // a valid signature; infinity: s kept (re-signing would give s = 0)
        if (!minus) ecdsa_sign(rec, enc, x);
        return;
    }
    std::uint8_t eb[32];
    bip340_challenge(eb, rec + kSchnorrSig, rec + kRecKey, rec + kRecHash);
    Sc s;
    sc_mul(s, sc_of(eb), x.d);
    if (!minus) sc_neg(s, s);  // s = -e*d: s*G and -e*P are the same point
    sc_get_b32(rec + kSchnorrSig + 32, s);
}

inline void signed_row(Reader& in, std::uint8_t op, std::uint8_t* rec, wire::RecordKind kind,
                       wire::SigEncoding enc) {
    const bool ecdsa = kind == wire::RecordKind::ecdsa;
    Secrets x{edge_scalar(in), edge_scalar(in)};
    in.bytes(rec + kernels::kRecHash, 32);
    if (ecdsa) ecdsa_sign(rec, enc, x);
    else schnorr_sign(rec, x);
    if (op & 0x40) degenerate_sum(rec, kind, enc, x, in.byte() & 1);
    std::uint8_t r[32], s[32];
    if (ecdsa) ecdsa_get_rs(rec, enc, r, s);
    else {
        std::memcpy(r, rec + kernels::kSchnorrSig, 32);
        std::memcpy(s, rec + kernels::kSchnorrSig + 32, 32);
    }
    if (op & 0x04) edge_value(in, r);
    if (op & 0x08) edge_value(in, s);
    if (op & 0x10) {
        kernels::Sc v = sc_of(s);
        kernels::sc_neg(v, v);
        kernels::sc_get_b32(s, v);
    }
    if (ecdsa) ecdsa_put_rs(rec, enc, r, s);
    else {
        std::memcpy(rec + kernels::kSchnorrSig, r, 32);
        std::memcpy(rec + kernels::kSchnorrSig + 32, s, 32);
    }
    if (op & 0x20) {
        if (ecdsa) rec[kernels::kRecKey] = in.byte();
        edge_value(in, rec + kernels::kRecKey + (ecdsa ? 1 : 0));
    }
    if (op & 0x80) {
        const std::size_t size = wire::record_size(kind);
        const std::size_t pos = (std::size_t(in.byte()) | std::size_t(in.byte()) << 8) % size;
        rec[pos] ^= static_cast<std::uint8_t>(1u << (in.byte() & 7));
    }
}

struct Rows {
    std::vector<std::uint8_t> bytes;
    wire::RowSpan span;
};

inline Rows decode(const std::uint8_t* data, std::size_t size) {
    Reader in(data, size);
    Rows out;
    if (size < 2) return out;
    const std::uint8_t h = in.byte();
    const wire::Table table = static_cast<wire::Table>(h & 3);
    const wire::RecordKind kind = wire::record_kind(table);
    const wire::SigEncoding enc = (h >> 2) & 1 ? wire::SigEncoding::compact : wire::SigEncoding::opaque;
    const std::size_t tail = (h >> 3) & 3, count = 1 + in.byte() % kMaxRows;
    const std::size_t stride = wire::stride(kind, tail), rec = wire::record_size(kind);
    out.bytes.assign(count * stride, 0x5A);
    for (std::size_t i = 0; i < count; ++i) {
        std::uint8_t* row = out.bytes.data() + i * stride;
        const std::uint8_t op = in.byte();
        if ((op & 3) == 0) in.bytes(row, rec);
        else signed_row(in, op, row, kind, enc);
    }
    out.span = wire::RowSpan{kind, tail, enc, out.bytes.data(), count};
    return out;
}

}  // namespace sigverify::fuzz_diff
