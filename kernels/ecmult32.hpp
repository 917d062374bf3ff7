// SPDX-License-Identifier: MIT
// The GPU kernel: r = na * P + ng * G with one control flow for every row.
//
// Why: a warp runs the union of its lanes' paths. The first kernel (v1) skipped additions
// on zero wNAF digits, so a warp issued almost every addition of every lane.
// Here every window does the same doublings and additions for every lane:
//
//  * Signed odd fixed windows (the recoding of libsecp256k1's ecmult_const):
//    a value v < 2^(4m) stands for sum_j (2 b_j - 15) 2^(4j), b_j its 4-bit
//    windows, every digit odd and nonzero, so the table has the 8 odd
//    multiples 1P .. 15P and a lane never skips an addition.
//  * GLV: na = s1 + lambda s2; with s = (na + K) / 2 and v_i = s_i + 2^128
//    (< 2^129, 33 windows), the digits of v1 and v2 sum to na exactly when
//    K = (2^132 - 2^129 - 1)(1 + lambda) (mod n).
//  * G: v_g = (ng + 2^L - 1) / 2 (mod n), L = 2 m w, in w-bit windows (digits
//    2b - (2^w - 1)), one every w/4 P windows: the m windows of bits 0..mw-1
//    against odd multiples of G, those of bits mw..2mw-1 against odd multiples
//    of 2^(mw) G (w = 12, m = 11: 22 additions; tables in global memory).
//  * The P table is "effective affine" (all entries share one Z, so every
//    addition is a mixed one), built without a per-entry ratio array: each
//    new entry's Z ratio rescales the entries before it.
//  * No special cases in the loop: an addition whose x-coordinates agree
//    (doubling or cancellation; no honest row meets one) sets `degenerate`,
//    and the caller hands that row to the exact path (exact_verify.hpp, host).
//
// Invariant: the accumulator is never the point at infinity unless an
// addition was degenerate.
#pragma once

#include "kernels/fe32.hpp"
#include "kernels/point_add.hpp"
#include "kernels/scalar32.hpp"

