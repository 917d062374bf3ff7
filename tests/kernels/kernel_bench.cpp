// SPDX-License-Identifier: MIT
// Micro-benchmark of the host-compiled kernel math (not a test): cost of the
// primitives and of a whole verification, next to libsecp256k1 through the
// reference verifier, single thread.
#include <chrono>
#include <cstdio>
#include <vector>

#include "kernels/kernel_math.hpp"
#include "kernels/exact_verify.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"

using namespace sigverify;
using namespace sigverify::kernels;

namespace {

template <class F>
double time_ns(int iters, F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) f(i);
    return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / iters;
}

volatile u64 sink;

}  // namespace

int main() {
    host_exact_g_table();
    Fe a{{0x123456789abcdefull, 0xfedcba987654321ull, 0x1111111111111111ull, 0x2222222222222222ull}};
    Fe b = a;
    Sc s{{0x123456789abcdefull, 0xfedcba987654321ull, 0x1111111111111111ull, 0x2222222222222222ull}};
    std::printf("fe_mul   %8.1f ns\n", time_ns(1000000, [&](int) { fe_mul(b, b, a); }));
    std::printf("fe_sqr   %8.1f ns\n", time_ns(1000000, [&](int) { fe_sqr(b, b); }));
    std::printf("fe_inv   %8.1f ns\n", time_ns(20000, [&](int) { fe_inv(b, b); }));
    std::printf("fe_sqrt  %8.1f ns\n", time_ns(20000, [&](int) { fe_sqrt(b, b); }));
    std::printf("sc_mul   %8.1f ns\n", time_ns(1000000, [&](int) { sc_mul(s, s, s); }));
    std::printf("sc_inv   %8.1f ns\n", time_ns(20000, [&](int) { s = sc32_inv(s); }));
    sink = b.v[0] ^ s.v[0];
    const Ge g = ge_generator();
    Gej r;
    std::printf("ecmult   %8.1f ns\n", time_ns(20000, [&](int i) {
                    Sc na = s, ng = s;
                    na.v[0] ^= u64(i);
                    ecmult(r, g, na, ng, host_exact_g_table());
                    sink = r.x.v[0];
                }));
    reference::RowVerifier ref;
    for (auto t : {wire::Table::ecdsa, wire::Table::schnorr}) {
        reference::GenOptions o;
        o.table = t;
        o.count = 20000;
        o.seed = 5;
        auto rows = reference::generate_rows(o);
        const wire::RecordKind kind = wire::record_kind(t);
        const wire::RowSpan span{kind, wire::canonical_tail_size(t), wire::SigEncoding::opaque, rows.data(),
                                 o.count};
        std::size_t ok1 = 0, ok2 = 0;
        const double k = time_ns(int(o.count), [&](int i) {
            ok1 += verify_record(span.row(std::size_t(i)), kind, wire::SigEncoding::opaque);
        });
        const double l = time_ns(int(o.count), [&](int i) { ok2 += ref.verify_row(span, std::size_t(i)); });
        // the range the host-kernel backend runs, one thread
        std::vector<std::uint8_t> res(o.count);
        const auto t0 = std::chrono::steady_clock::now();
        const auto counts = verify_range(span, 0, span.count, wire::Mode::results, res.data());
        const double kb =
            std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / double(o.count);
        std::printf("%-8s verify, one thread: kernel math %.2f us/row (verify_range: %.2f us/row), libsecp256k1 "
                    "%.2f us/row; ratio %.2f (range %.2f); valid %zu/%zu/%llu\n",
                    std::string(wire::to_string(t)).c_str(), k / 1000, kb / 1000, l / 1000, k / l,
                    kb / l, ok1, ok2, static_cast<unsigned long long>(counts.valid));
    }
    return 0;
}
