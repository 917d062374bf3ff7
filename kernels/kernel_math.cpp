// SPDX-License-Identifier: MIT
#include "kernels/kernel_math.hpp"

#include <algorithm>
#include <cstring>

#include "kernels/exact_verify.hpp"
#include "kernels/verify32.hpp"
#include "reference/parallel_for.hpp"
#include "shm_protocol/verdict_publish.hpp"

namespace sigverify::kernels {

namespace {

// Odd multiples (2i+1) base, i < count, as affine storage.
void odd_multiples(const Ge& base, GeStorage* out, int count) {
    std::vector<Gej> pts(static_cast<std::size_t>(count));
    Gej d;
    gej_double(d, gej_from_ge(base));
    Ge da;
    ge_set_gej(da, d);
    pts[0] = gej_from_ge(base);
    for (int i = 1; i < count; ++i) gej_add_ge(pts[i], pts[i - 1], da);
    std::vector<Fe> zs(static_cast<std::size_t>(count)), scratch(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) zs[i] = pts[i].z;
    fe_batch_inv(zs.data(), scratch.data(), count);
    for (int i = 0; i < count; ++i) {
        Fe zi2, zi3;
        fe_sqr(zi2, zs[i]);
        fe_mul(zi3, zi2, zs[i]);
        Ge a;
        fe_mul(a.x, pts[i].x, zi2);
        fe_mul(a.y, pts[i].y, zi3);
        a.infinity = false;
        out[i] = ge_to_storage(a);
    }
}

// Both tables of a kernel in one array: count odd multiples of G, then of
// 2^shift G.
std::vector<GeStorage> g_and_shifted_g_tables(int shift, int count) {
    std::vector<GeStorage> t(2 * static_cast<std::size_t>(count));
    const Ge g = ge_generator();
    odd_multiples(g, t.data(), count);
    Gej h = gej_from_ge(g);
    for (int i = 0; i < shift; ++i) gej_double(h, h);
    Ge ha;
    ge_set_gej(ha, h);
    odd_multiples(ha, t.data() + count, count);
    return t;
}

}  // namespace

std::vector<GeStorage> build_exact_g_tables() { return g_and_shifted_g_tables(128, kTableGSize); }

const GTableView& host_exact_g_table() {
    static const std::vector<GeStorage> storage = build_exact_g_tables();
    static const GTableView view{storage.data(), storage.data() + kTableGSize};
    return view;
}

std::vector<GeStorage> build_g_tables32() { return g_and_shifted_g_tables(kGHighShift, kGTableEntries); }

const GTable32& host_g_table32() {
    static const std::vector<GeStorage> storage = build_g_tables32();
    static const GTable32 view{storage.data()};
    return view;
}

namespace {

// What a CUDA block does with its rows (gpu_verifier.cu's kernel), thread
// after thread: the ECDSA rows' s values share one inversion, then each row
// runs its verification. record(t) is row t's bytes, t < n <= kHostBlockRows.
template <class Record>
void verify_block32_with(std::size_t n, wire::RecordKind kind, wire::SigEncoding encoding, Record record,
                         std::uint8_t* verdicts) {
    const bool schnorr = kind == wire::RecordKind::schnorr, compact = encoding == wire::SigEncoding::compact;
    const HostBlock block{u32(n)};
    u32 words[sc_tree_words(kHostBlockRows)];
    Sc sinv[kHostBlockRows];
    if (!schnorr) {
        batch_inverse(
            block, ScTree{words, sc_tree_leaves(u32(n))}, [&](u32 t) { return ecdsa_batch_value32(record(t), compact); },
            [&](u32 t, const Sc& v) { sinv[t] = v; });
    }
    HostScratch32 scratch;
    const PTable32 ptab = scratch.view();
    // BIP-340 rows park R's Y and Z for the parity step, as on the GPU
    u32 park[kHostBlockRows][kParityParkWords];
    for (std::size_t t = 0; t < n; ++t) {
        if (!schnorr) ptab.store_sinv(ecdsa_checked_inverse32(record(t), compact, sinv[t]));
        verdicts[t] = verify_row32<true>(record(t), schnorr, compact, ptab, host_g_table32(), park[t]);
    }
    if (!schnorr) return;
    // the second kernel's step
    parity_block32(
        block, words, [&](u32 t) { return verdicts[t] == kVerdictParity; },
        [&](u32 t, Fe32& y, Fe32& z) { parity_unpark32(park[t], y, z); }, [&](u32 t, u8 v) { verdicts[t] = v; });
}

}  // namespace

std::uint8_t verify_record32(const std::uint8_t* record, wire::RecordKind kind, wire::SigEncoding encoding) {
    std::uint8_t v = kVerdictInvalid;
    verify_block32_with(1, kind, encoding, [&](u32) { return record; }, &v);
    return v;
}

void verify_block32(const wire::RowSpan& rows, std::size_t begin, std::size_t n, std::uint8_t* verdicts) {
    verify_block32_with(std::min(n, kHostBlockRows), rows.kind, rows.encoding,
                        [&](u32 t) { return rows.row(begin + t); }, verdicts);
}

bool verify_record_exact(const std::uint8_t* record, wire::RecordKind kind, wire::SigEncoding encoding) {
    const GTableView& tab = host_exact_g_table();
    if (kind == wire::RecordKind::ecdsa) return exact_ecdsa_verify(record, encoding == wire::SigEncoding::compact, tab);
    return exact_schnorr_verify(record, tab);
}

bool resolve_verdict32(std::uint8_t verdict, const std::uint8_t* record, wire::RecordKind kind,
                       wire::SigEncoding encoding) {
    // a recheck, or any other value above valid (kVerdictParity, which the
    // parity step should have replaced, or garbage): the exact path decides,
    // never "invalid" by default
    if (verdict > kVerdictValid) return verify_record_exact(record, kind, encoding);
    return verdict == kVerdictValid;
}

bool verify_record(const std::uint8_t* record, wire::RecordKind kind, wire::SigEncoding encoding) {
    return resolve_verdict32(verify_record32(record, kind, encoding), record, kind, encoding);
}

HostCounts verify_range(const wire::RowSpan& rows, std::size_t begin, std::size_t end,
                        wire::Mode mode, std::uint8_t* results) {
    HostCounts c;
    const wire::TailSpan tails = wire::row_tails(rows);
    std::uint8_t verdicts[kHostBlockRows];
    for (std::size_t b = begin; b < end; b += kHostBlockRows) {
        const std::size_t n = std::min(kHostBlockRows, end - b);
        verify_block32(rows, b, n, verdicts);
        for (std::size_t t = 0; t < n; ++t) {
            const std::size_t i = b + t;
            const bool ok = resolve_verdict32(verdicts[t], rows.row(i), rows.kind, rows.encoding);
            if (ok) {
                ++c.valid;
            } else {
                ++c.invalid;
            }
            wire::publish_verdict(mode, tails, results, i, ok);
        }
    }
    return c;
}

// What reference::sum_over adds up (found by argument-dependent lookup).
static HostCounts& operator+=(HostCounts& a, const HostCounts& b) {
    a.valid += b.valid;
    a.invalid += b.invalid;
    return a;
}

// The tests' and tools' entry (the daemon's host twin has its own workers):
// the reference's one pool, for the length of the call.
HostCounts verify_rows(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results,
                       unsigned threads) {
    if (mode == wire::Mode::results && rows.count != 0) std::memset(results, 0, rows.count);
    host_exact_g_table();  // build before the threads start
    host_g_table32();
    // A pool of one starts no thread: rows sum_over keeps on the caller anyway.
    reference::WorkerPool pool(rows.count < reference::kSerialBelow ? 1 : threads);
    return reference::sum_over<HostCounts>(pool, rows.count, [&](unsigned, std::size_t begin, std::size_t end) {
        return verify_range(rows, begin, end, mode, results);
    });
}

}  // namespace sigverify::kernels