namespace sigverify::kernels {

struct Pt32 {  // Jacobian (X, Y, Z) = (X/Z^2, Y/Z^3)
    Fe32 x, y, z;
};
struct Aff32 {
    Fe32 x, y;
};

constexpr int kV2Windows = 33;      // 4-bit windows of the P scalars (132 bits)
constexpr int kV2PEntries = 8;      // odd multiples 1..15 of P
// The G stream (issue 30): w-bit signed odd windows, w = kGWindowBits, a
// multiple of 4 so that every G window falls on a P window (the accumulator is
// doubled 4 times a P window): window k of a table is added in P window
// j = k * kGStep. Two tables of kGWindowsPerTable windows cover
// L = 2 m w >= 256 bits (v_g < n < 2^256); the top window of a table must sit
// at or below the top P window. w = 12: 22 additions a row against two tables
// of 2,048 entries (128 KiB each); w = 8: 32 (the kernel before issue 30 had
// 8-bit windows, 17 a table: 34).
#if defined(SV_G_WINDOW_BITS)
constexpr int kGWindowBits = SV_G_WINDOW_BITS;
#else
constexpr int kGWindowBits = 12;
#endif
constexpr int kGStep = kGWindowBits / 4;
#if !defined(SV_G_PREFETCH)
#define SV_G_PREFETCH 1
#endif
constexpr int kGWindowsPerTable = (256 + 2 * kGWindowBits - 1) / (2 * kGWindowBits);
constexpr int kGTableBits = kGWindowsPerTable * kGWindowBits;  // bits of v_g per table
constexpr int kV2GEntries = 1 << (kGWindowBits - 1);            // odd multiples of G (and of 2^kGTableBits G)
constexpr int kV2GHighShift = kGTableBits;                      // the second G table is of 2^kGTableBits G
constexpr int kGAdditionsPerRow = 2 * kGWindowsPerTable;
static_assert(kGWindowBits % 4 == 0 && kGWindowBits >= 4 && kGWindowBits <= 16, "G windows on P windows");
static_assert((kGWindowsPerTable - 1) * kGStep <= kV2Windows - 1, "every G window on a P window of the ladder");
static_assert(2 * kGTableBits >= 256 && 2 * kGTableBits - 256 + 129 < 256, "v_g fits; 2^L mod n is NC << (L - 256)");
static_assert(kGTableBits <= 160, "a table's windows fit one 5-word stream");
// Passes per row of the ladder's two inner loops (scripts/kernel-metrics.sh
// reads them for its estimate): the doubling loop; the stream loop, whose
// passes are P additions (2 a window, the first of them the start value) or
// G additions (the passes that read the G tables).
constexpr int kLadderDoublings = 4 * (kV2Windows - 1);
constexpr int kLadderPPasses = 2 * kV2Windows;
constexpr int kLadderGPasses = kGAdditionsPerRow;
// Passes per row of build_p_table32's loops: one a new entry, and in all the
// rescaling of the entries before each (1 + 2 + ... + 7).
constexpr int kPTableBuildPasses = kV2PEntries - 1;
constexpr int kPTableRescales = (kV2PEntries - 1) * kV2PEntries / 2;

// r = 2a (3M + 4S): with L = 3/2 X^2 and T = X Y^2,
// X3 = L^2 - 2T, Y3 = L (T - X3) - Y^4, Z3 = Y Z (libsecp256k1's scaling).
SV_HD void pt32_double(Pt32& r, const Pt32& a) {
    Fe32 z3, s, l, t, x3, y3;
    fe32_mul(z3, a.z, a.y);
    fe32_sqr(s, a.y);
    fe32_sqr(l, a.x);
    fe32_add(t, l, l);
    fe32_add(l, t, l);
    fe32_half(l, l);
    fe32_mul(t, a.x, s);
    fe32_sqr(x3, l);
    fe32_sub(x3, x3, t);
    fe32_sub(x3, x3, t);
    fe32_sqr(s, s);
    fe32_sub(y3, t, x3);
    fe32_mul(y3, y3, l);
    fe32_sub(y3, y3, s);
    r.x = x3;
    r.y = y3;
    r.z = z3;
}

// r = a + b, b affine, where a's formulas see a.x, a.y over zf and the result
// is over a.z h (8M + 3S). With zf = a.z it is the plain mixed addition,
// h = Z(r) / Z(a). The ladder's G additions pass zf = a.z zg: a point on the
// curve scaled by zg (where the P table is affine) is (X, Y, Z zg) on
// secp256k1, so the formulas meet the G entry as it is stored, affine, and
// the result is back on the scaled curve (its Z times h) -- the entry needs
// no rescaling by zg^2, zg^3. degenerate |= all ones when the x-coordinates
// agree (the two points equal or opposite), where the formula does not hold.
SV_HD void pt32_add_affine_over(Pt32& r, const Pt32& a, const Fe32& zf, const Aff32& b, u32& degenerate, Fe32& h) {
    Fe32 z1z1, u2, s2, rr, x3, y3;
    fe32_sqr(z1z1, zf);
    fe32_mul(u2, b.x, z1z1);
    fe32_mul(s2, zf, z1z1);
    fe32_mul(s2, s2, b.y);
    fe32_sub(h, u2, a.x);
    fe32_sub(rr, s2, a.y);
    degenerate |= fe32_zero_mask(h);
    point_add_xy(x3, y3, h, rr, a.x, a.y);
    fe32_mul(r.z, a.z, h);
    r.x = x3;
    r.y = y3;
}

SV_HD void pt32_add_affine(Pt32& r, const Pt32& a, const Aff32& b, u32& degenerate, Fe32& h) {
    pt32_add_affine_over(r, a, a.z, b, degenerate, h);
}

// A row's scratch: the P table, the recoded scalars and zg -- the
// per-row state that the ladder reads rather than keeps in registers (it
// would not fit the 168 registers that 12 warps per SM allow). Two regions,
// each word w at base[w * stride]:
//  * the P table, kPTableWords: entry e at e * 16 (x then y). On the device
//    it is shared memory, one column per thread (stride = block size), or,
//    with SV_P_TABLE_GLOBAL (a gpu-check variant, issue 30), global memory
//    through L1, one column per row of the launch (stride = rows in the
//    launch), so that it does not hold shared memory against occupancy: 512 B
//    a thread caps a 100 KB consumer SM at 4 warps.
//  * the extra words, kScratchExtraWords: the four recoded streams at
//    kScratchStreams (5 words each), zg at kScratchZg; shared
//    memory on the device, one column per thread.
// In shared memory a warp's 32 lanes read 32 consecutive words (32 banks)
// whichever entries they pick. On the host both regions are plain arrays
// (stride 1, HostScratch32).
constexpr int kPTableWords = kV2PEntries * 16;
constexpr int kScratchStreams = 0;
constexpr int kScratchZg = kScratchStreams + 4 * 5;
constexpr int kScratchExtraWords = kScratchZg + 8;
#if defined(SV_P_TABLE_GLOBAL)
constexpr bool kPTableInShared = false;
#else
constexpr bool kPTableInShared = true;
#endif
// Shared memory words per thread of the device kernel.
constexpr int kSharedWordsPerThread = kScratchExtraWords + (kPTableInShared ? kPTableWords : 0);

struct PTable32 {
    u32* table;
    u32 table_stride;
#if defined(SV_P_TABLE_GLOBAL)
    u32* extra;
    u32 extra_stride;
    SV_HD u32& xword(int w) const { return extra[u32(w) * extra_stride]; }
#else
    // One region: the extra words follow the table (as the host's array).
    SV_HD u32& xword(int w) const { return table[u32(kPTableWords + w) * table_stride]; }
#endif

