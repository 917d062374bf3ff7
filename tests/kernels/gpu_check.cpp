// SPDX-License-Identifier: MIT
// GPU check and benchmark (run on a machine with a GPU; prints "no GPU" and
// exits 77, the skip code ctest and scripts/gpu-check.sh know, without one).
//
//  1. discovery and the start-up self-test on the chosen device;
//  2. differential: generated rows of all four tables (ECDSA tables in both
//     encodings; 30% broken, 25% high-S, and 1 in 8 made hostile: s or r 0 or
//     >= n, a key x >= p, a bad key prefix, an all-0xFF signature), GPU
//     verdicts against the oracle row by row (results mode) and byte for
//     byte (collect mode);
//  3. benchmark on the same rows: end-to-end verify() (host -> device ->
//     verdicts, pinned staging, chunked over streams), kernel-only (CUDA
//     events over rows already on the device), and the CPU oracle on all
//     cores, with the GPU/CPU ratio.
//
// Oracle: with SIGVERIFY_GPU_CHECK_WITH_REFERENCE=1 the rows come from
// reference::generate_rows and the verdicts from reference::Verifier
// (libsecp256k1); otherwise (a machine without libsecp256k1) rows come from
// host_rows.hpp and verdicts from the host-compiled kernel math, which the
// CI tests prove against libsecp256k1.
//
// Usage: gpu_check [--rows N] [--device I] [--streams S] [--chunk-mb M]
//                  [--tpb T] [--repeats R] [--self-test-only]
//                  [--tables ecdsa,schnorr] [--no-bench] [--no-hostile]
// --tables: only these tables (the sanitizer and Nsight runs of
// scripts/gpu-check.sh: ecdsa launches verify_kernel, schnorr parity_kernel
// too); --no-bench: verdicts only (no end-to-end, kernel-only or CPU rate);
// --no-hostile: the generated rows only (the rows of earlier kernels'
// gpu_check, for rates side by side).
// Exit: 0 pass, 1 wrong verdicts or failed self-test, 2 CUDA or usage error,
// 77 no GPU (nothing was checked: skipped, not passed).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kernels/gpu_verifier.hpp"
#include "kernels/kernel_math.hpp"
#include "kernels/record_layout.hpp"

#if SIGVERIFY_GPU_CHECK_WITH_REFERENCE
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"
#else
#include "tests/kernels/host_rows.hpp"
#endif
#include "tests/support/seconds_since.hpp"

using namespace sigverify;
using test::seconds_since;
using clk = std::chrono::steady_clock;

