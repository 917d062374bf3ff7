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
#include "kernels/scratch32.hpp"
#include "kernels/variants.hpp"

namespace sigverify::kernels {

struct Pt32 {  // Jacobian (X, Y, Z) = (X/Z^2, Y/Z^3)
    Fe32 x, y, z;
};
struct Aff32 {
    Fe32 x, y;
};

constexpr int kPWindows = 33;      // 4-bit windows of the P scalars (132 bits)
// The G stream: w-bit signed odd windows, w = kGWindowBits, a
// multiple of 4 so that every G window falls on a P window (the accumulator is
// doubled 4 times a P window): window k of a table is added in P window
// j = k * kGStep. Two tables of kGWindowsPerTable windows cover
// L = 2 m w >= 256 bits (v_g < n < 2^256); the top window of a table must sit
// at or below the top P window. w = 12: 22 additions a row against two tables
// of 2,048 entries (128 KiB each); w = 8: 32, in smaller tables.
constexpr int kGWindowBits = variant::kGWindowBits;
constexpr int kGStep = kGWindowBits / 4;
constexpr int kGWindowsPerTable = (256 + 2 * kGWindowBits - 1) / (2 * kGWindowBits);
constexpr int kGTableBits = kGWindowsPerTable * kGWindowBits;  // bits of v_g per table
constexpr int kGTableEntries = 1 << (kGWindowBits - 1);            // odd multiples of G (and of 2^kGTableBits G)
constexpr int kGHighShift = kGTableBits;                      // the second G table is of 2^kGTableBits G
constexpr int kGAdditionsPerRow = 2 * kGWindowsPerTable;
static_assert(kGWindowBits % 4 == 0 && kGWindowBits >= 4 && kGWindowBits <= 16, "G windows on P windows");
static_assert((kGWindowsPerTable - 1) * kGStep <= kPWindows - 1, "every G window on a P window of the ladder");
static_assert(2 * kGTableBits >= 256 && 2 * kGTableBits - 256 + 129 < 256, "v_g fits; 2^L mod n is NC << (L - 256)");
static_assert(kGTableBits <= 160, "a table's windows fit one 5-word stream");
// Passes per row of the ladder's two inner loops (scripts/kernel-metrics.sh
// reads them for its estimate): the doubling loop; the stream loop, whose
// passes are P additions (2 a window, the first of them the start value) or
// G additions (the passes that read the G tables).
constexpr int kLadderDoublings = 4 * (kPWindows - 1);
constexpr int kLadderPPasses = 2 * kPWindows;
constexpr int kLadderGPasses = kGAdditionsPerRow;
// The P passes by kind: the start value (the first window's P entry, no
// addition), the P additions, the lambda-P additions (with x * beta).
constexpr int kLadderStartPasses = 1;
constexpr int kLadderPAddPasses = kPWindows - 1;
constexpr int kLadderLambdaPasses = kPWindows;
static_assert(kLadderStartPasses + kLadderPAddPasses + kLadderLambdaPasses == kLadderPPasses);
// Passes per row of build_p_table32's loops: one a new entry, and in all the
// rescaling of the entries before each (1 + 2 + ... + 7).
// With the first kPTableGroup entries held back (build_p_table32): passes
// i < kPTableGroup move i entries, the later ones i - kPTableGroup, and the
// catch-up pass the first kPTableGroup.
constexpr int kPTableGroup = 4;
static_assert((kPEntries & (kPEntries - 1)) == 0, "build_p_table32 bounds an entry index by a mask");
constexpr int kPTableBuildPasses = kPEntries - 1;  // passes with an addition
constexpr int kPTableCatchUpPasses = 1;              // and the one without
constexpr int kPTableRescales = (kPTableGroup - 1) * kPTableGroup / 2 +
                                (kPEntries - 1 - kPTableGroup) * (kPEntries - kPTableGroup) / 2 + kPTableGroup;
static_assert(kPTableRescales == 16, "1 + 2 + 3, then 0 + 1 + 2 + 3, then 4");

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
// The formula on any field type F (fe_sqr, fe_mul, fe_sub): Fe32 inline in
// the ladder, Fe32Chain (products as real calls) in the table build.
template <class F>
SV_HD void add_affine_over(F& x3, F& y3, F& z3, F& h, const F& ax, const F& ay, const F& az, const F& zf, const F& bx,
                           const F& by) {
    F z1z1, u2, s2, rr;
    fe_sqr(z1z1, zf);
    fe_mul(u2, bx, z1z1);
    fe_mul(s2, zf, z1z1);
    fe_mul(s2, s2, by);
    fe_sub(h, u2, ax);
    fe_sub(rr, s2, ay);
    point_add_xy(x3, y3, h, rr, ax, ay);
    fe_mul(z3, az, h);
}
SV_HD void pt32_add_affine_over(Pt32& r, const Pt32& a, const Fe32& zf, const Aff32& b, u32& degenerate, Fe32& h) {
    Fe32 x3, y3, z3;
    add_affine_over(x3, y3, z3, h, a.x, a.y, a.z, zf, b.x, b.y);
    degenerate |= fe32_zero_mask(h);
    r = Pt32{x3, y3, z3};
}

SV_HD void pt32_add_affine(Pt32& r, const Pt32& a, const Aff32& b, u32& degenerate, Fe32& h) {
    pt32_add_affine_over(r, a, a.z, b, degenerate, h);
}

// pt32_add_affine with its products as real calls (once-per-row code: one
// copy of the products in the machine code instead of one an addition).
SV_HD void pt32_add_affine_call(Pt32& r, const Pt32& a, const Aff32& b, u32& degenerate, Fe32& h) {
    Fe32Chain x3, y3, z3, hc;
    add_affine_over(x3, y3, z3, hc, Fe32Chain{a.x}, Fe32Chain{a.y}, Fe32Chain{a.z}, Fe32Chain{a.z}, Fe32Chain{b.x},
                    Fe32Chain{b.y});
    h = hc.f;
    degenerate |= fe32_zero_mask(h);
    r = Pt32{x3.f, y3.f, z3.f};
}

// The G tables: entries [0, kGTableEntries) = (2i+1) G, then
// [kGTableEntries, 2 kGTableEntries) = (2i+1) 2^kGHighShift G, affine, 64 bytes
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

// r = 2a for an affine a (Z = 1), through the once-per-row calls: the
// formula of pt32_double with Z1 = 1 (so Z3 = Y, 2M + 4S), for the table
// build's start (one copy of the products instead of an inline doubling).
SV_HD void aff32_double_call(Pt32& r, const Aff32& a) {
    Fe32 l, t, x3, y3;
    const Fe32 s = fe32_sqr_call(a.y);
    l = fe32_sqr_call(a.x);
    fe32_add(t, l, l);
    fe32_add(l, t, l);
    fe32_half(l, l);
    t = fe32_mul_call(a.x, s);
    x3 = fe32_sqr_call(l);
    fe32_sub(x3, x3, t);
    fe32_sub(x3, x3, t);
    const Fe32 s2 = fe32_sqr_call(s);
    fe32_sub(y3, t, x3);
    y3 = fe32_mul_call(y3, l);
    fe32_sub(y3, y3, s2);
    r = Pt32{x3, y3, a.y};
}

// Builds the odd multiples (2i+1) P, i < 8, sharing one Z on the curve
// scaled by Z(2P) (where 2P is affine). Returns zg with: entry (X, Y) stands
// for the Jacobian (X, Y, zg) on secp256k1.
//
// Entry i comes out of the addition over Z_i = Z_{i-1} h_i. The entries of
// the first group, i < kPTableGroup, move to each new Z as it comes (their
// rescaling, entry j to Z_i: x h_i^2, y h_i^3); from entry kPTableGroup on
// they wait at Z_{kPTableGroup - 1} while the second group's entries move
// and hg gathers the product of the later h_i, and one more pass, without
// an addition, moves them by hg. 16 rescalings instead of the 28 of moving
// every entry at every step, no array of ratios (scratch is full), for one
// product a pass from entry kPTableGroup on (kPTableRescales,
// kPTableBuildPasses and kPTableCatchUpPasses count them).
SV_HD void build_p_table32(const PTable32& tab, const Aff32& p, Fe32& zg, u32& degenerate) {
    Pt32 d;
    aff32_double_call(d, p);
    Fe32 zd2, zd3;
    zd2 = fe32_sqr_call(d.z);
    zd3 = fe32_mul_call(zd2, d.z);
    Pt32 e;
    e.x = fe32_mul_call(p.x, zd2);
    e.y = fe32_mul_call(p.y, zd3);
    e.z = fe32_one();
    tab.store(0, e.x, e.y);
    // 2P and Z(2P) wait in zg's words (the caller writes zg's powers there
    // after): 24 registers fewer live across the loop, 2P read again each
    // pass.
    tab.store_zg(kZgParkX, d.x);
    tab.store_zg(kZgParkY, d.y);
    tab.store_zg(kZgZ, d.z);
    Fe32 hg = fe32_one();
    SV_NO_UNROLL
    for (int i = 1; i <= kPEntries; ++i) {
        const bool catch_up = i == kPEntries;  // no new entry: the first group moves by hg
        Fe32 h, h2, h3;
        if (!catch_up) {
            Aff32 d_aff;
            tab.reload_zg(kZgParkX, d_aff.x);
            tab.reload_zg(kZgParkY, d_aff.y);
            pt32_add_affine_call(e, e, d_aff, degenerate, h);
            if (i >= kPTableGroup) hg = fe32_mul_call(hg, h);
        } else {
            h = hg;
        }
        fe32_sqr(h2, h);
        fe32_mul(h3, h2, h);
        // the entries this pass moves: those of the group being built (the
        // first group's once the second is under way, on the catch-up pass)
        const int from = i < kPTableGroup || catch_up ? 0 : kPTableGroup;
        const int to = catch_up ? kPTableGroup : i;
        SV_NO_UNROLL
        for (int j = from; j < to; ++j) {
            // (j & 7 == j: the bound lets the compiler address every word
            // off one base register, as with a loop from 0)
            const int k = j & (kPEntries - 1);
            Fe32 x, y;
            tab.load(k, x, y);
            fe32_mul(x, x, h2);
            fe32_mul(y, y, h3);
            tab.store(k, x, y);
        }
        if (!catch_up) tab.store(i, e.x, e.y);
    }
    Fe32 zd;
    tab.reload_zg(kZgZ, zd);
    zg = fe32_mul_call(e.z, zd);
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

// K = (2^132 - 2^129 - 1)(1 + lambda) mod n, the offset of the GLV halves'
// recoding (a constant: the product's machine code, an asm block, would run
// every row; test_kernel_math32 checks it against the product).
SV_HD constexpr Sc sc_recode_offset() {
    return Sc{{0xB3749CA5D7B6171Bull, 0x7937FE0DB66BCAAFull, 0x3215874B94E93813ull, 0x76B1D93D0FAE3C6Bull}};
}

SV_HD void recode32(Recoded32& rc, const Sc& na, const Sc& ng, u32& degenerate) {
    const Sc k = sc_recode_offset();
    Sc s, s1, s2;
    sc_add(s, na, k);
    sc_half(s, s);
    sc32_split_lambda(s1, s2, s);
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
    // P waits in the table's first entry while the scalars are recoded: 16
    // registers fewer live across recode32, the peak of the kernel's register
    // use on sm_120 (the table build overwrites the entry).
    ptab.store(0, p.x, p.y);
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
        Aff32 p_again;
        ptab.reload(0, p_again.x, p_again.y);
        build_p_table32(ptab, p_again, zg, degenerate);
        ptab.store_zg(kZgZ, zg);
    }

    Pt32 acc{};  // set by the first P pass; zeroed so that its first copy reads defined values
    SV_NO_UNROLL
    for (int j = kPWindows - 1; j >= 0; --j) {
        if (j != kPWindows - 1) {
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
                const u32 top = u32(kGTableEntries);  // the sign bit of a window
                const u32 b = ptab.window_any(s, 4 * j, kGWindowBits);
                neg = 0u - (((b & top) != 0) ^ 1u);
                e = g_table_entry(gtab, t * kGTableEntries + int((b ^ neg) & (top - 1u)));
                if (variant::kGPrefetch && j >= kGStep) {  // the next G window's entry, a window ahead
                    const u32 bn = ptab.window_any(s, 4 * (j - kGStep), kGWindowBits);
                    const u32 nn = 0u - (((bn & top) != 0) ^ 1u);
                    g_table_prefetch(gtab, t * kGTableEntries + int((bn ^ nn) & (top - 1u)));
                }
                Fe32 zg;
                ptab.load_zg(kZgZ, zg);
                fe32_mul(zf, acc.z, zg);  // the G entry is affine on secp256k1 itself
            }
            fe32_cneg(e.y, e.y, neg);
            if (j == kPWindows - 1 && s == 0) {
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
    ptab.load_zg(kZgZ, zg);
    r.z = fe32_mul_call(acc.z, zg);
}

}  // namespace sigverify::kernels