    SV_HD u32& tword(int w) const { return table[u32(w) * table_stride]; }
    // Field elements in the extra words (zg).
    SV_HD void store_fe(int w, const Fe32& a) const {
        SV_UNROLL
        for (int i = 0; i < 8; ++i) xword(w + i) = a.v[i];
    }
    SV_HD void load_fe(int w, Fe32& a) const {
        SV_UNROLL
        for (int i = 0; i < 8; ++i) a.v[i] = xword(w + i);
    }
    // Entry e of the P table (x, then y: the order the first kernel used,
    // which ptxas allocates 178 registers for).
    SV_HD void store(int e, const Fe32& x, const Fe32& y) const {
        SV_UNROLL
        for (int i = 0; i < 8; ++i) tword(e * 16 + i) = x.v[i];
        SV_UNROLL
        for (int i = 0; i < 8; ++i) tword(e * 16 + 8 + i) = y.v[i];
    }
    SV_HD void load(int e, Fe32& x, Fe32& y) const {
        SV_UNROLL
        for (int i = 0; i < 8; ++i) x.v[i] = tword(e * 16 + i);
        SV_UNROLL
        for (int i = 0; i < 8; ++i) y.v[i] = tword(e * 16 + 8 + i);
    }
    // Stream s (0..3) of the recoded scalars: a value < 2^160 as 5 words.
    SV_HD void store_stream(int s, const u64 v[3]) const {
        const int w = kScratchStreams + 5 * s;
        xword(w) = u32(v[0]);
        xword(w + 1) = u32(v[0] >> 32);
        xword(w + 2) = u32(v[1]);
        xword(w + 3) = u32(v[1] >> 32);
        xword(w + 4) = u32(v[2]);
    }
    // Bits [bit, bit + width) of stream s (width divides 32 and bit is a
    // multiple of it: one word).
    SV_HD u32 window(int s, int bit, int width) const {
        return (xword(kScratchStreams + 5 * s + (bit >> 5)) >> (bit & 31)) & ((1u << width) - 1u);
    }
    // The same for any width < 32 with bit + width <= 160 (the G streams'
    // 12-bit windows straddle words): the words holding the first and the
    // last bit (one and the same word when the window does not straddle).
    SV_HD u32 window_any(int s, int bit, int width) const {
        const int base = kScratchStreams + 5 * s;
        const u64 lo = xword(base + (bit >> 5)), hi = xword(base + ((bit + width - 1) >> 5));
        return u32(((hi << 32) | lo) >> (bit & 31)) & ((1u << width) - 1u);
    }
};

// The host twin's scratch: both regions in one plain array.
struct HostScratch32 {
    u32 words[kPTableWords + kScratchExtraWords];
#if !defined(SV_P_TABLE_GLOBAL)
    PTable32 view() { return PTable32{words, 1}; }
#endif
};

// The G tables: entries [0, kV2GEntries) = (2i+1) G, then
// [kV2GEntries, 2 kV2GEntries) = (2i+1) 2^kV2GHighShift G, affine, 64 bytes
// each (x then y, 32-bit limbs little-endian: the bytes of GeStorage).
struct GTable32 {
    const GeStorage* entries;
};

SV_HD Aff32 g_table_entry(const GTable32& tab, int idx) {
    Aff32 e;
#if defined(__CUDA_ARCH__)
    const uint4* src = reinterpret_cast<const uint4*>(tab.entries + idx);
    const uint4 q0 = __ldg(src), q1 = __ldg(src + 1), q2 = __ldg(src + 2), q3 = __ldg(src + 3);
    e.x = Fe32{{q0.x, q0.y, q0.z, q0.w, q1.x, q1.y, q1.z, q1.w}};
    e.y = Fe32{{q2.x, q2.y, q2.z, q2.w, q3.x, q3.y, q3.z, q3.w}};
#else
    const GeStorage& s = tab.entries[idx];
    e.x = fe32_from_fe(Fe{{s.x[0], s.x[1], s.x[2], s.x[3]}});
    e.y = fe32_from_fe(Fe{{s.y[0], s.y[1], s.y[2], s.y[3]}});
#endif
    return e;
}

// Asks L1 for entry idx ahead of its use (device; nothing on the host): the
// G tables (256 KiB) live in L2, and the entry of the next G window is known
// a whole G window (kGStep P windows) before the ladder reads it. No register
// holds anything across the wait.
SV_HD void g_table_prefetch(const GTable32& tab, int idx) {
#if defined(__CUDA_ARCH__)
    asm volatile("prefetch.global.L1 [%0];" ::"l"(tab.entries + idx));
#else
    (void)tab;
    (void)idx;
#endif
}

// Builds the odd multiples (2i+1) P, i < 8, sharing one Z on the curve
// scaled by Z(2P) (where 2P is affine). Returns zg with: entry (X, Y) stands
// for the Jacobian (X, Y, zg) on secp256k1.
SV_HD void build_p_table32(const PTable32& tab, const Aff32& p, Fe32& zg, u32& degenerate) {
    Pt32 d;
    pt32_double(d, Pt32{p.x, p.y, fe32_one()});
    Fe32 zd2, zd3;
    fe32_sqr(zd2, d.z);
    fe32_mul(zd3, zd2, d.z);
    const Aff32 d_aff{d.x, d.y};
    Pt32 e;
    fe32_mul(e.x, p.x, zd2);
    fe32_mul(e.y, p.y, zd3);
    e.z = fe32_one();
    tab.store(0, e.x, e.y);
    SV_NO_UNROLL
    for (int i = 1; i < kV2PEntries; ++i) {
        Fe32 h, h2, h3;
        pt32_add_affine(e, e, d_aff, degenerate, h);
        fe32_sqr(h2, h);
        fe32_mul(h3, h2, h);
        SV_NO_UNROLL
        for (int j = 0; j < i; ++j) {  // entries before i move to the new Z
            Fe32 x, y;
            tab.load(j, x, y);
            fe32_mul(x, x, h2);
            fe32_mul(y, y, h3);
            tab.store(j, x, y);
        }
        tab.store(i, e.x, e.y);
    }
    fe32_mul(zg, e.z, d.z);
}

// The recoded scalars (window values) of v1, v2 (P and lambda P) and of the
// two halves of v_g.
struct Recoded32 {
    u64 v1[3], v2[3], glo[3], ghi[3];
};

// out = bits [lo, lo + width) of a (width <= 160, lo + width <= 256).
SV_HD void sc_bits(u64 out[3], const Sc& a, int lo, int width) {
    SV_UNROLL
    for (int i = 0; i < 3; ++i) {
        const int b = lo + 64 * i;  // first bit of out[i]
        const int w = b >> 6, sh = b & 63;
        const u64 low = w < 4 ? a.v[w] >> sh : 0;
        const u64 high = sh != 0 && w + 1 < 4 ? a.v[w + 1] << (64 - sh) : 0;
        const int keep = width - 64 * i;  // bits of out[i] that belong to the range
        out[i] = keep >= 64 ? low | high : keep <= 0 ? 0 : (low | high) & ((1ull << keep) - 1);
    }
}

// v = s + 2^128 (mod n) must be < 2^132 (it is < 2^129 for a GLV half).
SV_HD void offset_half(u64 out[3], const Sc& s, u32& degenerate) {
    Sc v;
    sc_add(v, s, Sc{{0, 0, 1, 0}});
    degenerate |= 0u - u32((v.v[2] >> 4) != 0 || v.v[3] != 0);
    out[0] = v.v[0];
    out[1] = v.v[1];
    out[2] = v.v[2];
}

SV_HD void recode32(Recoded32& rc, const Sc& na, const Sc& ng, u32& degenerate) {
    // K = (2^132 - 2^129 - 1)(1 + lambda) mod n
    Sc k, one_plus_lambda;
    sc_add(one_plus_lambda, sc_one(), sc_lambda());
    sc32_mul(k, Sc{{~0ull, ~0ull, 0xDull, 0}}, one_plus_lambda);
    Sc s, s1, s2;
    sc_add(s, na, k);
    sc_half(s, s);
    sc_split_lambda(s1, s2, s);
    offset_half(rc.v1, s1, degenerate);
    offset_half(rc.v2, s2, degenerate);
    // v_g = (ng + 2^L - 1) / 2 (mod n), L = 2 kGTableBits: the sum over the
    // w-bit windows b_k of v_g of (2 b_k - (2^w - 1)) 2^(w k) is
    // 2 v_g - (2^L - 1) = ng (mod n). 2^L - 1 = 2^(L - 256) (2^256 - n) - 1
    // (mod n), below n (static_assert above); NC's low word is odd, so that of
    // NC << s (s < 64) is not zero and the - 1 never borrows.
    constexpr int sh = 2 * kGTableBits - 256;
    constexpr Sc kg = sh == 0 ? Sc{{kNC0 - 1, kNC1, kNC2, 0}}
                              : Sc{{(kNC0 << (sh & 63)) - 1, (kNC1 << (sh & 63)) | (kNC0 >> ((64 - sh) & 63)),
                                    (kNC2 << (sh & 63)) | (kNC1 >> ((64 - sh) & 63)), 0}};
    Sc vg;
    sc_add(vg, ng, kg);
    sc_half(vg, vg);
    sc_bits(rc.glo, vg, 0, kGTableBits);
    sc_bits(rc.ghi, vg, kGTableBits, kGTableBits);
}

// Result of ecmult32: the Jacobian (x, y, z) of na P + ng G on secp256k1.
// Meaningful only when degenerate == 0.
SV_HD void ecmult32(Pt32& r, const Aff32& p, const Sc& na, const Sc& ng, const PTable32& ptab,
                    const GTable32& gtab, u32& degenerate) {
    {
        Recoded32 rc;
        recode32(rc, na, ng, degenerate);
        ptab.store_stream(0, rc.v1);
        ptab.store_stream(1, rc.v2);
        ptab.store_stream(2, rc.glo);
        ptab.store_stream(3, rc.ghi);
    }
    {
        Fe32 zg;
        build_p_table32(ptab, p, zg, degenerate);
        ptab.store_fe(kScratchZg, zg);
    }

    Pt32 acc{};  // set by the first P pass; zeroed so that its first copy reads defined values
    SV_NO_UNROLL
    for (int j = kV2Windows - 1; j >= 0; --j) {
        if (j != kV2Windows - 1) {
            SV_NO_UNROLL
            for (int k = 0; k < 4; ++k) pt32_double(acc, acc);
        }
        // streams 0, 1: P and lambda P (every window); 2, 3: G and
        // 2^kGTableBits G, window j / kGStep of each, in every kGStep-th window
        // up to the tables' last. All branches here depend on j and s only.
        const bool g_window = j % kGStep == 0 && j < kGStep * kGWindowsPerTable;
        const int streams = g_window ? 4 : 2;
        SV_NO_UNROLL
        for (int s = 0; s < streams; ++s) {
            Aff32 e;
            u32 neg;
            Fe32 zf;  // the Z the addition's formulas see (pt32_add_affine_over)
            if (s < 2) {
                const u32 b = ptab.window(s, 4 * j, 4);
                neg = 0u - ((b >> 3) ^ 1u);
                ptab.load(int((b ^ neg) & 7u), e.x, e.y);
                if (s == 1) fe32_mul(e.x, e.x, fe32_beta());
                zf = acc.z;
            } else {
                const int t = s - 2;
                const u32 top = u32(kV2GEntries);  // the sign bit of a window
                const u32 b = ptab.window_any(s, 4 * j, kGWindowBits);
                neg = 0u - (((b & top) != 0) ^ 1u);
                e = g_table_entry(gtab, t * kV2GEntries + int((b ^ neg) & (top - 1u)));
                if (SV_G_PREFETCH && j >= kGStep) {  // the next G window's entry, a window ahead
                    const u32 bn = ptab.window_any(s, 4 * (j - kGStep), kGWindowBits);
                    const u32 nn = 0u - (((bn & top) != 0) ^ 1u);
                    g_table_prefetch(gtab, t * kV2GEntries + int((bn ^ nn) & (top - 1u)));
                }
                Fe32 zg;
                ptab.load_fe(kScratchZg, zg);
                fe32_mul(zf, acc.z, zg);  // the G entry is affine on secp256k1 itself
            }
            fe32_cneg(e.y, e.y, neg);
            if (j == kV2Windows - 1 && s == 0) {
                acc = Pt32{e.x, e.y, fe32_one()};
            } else {
                Fe32 h;
                pt32_add_affine_over(acc, acc, zf, e, degenerate, h);
            }
        }
    }
    r.x = acc.x;
    r.y = acc.y;
    Fe32 zg;
    ptab.load_fe(kScratchZg, zg);
    fe32_mul(r.z, acc.z, zg);
}

}  // namespace sigverify::kernels
