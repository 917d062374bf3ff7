// SPDX-License-Identifier: MIT
// One scalar inversion mod n for a whole block of rows: Montgomery's trick on
// a product tree, portable __host__ __device__ C++ (the same statements run
// in a CUDA block and, thread after thread, in the host twin).
//
// Why: ECDSA's s^-1 by divsteps is ~24k thread-instructions, once per row
// (~750 warp-instructions of the ~12.7k a row). The tree costs one inversion
// per block (thread 0's, 24k warp-instructions over 128 rows) and three
// products per node: ~230 warp-instructions a row.
//
// The tree. A block of B threads puts one value each at the leaves
// [L, L + B) of a binary heap of 2L nodes (L the power of two >= B, node 1
// the root, node k's children 2k and 2k + 1); leaves [L + B, 2L) hold 1.
//  * up: for half = L/2 .. 1, thread t < half sets node half + t to the
//    product of its children;
//  * thread 0 replaces the root by its inverse (sc32_inv);
//  * down: for half = 1 .. L/2, thread t < half reads node k = half + t (now
//    the inverse of its product) and sets its children to
//    inv(k) * (the other child): inv(2k) = inv(k) * node(2k + 1) and
//    inv(2k + 1) = inv(k) * node(2k).
// Each phase reads only nodes the phase before wrote, so one barrier between
// phases orders it (Block::each). After the last one leaf L + t holds the
// inverse of thread t's value.
//
// Invariant the caller keeps: every value is nonzero mod n (n is prime, so
// the product is nonzero and every inverse exact). An ECDSA row whose s is
// not in [1, n) is invalid and puts 1 instead (ecdsa_batch_value32). Were a
// zero to enter anyway, sc32_inv(0) = 0 makes every inverse of the block 0:
// na = ng = 0, whose ladder ends at infinity through a flagged addition
// (kVerdictRecheck, decided by the exact path) — never a wrong verdict.
#pragma once

#include "kernels/scalar32.hpp"

namespace sigverify::kernels {

// Word w of node k at words[w * stride + k] (stride = 2L): a level's threads
// touch consecutive nodes, one bank each in shared memory.
struct ScTree {
    u32* words;
    u32 leaves;  // L
    SV_HD u32 stride() const { return 2 * leaves; }
    SV_HD void put(u32 node, const Sc& a) const {
        SV_UNROLL
        for (int i = 0; i < 4; ++i) {
            words[u32(2 * i) * stride() + node] = u32(a.v[i]);
            words[u32(2 * i + 1) * stride() + node] = u32(a.v[i] >> 32);
        }
    }
    SV_HD Sc get(u32 node) const {
        Sc a;
        SV_UNROLL
        for (int i = 0; i < 4; ++i)
            a.v[i] = u64(words[u32(2 * i) * stride() + node]) | u64(words[u32(2 * i + 1) * stride() + node]) << 32;
        return a;
    }
};

// L for a block of `threads` threads, and the words the tree needs: 16 L
// (< 32 words a thread, whatever the block size).
SV_HD constexpr u32 sc_tree_leaves(u32 threads) {
    u32 l = 1;
    while (l < threads) l *= 2;
    return l;
}
SV_HD constexpr u32 sc_tree_words(u32 threads) { return 16 * sc_tree_leaves(threads); }

// One node of the up phase: its children's product.
SV_HD void sc_tree_up(const ScTree& tree, u32 node) {
    tree.put(node, sc32_mul_call(tree.get(2 * node), tree.get(2 * node + 1)));
}

// One node of the down phase: node holds the inverse of its product; its
// children get theirs.
SV_HD void sc_tree_down(const ScTree& tree, u32 node) {
    const Sc inv = tree.get(node), left = tree.get(2 * node);
    tree.put(2 * node, sc32_mul_call(inv, tree.get(2 * node + 1)));
    tree.put(2 * node + 1, sc32_mul_call(inv, left));
}

// The inverses of a block's values. Block provides threads() (B) and
// each(fn): fn(t) for every thread t of the block, then a barrier (on the
// device each thread runs fn for its own t and waits at __syncthreads; the
// host runs t = 0 .. B-1 in turn). value(t) is thread t's value (on the
// device only t = the calling thread is asked); set(t, inv) receives its
// inverse. Every thread of the block must call this (it holds barriers);
// when it returns, the tree's memory may be reused.
template <class Block, class Value, class Set>
SV_HD void sc_batch_inverse(const Block& block, const ScTree& tree, Value value, Set set) {
    const u32 b = block.threads(), l = tree.leaves;
    block.each([&](u32 t) {
        tree.put(l + t, value(t));
        if (b + t < l) tree.put(l + b + t, sc_one());
    });
    for (u32 half = l / 2; half >= 1; half /= 2)
        block.each([&](u32 t) {
            if (t < half) sc_tree_up(tree, half + t);
        });
    block.each([&](u32 t) {
        if (t == 0) tree.put(1, sc32_inv(tree.get(1)));
    });
    for (u32 half = 1; half < l; half *= 2)
        block.each([&](u32 t) {
            if (t < half) sc_tree_down(tree, half + t);
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
