// SPDX-License-Identifier: MIT
// Rows/s of the CPU lanes' ECDSA (each width) against libsecp256k1 on the
// same rows in the same run, one thread, interleaved rounds; prints the
// ratios. Usage: lanes_bench [rows] [rounds]   (compact-encoded rows, 5%
// corrupted; every lanes verdict is checked against libsecp256k1's).
#include <secp256k1.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "host_rows.hpp"
#include "kernels/kernel_math.hpp"
#include "kernels/lanes/lanes.hpp"

using namespace sigverify;
using namespace sigverify::kernels;

namespace {

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

bool secp_verify(const secp256k1_context* ctx, const u8* rec) {
    secp256k1_pubkey pk;
    secp256k1_ecdsa_signature sig;
    if (!secp256k1_ec_pubkey_parse(ctx, &pk, rec + kRecKey, 33)) return false;
    if (!secp256k1_ecdsa_signature_parse_compact(ctx, &sig, rec + kEcdsaSig)) return false;
    secp256k1_ecdsa_signature_normalize(ctx, &sig, &sig);
    return secp256k1_ecdsa_verify(ctx, &sig, rec + kRecHash, &pk) == 1;
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) / 8 * 8 : 4000;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
    kernel_test::HostGenOptions o;
    o.table = wire::Table::ecdsa;
    o.count = n;
    o.encoding = wire::SigEncoding::compact;
    o.invalid_rate = 0.05;
    o.high_s_rate = 0.25;
    const auto rows = kernel_test::host_generate_rows(o);
    const std::size_t stride = rows.size() / n;
    secp256k1_context* ctx = secp256k1_context_create(SECP256K1_CONTEXT_VERIFY);
    std::vector<u8> want(n), got(n);
    lanes::g_table8();
    std::vector<lanes::Width> widths = {lanes::Width::scalar};
    if (lanes::cpu_has_ifma8()) widths.push_back(lanes::Width::ifma8);
    std::printf("rows %zu, one thread, %d interleaved rounds\n", n, rounds);
    long wrong = 0;
    for (int round = 0; round < rounds; ++round) {
        double t = now();
        for (std::size_t i = 0; i < n; ++i) want[i] = secp_verify(ctx, rows.data() + i * stride);
        const double secp = n / (now() - t);
        std::printf("round %d  libsecp256k1 %9.0f rows/s  1.00x\n", round, secp);
        for (lanes::Width w : widths) {
            t = now();
            for (std::size_t i = 0; i < n; i += 8) {
                const u8* rec[8];
                for (int l = 0; l < 8; ++l) rec[l] = rows.data() + (i + l) * stride;
                u8 v[8];
                lanes::ecdsa_verify8(w, rec, true, v);
                for (int l = 0; l < 8; ++l)
                    got[i + l] = resolve_verdict32(v[l], rec[l], wire::RecordKind::ecdsa, wire::SigEncoding::compact);
            }
            const double rate = n / (now() - t);
            for (std::size_t i = 0; i < n; ++i) wrong += got[i] != want[i];
            std::printf("round %d  lanes %-7s %9.0f rows/s  %.2fx\n", round, std::string(lanes::width_name(w)).c_str(),
                        rate, rate / secp);
        }
    }
    std::printf("verdicts different from libsecp256k1: %ld\n", wrong);
    secp256k1_context_destroy(ctx);
    return wrong == 0 ? 0 : 1;
}
