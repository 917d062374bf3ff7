// SPDX-License-Identifier: MIT
// Rows/s of the CPU lanes' ECDSA and BIP-340 (each width) against
// libsecp256k1 on the same rows in the same run, one thread, interleaved
// rounds; prints the ratios. Usage: lanes_bench [rows] [rounds]
// (compact-encoded ECDSA rows, 25% high-S; 5% of all rows corrupted; every
// lanes verdict is checked against libsecp256k1's; the BIP-340 timings
// include the challenge hash on both sides). Times are this thread's CPU
// time (CLOCK_THREAD_CPUTIME_ID), so a loaded machine's preemptions do not
// land on one side of a ratio; wall-clock ratios are printed beside them.
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "host_rows.hpp"
#include "kernels/kernel_math.hpp"
#include "kernels/lanes/lanes.hpp"

using namespace sigverify;
using namespace sigverify::kernels;

namespace {

double wall() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double cpu() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

bool secp_ecdsa(const secp256k1_context* ctx, const u8* rec) {
    secp256k1_pubkey pk;
    secp256k1_ecdsa_signature sig;
    if (!secp256k1_ec_pubkey_parse(ctx, &pk, rec + kRecKey, 33)) return false;
    if (!secp256k1_ecdsa_signature_parse_compact(ctx, &sig, rec + kEcdsaSig)) return false;
    secp256k1_ecdsa_signature_normalize(ctx, &sig, &sig);
    return secp256k1_ecdsa_verify(ctx, &sig, rec + kRecHash, &pk) == 1;
}

bool secp_schnorr(const secp256k1_context* ctx, const u8* rec) {
    secp256k1_xonly_pubkey pk;
    if (!secp256k1_xonly_pubkey_parse(ctx, &pk, rec + kRecKey)) return false;
    return secp256k1_schnorrsig_verify(ctx, rec + kSchnorrSig, rec + kRecHash, 32, &pk) == 1;
}

struct Kind {
    const char* name;
    wire::Table table;
    wire::RecordKind kind;
};

// One kind's rows, rounds of libsecp256k1 then each width; returns the
// verdicts that differ from libsecp256k1's.
long bench_kind(const Kind& k, std::size_t n, int rounds, const secp256k1_context* ctx) {
    kernel_test::HostGenOptions o;
    o.table = k.table;
    o.count = n;
    o.encoding = wire::SigEncoding::compact;
    o.invalid_rate = 0.05;
    o.high_s_rate = 0.25;
    const auto rows = kernel_test::host_generate_rows(o);
    const std::size_t stride = rows.size() / n;
    const bool ecdsa = k.kind == wire::RecordKind::ecdsa;
    std::vector<u8> want(n), got(n);
    std::vector<lanes::Width> widths = {lanes::Width::scalar};
    if (lanes::cpu_has_ifma8()) widths.push_back(lanes::Width::ifma8);
    if (lanes::cpu_has_ifma4()) widths.push_back(lanes::Width::ifma4);
    long wrong = 0;
    for (int round = 0; round < rounds; ++round) {
        double t = cpu(), tw = wall();
        for (std::size_t i = 0; i < n; ++i) {
            const u8* rec = rows.data() + i * stride;
            want[i] = ecdsa ? secp_ecdsa(ctx, rec) : secp_schnorr(ctx, rec);
        }
        const double secp = n / (cpu() - t), secp_wall = n / (wall() - tw);
        std::printf("%-7s round %d  libsecp256k1  %9.0f rows/s  1.00x  (wall %9.0f rows/s)\n", k.name, round, secp,
                    secp_wall);
        for (lanes::Width w : widths) {
            t = cpu();
            tw = wall();
            for (std::size_t i = 0; i < n; i += 8) {
                const u8* rec[8];
                for (int l = 0; l < 8; ++l) rec[l] = rows.data() + (i + l) * stride;
                u8 v[8];
                if (ecdsa) {
                    lanes::ecdsa_verify8(w, rec, true, v);
                } else {
                    lanes::schnorr_verify8(w, rec, v);
                }
                for (int l = 0; l < 8; ++l)
                    got[i + l] = resolve_verdict32(v[l], rec[l], k.kind, wire::SigEncoding::compact);
            }
            const double rate = n / (cpu() - t), rate_wall = n / (wall() - tw);
            for (std::size_t i = 0; i < n; ++i) wrong += got[i] != want[i];
            std::printf("%-7s round %d  lanes %-7s %9.0f rows/s  %.2fx  (wall %9.0f rows/s  %.2fx)\n", k.name, round,
                        std::string(lanes::width_name(w)).c_str(), rate, rate / secp, rate_wall, rate_wall / secp_wall);
        }
    }
    return wrong;
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t n = argc > 1 ? std::strtoul(argv[1], nullptr, 10) / 8 * 8 : 4000;
    const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
    secp256k1_context* ctx = secp256k1_context_create(SECP256K1_CONTEXT_VERIFY);
    lanes::g_table8();
    std::printf("rows %zu, one thread, %d interleaved rounds\n", n, rounds);
    long wrong = 0;
    wrong += bench_kind(Kind{"ecdsa", wire::Table::ecdsa, wire::RecordKind::ecdsa}, n, rounds, ctx);
    wrong += bench_kind(Kind{"bip340", wire::Table::schnorr, wire::RecordKind::schnorr}, n, rounds, ctx);
    std::printf("verdicts different from libsecp256k1: %ld\n", wrong);
    secp256k1_context_destroy(ctx);
    return wrong == 0 ? 0 : 1;
}
