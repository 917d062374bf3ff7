// SPDX-License-Identifier: MIT
// One inversion for a whole block of rows: Montgomery's trick on a product
// tree, portable __host__ __device__ C++ (the same statements run in a CUDA
// block and, thread after thread, in the host twin). ECDSA's s mod n before
// the ladder, BIP-340's Z mod p after it.
//
// Why: an inversion by divsteps is ~24k thread-instructions, once per row
// (ECDSA's s^-1: ~750 warp-instructions of the ~12.5k a row; BIP-340's 1/Z
// for y's parity as much). The tree costs one inversion per block (thread
// 0's, 24k warp-instructions over 128 rows) and three products per node:
// ~270 warp-instructions a row with the scalar product, less with the field
// one.
//
// The tree. A block of B threads puts one value each at the leaves
// [L, L + B) of a binary heap of 2L nodes (L the power of two >= B, node 1
// the root, node k's children 2k and 2k + 1); leaves [L + B, 2L) hold 1.
//  * up: for half = L/2 .. 1, thread t < half sets node half + t to the
//    product of its children;
//  * thread 0 replaces the root by its inverse (sc32_inv, fe32_inv);
//  * down: for half = 1 .. L/2, thread t < half reads node k = half + t (now
//    the inverse of its product) and sets its children to
//    inv(k) * (the other child): inv(2k) = inv(k) * node(2k + 1) and
//    inv(2k + 1) = inv(k) * node(2k).
// Each phase reads only nodes the phase before wrote, so one barrier between
// phases orders it (Block::each). After the last one leaf L + t holds the
// inverse of thread t's value.
//
// Invariant the caller keeps: every value is nonzero mod the prime (so the
// product is nonzero and every inverse exact). An ECDSA row whose s is not in
// [1, n) is invalid and puts 1 instead (ecdsa_batch_value32); a BIP-340 row
// puts its Z only when it needs y's parity and Z is not 0 (parity_value32).
// Were a zero to enter anyway, inv(0) = 0 makes every inverse of the block 0,
// and each row checks its own: value * inverse must be 1, or the row is
// kVerdictRecheck (decided by the exact path) — never a wrong verdict.
#pragma once

#include "kernels/fe32.hpp"
#include "kernels/scalar32.hpp"

namespace sigverify::kernels {

// The values a tree multiplies: scalars mod n (ECDSA's s) or field elements
// mod p (BIP-340's Z); products and the inversion as the kernel's real calls.
struct ScTreeOps {
    using Value = Sc;
    SV_HD static Value one() { return sc_one(); }
    SV_HD static Value mul(const Value& a, const Value& b) { return sc32_mul_call(a, b); }
    SV_HD static Value inv(const Value& a) { return sc32_inv(a); }
    SV_HD static void store(u32 w[8], const Value& a) { sc32_to_words(w, a); }
    SV_HD static Value load(const u32 w[8]) { return sc32_from_words(w); }
};
struct FeTreeOps {
    using Value = Fe32;
    SV_HD static Value one() { return fe32_one(); }
    SV_HD static Value mul(const Value& a, const Value& b) { return fe32_mul_call(a, b); }
    SV_HD static Value inv(const Value& a) { return fe32_inv(a); }
    SV_HD static void store(u32 w[8], const Value& a) {
        SV_UNROLL
        for (int i = 0; i < 8; ++i) w[i] = a.v[i];
    }
    SV_HD static Value load(const u32 w[8]) { return Fe32{{w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]}}; }
};

// Word w of node k at words[w * stride + k] (stride = 2L): a level's threads
// touch consecutive nodes, one bank each in shared memory.
template <class TreeOps>
struct ProductTree {
    using Ops = TreeOps;
    using Value = typename Ops::Value;
    u32* words;
    u32 leaves;  // L
    SV_HD u32 stride() const { return 2 * leaves; }
    SV_HD void put(u32 node, const Value& a) const {
        u32 w[8];
        Ops::store(w, a);
        SV_UNROLL
        for (int i = 0; i < 8; ++i) words[u32(i) * stride() + node] = w[i];
    }
    SV_HD Value get(u32 node) const {
        u32 w[8];
        SV_UNROLL
        for (int i = 0; i < 8; ++i) w[i] = words[u32(i) * stride() + node];
        return Ops::load(w);
    }
    // One node of the up phase: its children's product.
    SV_HD void up(u32 node) const { put(node, Ops::mul(get(2 * node), get(2 * node + 1))); }
    // One node of the down phase: node holds the inverse of its product; its
    // children get theirs.
    SV_HD void down(u32 node) const {
        const Value inv = get(node), left = get(2 * node);
        put(2 * node, Ops::mul(inv, get(2 * node + 1)));
        put(2 * node + 1, Ops::mul(inv, left));
    }
};
using ScTree = ProductTree<ScTreeOps>;
using FeTree = ProductTree<FeTreeOps>;

// L for a block of `threads` threads, and the words the tree needs: 16 L
// (< 32 words a thread, whatever the block size).
SV_HD constexpr u32 sc_tree_leaves(u32 threads) {
    u32 l = 1;
    while (l < threads) l *= 2;
    return l;
}
SV_HD constexpr u32 sc_tree_words(u32 threads) { return 16 * sc_tree_leaves(threads); }

// The inverses of a block's values. Block provides threads() (B) and
// each(fn): fn(t) for every thread t of the block, then a barrier (on the
// device each thread runs fn for its own t and waits at __syncthreads; the
// host runs t = 0 .. B-1 in turn). value(t) is thread t's value (on the
// device only t = the calling thread is asked); set(t, inv) receives its
// inverse. Every thread of the block must call this (it holds barriers), on
// memory no thread of the block is using (verify_kernel's tree runs before
// any row touches its scratch, parity_kernel's in its own shared memory);
// when it returns, the tree's memory may be reused.
template <class Block, class Tree, class Value, class Set>
SV_HD void batch_inverse(const Block& block, const Tree& tree, Value value, Set set) {
    using Ops = typename Tree::Ops;
    const u32 b = block.threads(), l = tree.leaves;
    block.each([&](u32 t) {
        tree.put(l + t, value(t));
        if (b + t < l) tree.put(l + b + t, Ops::one());
    });
    for (u32 half = l / 2; half >= 1; half /= 2)
        block.each([&](u32 t) {
            if (t < half) tree.up(half + t);
        });
    block.each([&](u32 t) {
        if (t == 0) tree.put(1, Ops::inv(tree.get(1)));
    });
    for (u32 half = 1; half < l; half *= 2)
        block.each([&](u32 t) {
            if (t < half) tree.down(half + t);
        });
    // every leaf is final (the last each() ended with a barrier); this one's
    // barrier frees the tree's memory for the caller
    block.each([&](u32 t) { set(t, tree.get(l + t)); });
}

// The host's block: phases run thread after thread.
struct HostBlock {
    u32 n;
    u32 threads() const { return n; }
    template <class Fn>
    void each(Fn fn) const {
        for (u32 t = 0; t < n; ++t) fn(t);
    }
};

#if defined(__CUDACC__)
// A CUDA block: each thread runs its own t, then all wait.
struct DeviceBlock {
    __device__ u32 threads() const { return blockDim.x; }
    template <class Fn>
    __device__ void each(Fn fn) const {
        fn(threadIdx.x);
        __syncthreads();
    }
};
#endif

}  // namespace sigverify::kernels
