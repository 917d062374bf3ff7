// SPDX-License-Identifier: MIT
// A row's scratch in the GPU kernel (ecmult32.hpp's ladder and P table
// build, verify32.hpp): what each region holds, where an architecture
// places it (shared or global memory), the per-warp layout, and the
// accessors over it (PTable32; HostScratch32 on the host).
#pragma once

#include "kernels/fe32.hpp"
#include "kernels/scalar32.hpp"
#include "kernels/variants.hpp"

namespace sigverify::kernels {

constexpr int kPEntries = 8;  // the P table: odd multiples 1..15 of P

// A row's scratch: the P table, the recoded scalars and zg -- the
// per-row state that the ladder reads rather than keeps in registers (it
// would not fit the 128-168 registers that 12-16 warps per SM allow). Three
// regions:
//  * the P table, kPTableWords: entry e at e * 16 (x then y);
//  * the streams, kStreamWords: the four recoded scalars, 5 words each;
//  * three field elements, kZgWords: 2P during the P table build (x, y, z at
//    kZgParkX, kZgParkY, kZgZ), then zg at kZgZ (the G additions run over
//    Z·zg, so zg^2 and zg^3, which these words held before, are not kept).
// On the device each region is in shared or in global memory as the
// architecture's ScratchPlacement says, laid out per warp:
// [warp][word][lane], so that word w of a lane is at base[w * 32], base = the
// region of the lane's warp + lane. The stride is a compile-time constant:
// every word is an immediate offset off one base register (the stride known
// only at run time before, blockDim.x or the launch's row count, cost an
// address computation per word and, for a global table, 18 registers). A
// warp's 32 lanes read 32 consecutive words whichever entries they pick: one
// bank each in shared memory, one 128-byte line in global memory. On the host
// the regions are plain arrays (stride 1, HostScratch32).
constexpr int kPTableWords = kPEntries * 16;
constexpr int kStreamWords = 4 * 5;
constexpr int kZgWords = 3 * 8;
constexpr int kZgParkX = 0, kZgParkY = 8, kZgZ = 16;  // word offsets in the zg region
// Before the P table build the zg region holds an ECDSA row's 1/s (from its
// block's batch inversion), so that it is not live in registers across the
// lift of the key (verify32.hpp).
constexpr int kZgSinv = kZgParkX;
constexpr int kScratchWords = kPTableWords + kStreamWords + kZgWords;
constexpr int kScratchLanes = 32;  // lanes of a warp: the device's column count
#if defined(__CUDA_ARCH__)
constexpr u32 kScratchStride = kScratchLanes;
#else
constexpr u32 kScratchStride = 1;
#endif

// Which regions a build puts in shared memory (the rest is global memory,
// through L1). The goal is 16 resident warps (512 threads) per SM, at most 128
// registers and 448 B of shared memory a thread (1 KiB reserved a block), and
// at least 12 (384 threads: 168 registers, ~590 B on sm_90 and ~256 B on the
// 100 KiB SMs of RTX 30/40/50). By default every architecture keeps the P
// table (512 B) in global memory and the streams and zg in shared memory,
// 176 B a thread: 16 warps by shared memory everywhere from sm_80 up, and the
// registers decide (gpu_verifier.cu: 128 on sm_80 to sm_90, 168 on the
// others).
// SV_SM90_P_TABLE_SHARED keeps the P table and the streams in shared memory
// on sm_90 instead, 592 B a thread (3 blocks of 128 and their reserve:
// 230,400 of 233,472 B), zg's 96 B global: 12 warps with the table out of L1's
// way. (Streams in global memory cost registers: the window index becomes a
// 64-bit address computation; with the streams global on sm_90, 168
// registers spill.) SV_SCRATCH_ALL_SHARED puts all of it there (688 B a
// thread: 8 warps on sm_90, 4 on the consumer SMs). Both are gpu-check
// variants (variants.hpp). The host learns the placement of the code it runs from
// the kernel's PTX version (gpu_verifier.cu), so both sides agree on it.
struct ScratchPlacement {
    bool p_table_shared, streams_shared, zg_shared;
};
// arch: __CUDA_ARCH__ (e.g. 900 for sm_90).
SV_HD constexpr ScratchPlacement scratch_placement(int arch) {
    switch (variant::kScratchLayout) {
    case variant::ScratchLayout::all_shared:
        return ScratchPlacement{true, true, true};
    case variant::ScratchLayout::sm90_p_table_shared:
        return arch == 900 ? ScratchPlacement{true, true, false} : ScratchPlacement{false, true, true};
    case variant::ScratchLayout::standard:
        break;
    }
    return ScratchPlacement{false, true, true};
}
// Words per thread in shared and in global memory of a placement.
SV_HD constexpr int shared_words_per_thread(ScratchPlacement p) {
    return (p.p_table_shared ? kPTableWords : 0) + (p.streams_shared ? kStreamWords : 0) +
           (p.zg_shared ? kZgWords : 0);
}
SV_HD constexpr int global_words_per_thread(ScratchPlacement p) { return kScratchWords - shared_words_per_thread(p); }
// 12 warps (3 blocks of 128 threads, 1 KiB reserved a block) fit the shared
// memory of sm_90 (228 KiB an SM) and of the consumer SMs (100 KiB); 16 warps
// (4 blocks) where the P table is global. (The all-shared variant runs fewer.)
constexpr bool kAllShared = variant::kScratchLayout == variant::ScratchLayout::all_shared;
constexpr bool kStandardLayout = variant::kScratchLayout == variant::ScratchLayout::standard;
static_assert(kAllShared || 3 * (128 * 4 * shared_words_per_thread(scratch_placement(900)) + 1024) <= 228 * 1024);
static_assert(kAllShared || 4 * (128 * 4 * shared_words_per_thread(scratch_placement(890)) + 1024) <= 100 * 1024);
static_assert(kAllShared || 4 * (128 * 4 * shared_words_per_thread(scratch_placement(1200)) + 1024) <= 100 * 1024);
static_assert(!kStandardLayout || 4 * (128 * 4 * shared_words_per_thread(scratch_placement(900)) + 1024) <= 228 * 1024);

// The regions of a thread's scratch, in the order each memory holds them.
enum class ScratchRegion { p_table, streams, zg };

// Where a thread's device scratch lies: each region in shared memory (words
// from the start of the block's dynamic shared memory) or in global memory
// (region_in_shared false: words from the start of the launch's scratch);
// each memory holds per warp [word][lane] of its regions, one after the
// other. thread_in_block and thread_in_launch are threadIdx.x and
// blockIdx.x * blockDim.x + threadIdx.x:
// blocks are whole warps, so the warp of a thread in the launch is
// thread_in_launch / 32. The shared memory of a block of B threads is B x
// shared_words_per_thread words; the global scratch of a launch of n rows is
// ceil(n / 32) x 32 x global_words_per_thread words (the last warp's columns
// past the last row included).
SV_HD constexpr bool region_in_shared(ScratchPlacement p, ScratchRegion r) {
    return r == ScratchRegion::p_table ? p.p_table_shared : r == ScratchRegion::streams ? p.streams_shared : p.zg_shared;
}
// Words per thread of the regions before r in r's memory.
SV_HD constexpr u32 region_start(ScratchPlacement p, ScratchRegion r) {
    const bool sh = region_in_shared(p, r);
    return (r != ScratchRegion::p_table && p.p_table_shared == sh ? u32(kPTableWords) : 0u) +
           (r == ScratchRegion::zg && p.streams_shared == sh ? u32(kStreamWords) : 0u);
}
// The first word of the scratch of a thread's warp in shared memory
// (thread_in_block) and in global memory (thread_in_launch); the thread's own
// columns are `lane` = thread % kScratchLanes words further on, and word w of
// its region r kScratchLanes * (region_start(p, r) + w) words after that.
SV_HD constexpr u32 shared_warp_start(ScratchPlacement p, u32 thread_in_block) {
    return thread_in_block / kScratchLanes * (kScratchLanes * u32(shared_words_per_thread(p)));
}
SV_HD constexpr u64 global_warp_start(ScratchPlacement p, u32 thread_in_launch) {
    return u64(thread_in_launch / kScratchLanes) * (kScratchLanes * u32(global_words_per_thread(p)));
}

struct PTable32 {
    u32* table;    // word w of the P table at table[w * kScratchStride]
    u32* streams;  // word w of the streams at streams[w * kScratchStride]
    u32* zg;       // word w of zg^2, zg^3, zg at zg[w * kScratchStride]

