// SPDX-License-Identifier: MIT
// Google Benchmark micro-benchmarks: the host-compiled kernel math (the same
// source the GPU runs) next to libsecp256k1, one thread. Not a test: run
//   build/tests/bench/sigverify_microbench [--benchmark_filter=verify]
// and read ns/op. The figures go to BENCHMARKS.md.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "kernels/kernel_math.hpp"
#include "kernels/exact_verify.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"

using namespace sigverify;
namespace k = sigverify::kernels;

namespace {

// Inputs that are not special: the x coordinates of generated keys.
std::vector<k::Fe> field_inputs() {
    reference::GenOptions o;
    o.table = wire::Table::schnorr;
    o.count = 64;
    o.threads = 1;
    const auto rows = reference::generate_rows(o);
    std::vector<k::Fe> out(o.count);
    for (std::size_t i = 0; i < o.count; ++i) k::fe_set_b32(out[i], rows.data() + i * 131 + 32);
    return out;
}

std::vector<k::Sc> scalar_inputs() {
    const auto fe = field_inputs();
    std::vector<k::Sc> out(fe.size());
    for (std::size_t i = 0; i < fe.size(); ++i) {
        std::uint8_t b[32];
        k::fe_get_b32(b, fe[i]);
        b[0] &= 0x7F;  // below n
        k::sc_set_bytes(out[i], b, k::ByteOrder::big);
    }
    return out;
}

const std::vector<std::uint8_t>& rows_of(wire::Table table) {
    static std::vector<std::uint8_t> ecdsa, schnorr;
    auto& rows = table == wire::Table::ecdsa ? ecdsa : schnorr;
    if (rows.empty()) {
        reference::GenOptions o;
        o.table = table;
        o.count = 256;
        o.tail_size = 0;
        rows = reference::generate_rows(o);
    }
    return rows;
}

void BM_field_mul(benchmark::State& state) {
    auto in = field_inputs();
    k::Fe acc = in[0];
    std::size_t i = 0;
    for (auto _ : state) {
        k::fe_mul(acc, acc, in[i++ & 63]);
        benchmark::DoNotOptimize(acc);
    }
}
void BM_field_sqr(benchmark::State& state) {
    k::Fe acc = field_inputs()[1];
    for (auto _ : state) {
        k::fe_sqr(acc, acc);
        benchmark::DoNotOptimize(acc);
    }
}
void BM_field_inv(benchmark::State& state) {
    k::Fe acc = field_inputs()[2];
    for (auto _ : state) {
        k::fe_inv(acc, acc);
        benchmark::DoNotOptimize(acc);
    }
}
void BM_scalar_mul(benchmark::State& state) {
    auto in = scalar_inputs();
    k::Sc acc = in[0];
    std::size_t i = 0;
    for (auto _ : state) {
        k::sc_mul(acc, acc, in[i++ & 63]);
        benchmark::DoNotOptimize(acc);
    }
}
void BM_scalar_inv(benchmark::State& state) {
    k::Sc acc = scalar_inputs()[3];
    for (auto _ : state) {
        acc = k::sc32_inv(acc);
        benchmark::DoNotOptimize(acc);
    }
}

template <wire::Table table, bool kernel>
void BM_verify(benchmark::State& state) {
    const auto& rows = rows_of(table);
    const wire::RecordKind kind = wire::record_kind(table);
    const std::size_t stride = wire::record_size(kind), n = rows.size() / stride;
    reference::RowVerifier libsecp;
    k::host_exact_g_table();
    std::size_t i = 0, valid = 0;
    for (auto _ : state) {
        const std::uint8_t* rec = rows.data() + (i++ % n) * stride;
        bool ok;
        if constexpr (kernel) {
            ok = k::verify_record(rec, kind, wire::SigEncoding::opaque);
        } else {
            ok = kind == wire::RecordKind::ecdsa ? libsecp.verify_ecdsa(rec, wire::SigEncoding::opaque)
                                                 : libsecp.verify_schnorr(rec);
        }
        valid += ok;
    }
    if (valid != std::size_t(state.iterations())) state.SkipWithError("a valid row did not verify");
    state.SetItemsProcessed(state.iterations());
}

}  // namespace

BENCHMARK(BM_field_mul);
BENCHMARK(BM_field_sqr);
BENCHMARK(BM_field_inv);
BENCHMARK(BM_scalar_mul);
BENCHMARK(BM_scalar_inv);
BENCHMARK(BM_verify<wire::Table::ecdsa, true>)->Name("ecdsa_verify/kernel_math");
BENCHMARK(BM_verify<wire::Table::ecdsa, false>)->Name("ecdsa_verify/libsecp256k1");
BENCHMARK(BM_verify<wire::Table::schnorr, true>)->Name("schnorr_verify/kernel_math");
BENCHMARK(BM_verify<wire::Table::schnorr, false>)->Name("schnorr_verify/libsecp256k1");
BENCHMARK_MAIN();
