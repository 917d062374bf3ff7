// SPDX-License-Identifier: MIT
// Counts field and scalar multiplications per verification (not a test):
// the GPU's cost is dominated by these, so the counts are the host-side
// yardstick for kernel changes. Built with SV_COUNT_FIELD_OPS, with the
// kernel sources compiled in. Rows come from host_rows.hpp (valid rows only,
// so every row runs the full path): the GPU kernel's host twin, then the
// exact path that decides its rechecks.
#include <cstdio>
#include <vector>

#include "kernels/kernel_math.hpp"
#include "kernels/exact_verify.hpp"
#include "tests/kernels/host_rows.hpp"

using namespace sigverify;
using namespace sigverify::kernels;

int main() {
    const std::size_t n = 400;
    for (auto t : {wire::Table::ecdsa, wire::Table::schnorr}) {
        kernel_test::HostGenOptions o;
        o.table = t;
        o.count = n;
        o.tail_size = 0;
        o.invalid_rate = 0;
        o.high_s_rate = 0.5;
        o.threads = 1;
        auto rows = kernel_test::host_generate_rows(o);
        const auto kind = wire::record_kind(t);
        const wire::RowSpan span{kind, 0, wire::SigEncoding::opaque, rows.data(), n};
        host_exact_g_table();  // both tables built before counting (their build is not a row's cost)
        host_g_table32();
        for (bool exact : {false, true}) {
            g_op_counts = OpCounts{};
            std::size_t valid = 0;
            for (std::size_t i = 0; i < n; ++i)
                valid += exact ? verify_record_exact(span.row(i), kind, span.encoding)
                               : verify_record(span.row(i), kind, span.encoding);
            const OpCounts c = g_op_counts;
            const double fm = double(c.fe_mul) / n, fs = double(c.fe_sqr) / n, sm = double(c.sc_mul) / n;
            std::printf("%-7s %-12s per row: fe_mul %.0f  fe_sqr %.0f  (field %.0f)  sc_mul %.0f; valid %zu/%zu\n",
                        std::string(wire::to_string(kind)).c_str(), exact ? "exact path" : "gpu kernel", fm, fs,
                        fm + fs, sm, valid, n);
        }
    }
    return 0;
}