    SV_HD u32& tword(int w) const { return table[u32(w) * kScratchStride]; }
    SV_HD u32& sword(int w) const { return streams[u32(w) * kScratchStride]; }
    SV_HD u32& zword(int w) const { return zg[u32(w) * kScratchStride]; }
    // A field element of the zg region (kZgParkX, kZgParkY, kZgZ).
    SV_HD void store_zg(int w, const Fe32& a) const {
        SV_UNROLL
        for (int i = 0; i < 8; ++i) zword(w + i) = a.v[i];
    }
    // load_zg() through volatile reads (see reload()).
    SV_HD void reload_zg(int w, Fe32& a) const {
        const volatile u32* const z = zg;
        SV_UNROLL
        for (int i = 0; i < 8; ++i) a.v[i] = z[u32(w + i) * kScratchStride];
    }
    // An ECDSA row's 1/s at kZgSinv (store_sinv before the row's
    // verification, reload_sinv in its prepare, before the P table build).
    SV_HD void store_sinv(const Sc& a) const {
        u32 w[8];
        sc32_to_words(w, a);
        SV_UNROLL
        for (int i = 0; i < 8; ++i) zword(kZgSinv + i) = w[i];
    }
    SV_HD Sc reload_sinv() const {
        const volatile u32* const z = zg;
        u32 w[8];
        SV_UNROLL
        for (int i = 0; i < 8; ++i) w[i] = z[u32(kZgSinv + i) * kScratchStride];
        return sc32_from_words(w);
    }
    SV_HD void load_zg(int w, Fe32& a) const {
        SV_UNROLL
        for (int i = 0; i < 8; ++i) a.v[i] = zword(w + i);
    }
    // Entry e of the P table (x, then y).
    SV_HD void store(int e, const Fe32& x, const Fe32& y) const {
        SV_UNROLL
        for (int i = 0; i < 8; ++i) tword(e * 16 + i) = x.v[i];
        SV_UNROLL
        for (int i = 0; i < 8; ++i) tword(e * 16 + 8 + i) = y.v[i];
    }
    // load() through volatile reads, for a value stored to free registers:
    // the compiler may not forward the stored value instead.
    SV_HD void reload(int e, Fe32& x, Fe32& y) const {
        const volatile u32* const t = table;
        SV_UNROLL
        for (int i = 0; i < 8; ++i) x.v[i] = t[u32(e * 16 + i) * kScratchStride];
        SV_UNROLL
        for (int i = 0; i < 8; ++i) y.v[i] = t[u32(e * 16 + 8 + i) * kScratchStride];
    }
    SV_HD void load(int e, Fe32& x, Fe32& y) const {
        SV_UNROLL
        for (int i = 0; i < 8; ++i) x.v[i] = tword(e * 16 + i);
        SV_UNROLL
        for (int i = 0; i < 8; ++i) y.v[i] = tword(e * 16 + 8 + i);
    }
    // Stream s (0..3) of the recoded scalars: a value < 2^160 as 5 words.
    SV_HD void store_stream(int s, const u64 v[3]) const {
        const int w = 5 * s;
        sword(w) = u32(v[0]);
        sword(w + 1) = u32(v[0] >> 32);
        sword(w + 2) = u32(v[1]);
        sword(w + 3) = u32(v[1] >> 32);
        sword(w + 4) = u32(v[2]);
    }
    // Bits [bit, bit + width) of stream s (width divides 32 and bit is a
    // multiple of it: one word).
    SV_HD u32 window(int s, int bit, int width) const {
        return (sword(5 * s + (bit >> 5)) >> (bit & 31)) & ((1u << width) - 1u);
    }
    // The same for any width < 32 with bit + width <= 160 (the G streams'
    // 12-bit windows straddle words): the words holding the first and the
    // last bit (one and the same word when the window does not straddle).
    SV_HD u32 window_any(int s, int bit, int width) const {
        const int base = 5 * s;
        const u64 lo = sword(base + (bit >> 5)), hi = sword(base + ((bit + width - 1) >> 5));
        return u32(((hi << 32) | lo) >> (bit & 31)) & ((1u << width) - 1u);
    }
};

// The host twin's scratch: both regions in one plain array.
struct HostScratch32 {
    u32 words[kScratchWords];
    PTable32 view() { return PTable32{words, words + kPTableWords, words + kPTableWords + kStreamWords}; }
};

}  // namespace sigverify::kernels