namespace {

constexpr int kExitSkipped = 77;  // ctest's SKIP_RETURN_CODE for gpu_check

struct Args {
    std::size_t rows = 1'000'000;
    gpu::Options options;
    int repeats = 3;
    bool self_test_only = false;
    bool bench = true;
    bool hostile = true;
    std::string tables;  // comma-separated; empty: all
};

bool parse(int argc, char** argv, Args& a) {
    for (int i = 1; i < argc; ++i) {
        const std::string s = argv[i];
        auto next = [&](unsigned long long& v) {
            if (i + 1 >= argc) return false;
            char* end = nullptr;
            v = std::strtoull(argv[++i], &end, 10);
            return end && *end == '\0';
        };
        unsigned long long v = 0;
        if (s == "--rows" && next(v)) {
            a.rows = v;
        } else if (s == "--device" && next(v)) {
            a.options.device = int(v);
        } else if (s == "--streams" && next(v)) {
            a.options.streams = int(v);
        } else if (s == "--chunk-mb" && next(v)) {
            a.options.chunk_bytes = std::size_t(v) << 20;
        } else if (s == "--tpb" && next(v)) {
            a.options.threads_per_block = int(v);
        } else if (s == "--repeats" && next(v)) {
            a.repeats = int(v);
        } else if (s == "--self-test-only") {
            a.self_test_only = true;
        } else if (s == "--no-bench") {
            a.bench = false;
        } else if (s == "--no-hostile") {
            a.hostile = false;
        } else if (s == "--tables" && i + 1 < argc) {
            a.tables = argv[++i];
        } else {
            std::fprintf(stderr, "usage: gpu_check [--rows N] [--device I] [--streams S] [--chunk-mb M] "
                                 "[--tpb T] [--repeats R] [--self-test-only] [--tables LIST] [--no-bench] [--no-hostile]\n");
            return false;
        }
    }
    return true;
}

struct Oracle {
    unsigned threads = std::max(1u, std::thread::hardware_concurrency());
#if SIGVERIFY_GPU_CHECK_WITH_REFERENCE
    reference::Verifier verifier{0};
    const char* name = "libsecp256k1 (reference::Verifier)";
    std::vector<std::uint8_t> generate(wire::Table t, wire::SigEncoding enc, std::size_t n, std::uint64_t seed) {
        reference::GenOptions o;
        o.table = t;
        o.count = n;
        o.encoding = enc;
        o.invalid_rate = 0.3;
        o.high_s_rate = 0.25;
        o.seed = seed;
        return reference::generate_rows(o);
    }
    std::uint64_t verify(const wire::RowSpan& span, std::uint8_t* results) {
        return verifier.verify(span, results).valid;
    }
#else
    const char* name = "host-compiled kernel math (proven against libsecp256k1 in CI)";
    std::vector<std::uint8_t> generate(wire::Table t, wire::SigEncoding enc, std::size_t n, std::uint64_t seed) {
        kernel_test::HostGenOptions o;
        o.table = t;
        o.count = n;
        o.tail_size = wire::canonical_tail_size(t);
        o.encoding = enc;
        o.seed = seed;
        return kernel_test::host_generate_rows(o);
    }
    std::uint64_t verify(const wire::RowSpan& span, std::uint8_t* results) {
        return kernels::verify_rows(span, wire::Mode::results, results, threads).valid;
    }
#endif
};

// Hostile rows, 1 in 8: fields a parser must refuse (or, for a high s, take)
// without reading past them; the oracle decides each verdict.
void make_hostile(std::vector<std::uint8_t>& rows, wire::RecordKind kind, std::size_t stride, std::size_t n) {
    const int sig = kind == wire::RecordKind::ecdsa ? kernels::kEcdsaSig : kernels::kSchnorrSig;
    const int key_x = kind == wire::RecordKind::ecdsa ? kernels::kRecKey + 1 : kernels::kRecKey;
    for (std::size_t i = 3; i < n; i += 8) {
        std::uint8_t* r = rows.data() + i * stride;
        switch ((i / 8) % 6) {
        case 0: std::memset(r + sig, 0, 32); break;                   // r (or R.x) = 0
        case 1: std::memset(r + sig + 32, 0xFF, 32); break;           // s >= n
        case 2: std::memset(r + key_x, 0xFF, 32); break;              // key x >= p
        case 3: if (kind == wire::RecordKind::ecdsa) r[kernels::kRecKey] = 0x05; else std::memset(r + sig, 0xFF, 32);
            break;                                                    // bad prefix / R.x >= p
        case 4: std::memset(r + sig, 0xFF, 64); break;                // all-0xFF signature
        default: std::memset(r + sig + 32, 0, 32); break;             // s = 0
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    Args args;
    if (!parse(argc, argv, args)) return 2;
    std::setvbuf(stdout, nullptr, _IOLBF, 0);

    const gpu::Discovery disc = gpu::discover();
    if (disc.devices.empty()) {
        std::printf("%s (skipping)\n", disc.error.c_str());
        return kExitSkipped;
    }
    for (const auto& d : disc.devices) {
        std::printf("GPU %d: %s, sm_%d%d, %d SMs, %.1f GiB, PCI %s\n", d.index, d.name.c_str(), d.cc_major,
                    d.cc_minor, d.sm_count, double(d.total_memory) / (1 << 30), d.pci_bus_id.c_str());
    }
    gpu::Status st;
    auto t0 = clk::now();
    auto dev = gpu::DeviceVerifier::open(args.options, st);
    if (!dev) {
        std::printf("FAIL open GPU %d: [%s] %s\n", args.options.device, std::string(gpu::to_string(st.code)).c_str(),
                    st.message.c_str());
        return 2;
    }
    const gpu::LaunchShape shape = dev->launch_shape();
    std::printf("opened GPU %d (sm_%d%d) in %.2fs (streams %d, chunk %zu MiB, %d threads/block asked, "
                "%d launched, %d warps/SM resident)\n",
                args.options.device, dev->info().cc_major, dev->info().cc_minor, seconds_since(t0),
                args.options.streams, args.options.chunk_bytes >> 20, args.options.threads_per_block,
                shape.threads_per_block, shape.resident_warps_per_sm);
    t0 = clk::now();
    st = dev->self_test();
    std::printf("self-test: %s%s%s (%.2fs)\n", st.ok() ? "PASS" : "FAIL", st.ok() ? "" : ": ",
                st.message.c_str(), seconds_since(t0));
    if (!st.ok()) return st.code == gpu::Code::cuda_error ? 2 : 1;
    if (args.self_test_only) return 0;

    Oracle oracle;
    std::printf("oracle: %s, %u CPU threads; %zu rows per table\n", oracle.name, oracle.threads, args.rows);
    struct Config {
        wire::Table table;
        wire::SigEncoding enc;
    };
    const Config configs[] = {
        {wire::Table::ecdsa, wire::SigEncoding::opaque},    {wire::Table::ecdsa, wire::SigEncoding::compact},
        {wire::Table::multisig, wire::SigEncoding::opaque}, {wire::Table::multisig, wire::SigEncoding::compact},
        {wire::Table::schnorr, wire::SigEncoding::opaque},  {wire::Table::threshold, wire::SigEncoding::opaque},
    };
    bool all_ok = true;
    std::printf("\n%-9s %-7s %9s %9s %6s %6s | %12s %12s %12s | %7s %7s\n", "table", "enc", "rows", "valid",
                "diff", "coll", "gpu_e2e/s", "kernel/s", "cpu/s", "e2e/cpu", "ker/cpu");
    std::vector<std::string> notes;
    for (const Config& c : configs) {
        if (!args.tables.empty() && ("," + args.tables + ",").find("," + std::string(wire::to_string(c.table)) + ",") ==
                                        std::string::npos)
            continue;
        const std::size_t n = args.rows;
        t0 = clk::now();
        auto rows = oracle.generate(c.table, c.enc, n, 0x5EED0000u + unsigned(c.table) * 2 + unsigned(c.enc));
        const double gen_s = seconds_since(t0);
        const wire::RecordKind kind = wire::record_kind(c.table);
        const std::size_t ks = wire::canonical_tail_size(c.table);
        if (args.hostile) make_hostile(rows, kind, wire::stride(kind, ks), n);
        const wire::RowSpan span{kind, ks, c.enc, rows.data(), n};

        std::vector<std::uint8_t> want(n), got(n, 0xEE);
        t0 = clk::now();
        const std::uint64_t want_valid = oracle.verify(span, want.data());
        const double cpu_s = seconds_since(t0);

        gpu::Counts counts;
        st = dev->verify(span, wire::Mode::results, got.data(), &counts);
        if (!st.ok()) {
            std::printf("FAIL verify %s: %s\n", std::string(wire::to_string(c.table)).c_str(), st.message.c_str());
            return 2;
        }
        const gpu::Timing timing = dev->last_timing();
        std::size_t diff = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (got[i] != want[i]) {
                if (diff < 5)
                    notes.push_back(std::string(wire::to_string(c.table)) + "/" + std::string(wire::to_string(c.enc)) +
                                    " row " + std::to_string(i) + ": gpu " + std::to_string(got[i]) + ", oracle " +
                                    std::to_string(want[i]));
                ++diff;
            }
        }
        if (counts.valid != want_valid) ++diff;

        // collect mode, byte for byte: expected = rows with the tails of valid rows zeroed
        auto expect = rows;
        for (std::size_t i = 0; i < n; ++i)
            if (want[i]) std::memset(expect.data() + i * span.row_stride() + wire::record_size(kind), 0, ks);
        auto collected = rows;
        const wire::RowSpan cspan{kind, ks, c.enc, collected.data(), n};
        st = dev->verify(cspan, wire::Mode::collect, nullptr, nullptr);
        if (!st.ok()) {
            std::printf("FAIL collect %s: %s\n", std::string(wire::to_string(c.table)).c_str(), st.message.c_str());
            return 2;
        }
        const bool collect_ok = collected == expect;

        double kernel_rps = 0;
        st = args.bench ? dev->benchmark_kernel(span, args.repeats, kernel_rps) : gpu::Status::success();
        if (!st.ok()) {
            std::printf("FAIL kernel benchmark: %s\n", st.message.c_str());
            return 2;
        }
        const double e2e_rps = double(n) / (timing.wall_ms / 1000.0);
        const double cpu_rps = double(n) / cpu_s;
        // SM-cycles per row at the H200's 1.98 GHz boost clock (an estimate:
        // the clock under load is not read here)
        const double sm_cycles = kernel_rps > 0 ? dev->info().sm_count * 1.98e9 / kernel_rps : 0;
        std::printf("%-9s %-7s %9zu %9llu %6zu %6s | %12.0f %12.0f %12.0f | %7.1f %7.1f   (gen %.1fs, %zu chunks, "
                    "%zu rechecked, %.0f SM-cycles/row)\n",
                    std::string(wire::to_string(c.table)).c_str(), std::string(wire::to_string(c.enc)).c_str(), n,
                    static_cast<unsigned long long>(want_valid), diff, collect_ok ? "ok" : "FAIL", e2e_rps,
                    kernel_rps, cpu_rps, e2e_rps / cpu_rps, kernel_rps / cpu_rps, gen_s, timing.chunks,
                    timing.rechecked, sm_cycles);
        all_ok &= diff == 0 && collect_ok;
    }
    for (const auto& s : notes) std::printf("  mismatch: %s\n", s.c_str());
    std::printf("\nRESULT: %s\n", all_ok ? "PASS (GPU verdicts identical to the oracle on every row)" : "FAIL");
    return all_ok ? 0 : 1;
}
