// SPDX-License-Identifier: MIT
// How fast this GPU issues IMAD.WIDE.U32 (the 32x32->64 multiply-add every
// field product is made of) against plain 32-bit IMAD: if the wide form
// issues at half rate, the multiply pipe, not the warp count, bounds the
// verify kernel, and cutting multiplies matters more than occupancy
// (issue 30). Standalone (CUDA runtime only), run by scripts/gpu-check.sh.
//
// Each thread runs kChains independent multiply-add chains (enough to hide
// the latency at full occupancy), each product depending on the last pass.
// Prints warp-instructions of each kind issued per SM per clock, from CUDA
// events and the SM clock the driver reports (a boost clock: the figures
// are lower bounds when the GPU ran slower).
//
// What ptxas makes of it (sm_90, nvcc 13.0, decoded by scripts/
// kernel_metrics.py): a narrow pass is 8 IMAD + 3 loop instructions; a wide
// pass is 8 IMAD.WIDE.U32 with a zero addend, the 64-bit additions as
// 10 IADD3 + 6 IMAD (carry), + 3 (ptxas splits a wide multiply-add whose
// result feeds the next one). With IMAD at 2 warp-instructions per SM per
// clock and 4 issued per clock: IMAD.WIDE at full rate gives the wide pass
// ~1.1 IMAD.WIDE per SM per clock (its 8 + 6 multiplier instructions), at
// half rate ~0.7 (8 x 2 + 6 slots). The program prints which side it is on.
//
//   imad_rate [seconds per measurement, default 2]
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr int kChains = 8;
constexpr int kThreads = 256;

template <bool Wide>
__global__ void __launch_bounds__(kThreads) mad_chains(unsigned long long* out, unsigned seed, int iters) {
    unsigned a[kChains];
    unsigned long long acc[kChains];
    unsigned acc32[kChains];
    const unsigned b = seed * 2654435761u + blockIdx.x;
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
        a[c] = seed ^ (threadIdx.x * 97u + unsigned(c));
        acc[c] = (static_cast<unsigned long long>(b) << 32) | a[c];
        acc32[c] = a[c];
    }
#pragma unroll 1
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int c = 0; c < kChains; ++c) {
            // acc[c] += hi32(acc[c - 1]) * a: one IMAD.WIDE.U32 with a 64-bit
            // addend (a multiplicand inside the destination pair makes ptxas
            // split it); every product depends on the last pass, so nothing
            // can be hoisted out of the loop
            if (Wide)
                asm volatile("mad.wide.u32 %0, %1, %2, %0;"
                             : "+l"(acc[c]) : "r"(unsigned(acc[(c + kChains - 1) % kChains] >> 32)), "r"(a[c]));
            else
                asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(acc32[c]) : "r"(a[c]), "r"(b));
        }
    }
    unsigned long long sum = 0;
#pragma unroll
    for (int c = 0; c < kChains; ++c) sum += Wide ? acc[c] : acc32[c];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;  // keeps the chains live
}

bool check(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return true;
    std::printf("FAIL %s: %s\n", what, cudaGetErrorString(e));
    return false;
}

// Warp-instructions of the measured kind per SM per clock.
template <bool Wide>
bool measure(int sms, double clock_hz, double seconds, unsigned long long* d_out, int blocks, double& rate) {
    cudaEvent_t t0, t1;
    if (!check(cudaEventCreate(&t0), "cudaEventCreate") || !check(cudaEventCreate(&t1), "cudaEventCreate")) return false;
    int iters = 1 << 12;
    float ms = 0;
    for (;;) {  // grow the loop until one launch takes a tenth of the time asked
        cudaEventRecord(t0);
        mad_chains<Wide><<<blocks, kThreads>>>(d_out, 12345u, iters);
        cudaEventRecord(t1);
        if (!check(cudaEventSynchronize(t1), "kernel")) return false;
        cudaEventElapsedTime(&ms, t0, t1);
        if (ms >= 100.0 * seconds || iters >= (1 << 28)) break;
        iters *= 2;
    }
    const auto start = std::chrono::steady_clock::now();
    double best = 0;
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
        cudaEventRecord(t0);
        mad_chains<Wide><<<blocks, kThreads>>>(d_out, 777u, iters);
        cudaEventRecord(t1);
        if (!check(cudaEventSynchronize(t1), "kernel")) return false;
        cudaEventElapsedTime(&ms, t0, t1);
        const double warp_instr = double(blocks) * (kThreads / 32) * double(iters) * kChains;
        const double r = warp_instr / (double(sms) * clock_hz * (ms / 1000.0));
        if (r > best) best = r;
    }
    rate = best;
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    const double seconds = argc > 1 ? std::atof(argv[1]) : 2.0;
    int dev = 0, sms = 0, khz = 0, major = 0, minor = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
        std::printf("no GPU (skipping)\n");
        return 77;
    }
    cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, dev);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
    const int blocks = sms * 8;  // 8 blocks of 8 warps: 64 warps per SM where they fit
    unsigned long long* d_out = nullptr;
    if (!check(cudaMalloc(&d_out, sizeof(unsigned long long) * std::size_t(blocks) * kThreads), "cudaMalloc")) return 2;
    double wide = 0, narrow = 0;
    if (!measure<true>(sms, khz * 1e3, seconds, d_out, blocks, wide) ||
        !measure<false>(sms, khz * 1e3, seconds, d_out, blocks, narrow))
        return 2;
    std::printf("sm_%d%d, %d SMs, clock %.0f MHz (reported), %d chains per thread, %d blocks of %d\n", major, minor, sms,
                khz / 1e3, kChains, blocks, kThreads);
    std::printf("IMAD.WIDE.U32 warp-instructions per SM per clock: %.2f\n", wide);
    std::printf("IMAD (32-bit)  warp-instructions per SM per clock: %.2f\n", narrow);
    std::printf("IMAD.WIDE: %s (full rate predicts ~1.1 for this loop, half rate ~0.7; IMAD ~2.0)\n",
                wide >= 0.95 ? "FULL rate" : wide <= 0.8 ? "HALF rate" : "between the two predictions");
    cudaFree(d_out);
    return 0;
}
