// SPDX-License-Identifier: MIT
// CUDA backend: the verification kernel (one thread per row, the portable
// kernel math of verify32.hpp) and the host side that feeds it. Discovery,
// the pinned client memory and the hung-device record are gpu_devices.cu's.
//
// Per device, allocated once at open(): the G tables (uploaded once), and per
// stream a pinned staging buffer for rows, a device row buffer, a device
// verdict buffer, a pinned verdict buffer and CUDA events. verify() splits a
// span into chunks of Options::chunk_bytes and rotates them over the streams:
// while one chunk's copy-in / kernel / copy-out runs on its stream, the host
// stages the next chunk into another stream's buffer (or, for rows in pinned
// client memory, pin_host_memory, copies nothing on the host) and publishes
// the verdicts of finished chunks (the one publish rule, verdict_publish.hpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kernels/gpu_cuda_support.hpp"
#include "kernels/gpu_verifier.hpp"
#include "kernels/kernel_math.hpp"
#include "kernels/variants.hpp"
#include "kernels/verify32.hpp"
#include "shm_protocol/verdict_publish.hpp"

namespace sigverify::gpu {

namespace k = sigverify::kernels;

constexpr int kMaxThreadsPerBlock = 256;

// The kernel (kernels/verify32.hpp): one row per thread, one control flow for
// every lane, state in registers, the row's P table, recoded scalars and zg
// powers in a scratch laid out per warp ([warp][word][lane]: bank-conflict
// free in shared memory, one 128-byte line per warp-wide word in global
// memory), each region in shared or global memory as the architecture's
// placement says (scratch32.hpp); the global part is `scratch`, its words per
// thread of the launch. Verdicts are 0, 1 or kVerdictRecheck (the host
// resolves those with the exact path); a BIP-340 row may answer
// kVerdictParity, which parity_kernel, launched after it, replaces.
constexpr int kRowsPerThread = 1;
// The register budget, per architecture: R resident threads per SM leave
// 65,536 / R registers a thread (ptxas allocates them in units of 8). sm_80
// to sm_90 run 16 warps (512 threads: 128 registers), the others 12 (384:
// 168): at 128 the Blackwell builds (sm_100, sm_120) spill ~200-600 B. sm_90
// ran 12 until the batch inversion of s and the two-group P table build
// brought it under 128 registers with no spill; the `w12` gpu-check variant keeps the 12-warp
// bound to measure which wins on an H200. 0 stack and 0 spills at these
// bounds on every architecture (scripts/kernel-metrics.sh checks it, CI
// refuses anything else). The bound names the threads of one SM
// (one block of them, or several of 128) so that blocks of up to
// kMaxThreadsPerBlock still launch; it may
// depend on __CUDA_ARCH__ (the host pass sees the default, and the runtime
// reports the machine code's own limits). SV_RESIDENT_THREADS overrides it,
// SV_MAX_REGS caps registers instead and SV_UNCAPPED_REGS leaves them to ptxas
// (gpu-check variants; the macros are in variants.hpp).
static_assert(SV_KERNEL_RESIDENT_THREADS >= kMaxThreadsPerBlock, "the bound must admit every block size the options allow");

// The scratch's shape, shared words | global words << 16 per thread: the host
// passes what it sized the launch for and the kernel compares it with its own
// placement; a mismatch (which would be a host bug) sends every row to the
// exact path (kVerdictRecheck), never out of bounds or to a verdict.
__host__ __device__ constexpr std::uint32_t scratch_shape(k::ScratchPlacement p) {
    return std::uint32_t(k::shared_words_per_thread(p)) | std::uint32_t(k::global_words_per_thread(p)) << 16;
}

// Whether BIP-340's parity step runs in parity_kernel or in the row:
// k::parity_kernel_runs (verify32.hpp, tested on the host).
using k::parity_kernel_runs;

__global__ void SV_KERNEL_BOUNDS
    verify_kernel(const std::uint8_t* __restrict__ rows, std::uint32_t stride, std::uint32_t count,
                  int schnorr, int compact, const k::GeStorage* __restrict__ table,
                  std::uint32_t* __restrict__ scratch, std::uint32_t shape, std::uint8_t* __restrict__ verdicts) {
#if defined(__CUDA_ARCH__)
    constexpr k::ScratchPlacement place = k::scratch_placement(__CUDA_ARCH__);
#else
    constexpr k::ScratchPlacement place = k::scratch_placement(0);
#endif
    extern __shared__ std::uint32_t shared_memory[];
    // one row per thread (the launch covers every row): nothing but the
    // kernel parameters is live across the calls of the row's verification
    // (an ECDSA row's 1/s waits in its scratch)
    const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
    if (shape != scratch_shape(place)) {  // the same in every thread: no barrier is skipped
        if (i < count) verdicts[i] = k::kVerdictRecheck;
        return;
    }
    const bool live = i < count;
    // (the row's address is computed where it is used: not live across the
    // inversion's calls)
    auto record = [&] { return rows + std::uint64_t(i) * stride; };
    // ECDSA: the block's s values share one inversion (batch_inverse32.hpp).
    // The tree lies over the block's shared scratch, which no thread uses
    // before the inversion has returned; every thread of the block takes
    // part (schnorr is the same in all of them), a thread past the last row
    // with the value 1.
    static_assert(k::shared_words_per_thread(place) >= 32, "the tree's 16 L words (L < 2 B) must fit");
    k::Sc sinv = k::sc_one();
    if (!schnorr) {
        const k::ScTree tree{shared_memory, k::sc_tree_leaves(blockDim.x)};
        k::batch_inverse(
            k::DeviceBlock{}, tree,
            [&](std::uint32_t) { return live ? k::ecdsa_batch_value32(record(), compact != 0) : k::sc_one(); },
            [&](std::uint32_t, const k::Sc& v) { sinv = v; });
    }
    if (!live) return;
    // (the memory of each region is a constant of the placement: each pointer
    // is one of shared or global memory, known to the compiler)
    constexpr k::ScratchRegion kTable = k::ScratchRegion::p_table, kStreams = k::ScratchRegion::streams,
                               kZg = k::ScratchRegion::zg;
    constexpr bool table_shared = k::region_in_shared(place, kTable), streams_shared = k::region_in_shared(place, kStreams),
                   zg_shared = k::region_in_shared(place, kZg);
    std::uint32_t* const in_sh = shared_memory + k::shared_warp_start(place, threadIdx.x) + threadIdx.x % k::kScratchLanes;
    std::uint32_t* const in_gl = scratch + k::global_warp_start(place, i) + i % k::kScratchLanes;
    auto region = [&](k::ScratchRegion r, bool in_shared) {
        return (in_shared ? in_sh : in_gl) + k::kScratchLanes * k::region_start(place, r);
    };
    const k::PTable32 ptab{region(kTable, table_shared), region(kStreams, streams_shared), region(kZg, zg_shared)};
    const k::GTable32 gtab{table};
    if (!schnorr) ptab.store_sinv(k::ecdsa_checked_inverse32(record(), compact != 0, sinv));  // 0 if wrong
    // a BIP-340 row that needs y's parity parks R's Y and Z in its first
    // global words (dead once the ladder is done) for parity_kernel, where
    // the block's rows share one inversion of Z; a placement without that
    // much global scratch inverts in the row
    verdicts[i] = k::verify_row32<parity_kernel_runs(place)>(record(), schnorr != 0, compact != 0, ptab, gtab, in_gl);
}

// The BIP-340 parity step, launched after verify_kernel on the same stream
// over the same rows, scratch and block size: the rows that answered
// kVerdictParity put their parked Z into one inversion for the block
// (batch_inverse32.hpp, over tree_words: sc_tree_words(blockDim.x) of
// dynamic shared memory) and replace kVerdictParity by their verdict. Every
// other verdict stays as it is.
__global__ void __launch_bounds__(kMaxThreadsPerBlock)
    parity_kernel(const std::uint32_t* __restrict__ scratch, std::uint32_t shape, std::uint32_t count,
                  std::uint8_t* __restrict__ verdicts) {
#if defined(__CUDA_ARCH__)
    constexpr k::ScratchPlacement place = k::scratch_placement(__CUDA_ARCH__);
#else
    constexpr k::ScratchPlacement place = k::scratch_placement(0);
#endif
    if constexpr (!parity_kernel_runs(place)) {
        return;  // verify_kernel finished every row itself
    } else {
        extern __shared__ std::uint32_t tree_words[];
        const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
        if (shape != scratch_shape(place)) return;  // the same in every thread; verify_kernel answered recheck
        const bool waits = i < count && verdicts[i] == k::kVerdictParity;
        const std::uint32_t* const park = scratch + k::global_warp_start(place, i) + i % k::kScratchLanes;
        k::parity_block32(
            k::DeviceBlock{}, tree_words, [&](std::uint32_t) { return waits; },
            [&](std::uint32_t, k::Fe32& y, k::Fe32& z) { k::parity_unpark32(park, y, z); },
            [&](std::uint32_t, k::u8 v) { verdicts[i] = v; });
    }
}
std::vector<k::GeStorage> device_g_tables() { return k::build_g_tables32(); }

using namespace cuda_support;

struct DeviceVerifier::Impl {
    DeviceInfo info;
    Options options;
    k::GeStorage* d_table = nullptr;
    struct Lane {
        cudaStream_t stream = nullptr;
        std::uint8_t* h_rows = nullptr;  // pinned
        std::uint8_t* d_rows = nullptr;
        std::uint8_t* d_verdicts = nullptr;
        std::uint32_t* d_scratch = nullptr;  // the global scratch of one launch (scratch_bytes_per_row a row)
        std::uint8_t* h_verdicts = nullptr;  // pinned
        cudaEvent_t k_start = nullptr, k_stop = nullptr, done = nullptr;
        // chunk in flight
        bool busy = false;
        std::size_t first = 0, count = 0;
        std::chrono::steady_clock::time_point queued;  // when its copies and kernels were queued
    };
    std::vector<Lane> lanes;
    std::size_t max_rows_per_chunk = 0;
    Timing timing;
    int launch_tpb = 0;      // threads per block of a full launch (choose_launch)
    // The scratch of the kernel's machine code for this device (choose_launch).
    std::size_t shared_bytes_per_thread = 0, scratch_bytes_per_row = 0;
    std::uint32_t shape = 0;
    int resident_warps = 0;  // warps per SM at launch_tpb (0: unknown)
    std::size_t launch_rows = 0;  // rows of one kernel launch at most (the scratch holds that many)
    double slowest_rows_per_s = 0;  // of the waits that finished (0: none yet; wait_deadline_s)

    ~Impl() {
        if (device_hung(info.index)) return;  // nothing on it may be waited for: its memory stays until exit
        cudaSetDevice(info.index);
        for (auto& l : lanes) {
            if (l.stream) cudaStreamSynchronize(l.stream);
            if (l.h_rows) cudaFreeHost(l.h_rows);
            if (l.h_verdicts) cudaFreeHost(l.h_verdicts);
            if (l.d_rows) cudaFree(l.d_rows);
            if (l.d_verdicts) cudaFree(l.d_verdicts);
            if (l.d_scratch) cudaFree(l.d_scratch);
            if (l.k_start) cudaEventDestroy(l.k_start);
            if (l.k_stop) cudaEventDestroy(l.k_stop);
            if (l.done) cudaEventDestroy(l.done);
            if (l.stream) cudaStreamDestroy(l.stream);
        }
        if (d_table) cudaFree(d_table);
    }

    Status init() {
        SV_CUDA(cudaSetDevice(info.index));
        const std::vector<k::GeStorage> table = device_g_tables();
        if (const Status st = choose_launch(); !st.ok()) return st;
        SV_CUDA(cudaMalloc(&d_table, table.size() * sizeof(k::GeStorage)));
        // a chunk of the smallest records holds the most rows
        max_rows_per_chunk = options.chunk_bytes / wire::kSchnorrRecordSize;
        // One launch covers at most four waves of resident threads, so the
        // global scratch (the P table, 512 B a row by default) stays small
        // (H200 at 16 warps: 270,336 rows, 132 MiB a lane) whatever the chunk
        // size; a larger chunk runs as several launches on its stream, one
        // after the other.
        const std::size_t waves = std::size_t(info.sm_count) * std::size_t(resident_warps > 0 ? resident_warps : 8) * 32 * 4;
        launch_rows = std::min(max_rows_per_chunk, waves);
        lanes.resize(static_cast<std::size_t>(options.streams));
        int least_priority = 0, greatest_priority = 0;  // greatest is numerically lowest
        SV_CUDA(cudaDeviceGetStreamPriorityRange(&least_priority, &greatest_priority));
        const int priority = options.high_priority ? greatest_priority : least_priority;
        for (auto& l : lanes) {
            SV_CUDA(cudaStreamCreateWithPriority(&l.stream, cudaStreamNonBlocking, priority));
            SV_CUDA(cudaMallocHost(&l.h_rows, options.chunk_bytes));
            SV_CUDA(cudaMalloc(&l.d_rows, options.chunk_bytes));
            SV_CUDA(cudaMalloc(&l.d_verdicts, max_rows_per_chunk));
            // whole warps: the last one's columns lie past the last row
            if (scratch_bytes_per_row != 0)
                SV_CUDA(cudaMalloc(&l.d_scratch, (launch_rows + 31) / 32 * 32 * scratch_bytes_per_row));
            SV_CUDA(cudaMallocHost(&l.h_verdicts, max_rows_per_chunk));
            SV_CUDA(cudaEventCreate(&l.k_start));
            SV_CUDA(cudaEventCreate(&l.k_stop));
            SV_CUDA(cudaEventCreateWithFlags(&l.done, cudaEventDisableTiming));
        }
        // The G tables, on the first stream, waited for with a deadline (the
        // device's first work: a hung one is found here).
        Lane& first = lanes.front();
        SV_CUDA(cudaMemcpyAsync(d_table, table.data(), table.size() * sizeof(k::GeStorage), cudaMemcpyHostToDevice,
                                first.stream));
        return wait_queued(first, 0, "the G tables' upload");
    }

    // Waits for the lane's queued work (its `done` event) until the deadline
    // of `rows` rows from when it was queued (l.queued), polling: first with
    // yields, as cudaEventSynchronize spins, then in 100 us sleeps. Past the
    // deadline: Code::timeout, and the device is marked hung.
    Status wait_done(Lane& l, std::size_t rows, const char* what) {
        using clock = std::chrono::steady_clock;
        const double budget = wait_deadline_s(rows, slowest_rows_per_s, options.wait_floor_s);
        const auto deadline = l.queued + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(budget));
        for (;;) {
            if (device_hung(info.index))
                return Status{Code::timeout, "GPU " + std::to_string(info.index) + " is hung (an earlier wait timed out)"};
            const cudaError_t e = cudaEventQuery(l.done);
            const auto now = clock::now();
            if (e == cudaSuccess) {
                const double took = std::chrono::duration<double>(now - l.queued).count();
                if (rows >= 1024 && took > 0) {  // a rate from a launch large enough to mean one
                    const double rate = double(rows) / took;
                    if (slowest_rows_per_s == 0 || rate < slowest_rows_per_s) slowest_rows_per_s = rate;
                }
                return Status::success();
            }
            if (e != cudaErrorNotReady) return cuda_status(e, what);
            if (now >= deadline) {
                mark_hung(info.index);
                return Status{Code::timeout,
                              "GPU " + std::to_string(info.index) + ": " + what + " of " + std::to_string(rows) +
                                  " rows did not finish in " + std::to_string(budget) + " s (floor " +
                                  std::to_string(options.wait_floor_s) + " s): the device is taken for hung"};
            }
            if (now - l.queued < std::chrono::milliseconds(2)) std::this_thread::yield();
            else std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
    }
    // Records the lane's `done` event after what is queued on its stream and waits for it.
    Status wait_queued(Lane& l, std::size_t rows, const char* what) {
        l.queued = std::chrono::steady_clock::now();
        SV_CUDA(cudaEventRecord(l.done, l.stream));
        return wait_done(l, rows, what);
    }

    // The launch follows the device's limits. The scratch's placement is the
    // one the kernel's code was compiled with: __CUDA_ARCH__ of the PTX it
    // came from (machine code for this SM, or PTX JIT-compiled for it), which
    // the runtime reports as ptxVersion (major * 10 + minor). Shared memory
    // per block differs by GPU (64 KiB on Turing, 99 KiB on RTX 30/40/50, 227
    // KiB on Hopper): at most that many threads per block (and at most
    // options.threads_per_block), and of those block sizes the one that keeps
    // the most warps resident on an SM, as the runtime computes it from this
    // kernel's registers and shared memory (ties: the larger block).
    Status choose_launch() {
        cudaFuncAttributes attr{};
        SV_CUDA(cudaFuncGetAttributes(&attr, verify_kernel));
        const k::ScratchPlacement place = k::scratch_placement(attr.ptxVersion * 10);
        shared_bytes_per_thread = std::size_t(k::shared_words_per_thread(place)) * sizeof(std::uint32_t);
        scratch_bytes_per_row = std::size_t(k::global_words_per_thread(place)) * sizeof(std::uint32_t);
        shape = scratch_shape(place);
        launch_tpb = options.threads_per_block;
        int optin = 0;
        SV_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, info.index));
        const int fit = shared_bytes_per_thread == 0 ? kMaxThreadsPerBlock
                                                     : int(std::size_t(optin) / shared_bytes_per_thread) / 32 * 32;
        const int cap = fit < options.threads_per_block ? fit : options.threads_per_block;
        if (cap < 32)
            return Status{Code::cuda_error, "device allows " + std::to_string(optin) +
                                                " B of shared memory per block, one warp needs " +
                                                std::to_string(32 * shared_bytes_per_thread)};
        SV_CUDA(cudaFuncSetAttribute(verify_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(shared_bytes_per_thread * std::size_t(cap))));
        int best = -1;
        for (int tpb = cap; tpb >= 32; tpb -= 32) {
            int blocks = 0;
            SV_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, verify_kernel, tpb,
                                                                  shared_bytes_per_thread * std::size_t(tpb)));
            if (blocks * (tpb / 32) > best) {
                best = blocks * (tpb / 32);
                launch_tpb = tpb;
            }
        }
        if (best <= 0) return Status{Code::cuda_error, "the verify kernel cannot be resident on this device"};
        resident_warps = best;
        return Status::success();
    }

    // The kernel over n rows in the lane's device buffer: launches of at most
    // launch_rows rows (the scratch's size), one after the other on the
    // lane's stream, so they never share the scratch.
    Status launch(Lane& l, std::size_t n, const wire::RowSpan& rows) {
        const std::size_t stride = rows.row_stride();
        for (std::size_t first = 0; first < n; first += launch_rows) {
            const std::size_t m = std::min(launch_rows, n - first);
            const int tpb = spread_threads_per_block(m, launch_tpb, info.sm_count, kRowsPerThread);
            const std::size_t per_block = std::size_t(tpb) * kRowsPerThread;
            const unsigned blocks = static_cast<unsigned>((m + per_block - 1) / per_block);
            verify_kernel<<<blocks, tpb, shared_bytes_per_thread * std::size_t(tpb), l.stream>>>(
                l.d_rows + first * stride, static_cast<std::uint32_t>(stride), static_cast<std::uint32_t>(m),
                rows.kind == wire::RecordKind::schnorr ? 1 : 0,
                rows.encoding == wire::SigEncoding::compact ? 1 : 0, d_table, l.d_scratch, shape,
                l.d_verdicts + first);
            SV_CUDA(cudaGetLastError());
            if (rows.kind == wire::RecordKind::schnorr) {  // after it, on the same stream and scratch
                parity_kernel<<<blocks, tpb, std::size_t(k::sc_tree_words(std::uint32_t(tpb))) * sizeof(std::uint32_t),
                                l.stream>>>(l.d_scratch, shape, static_cast<std::uint32_t>(m), l.d_verdicts + first);
                SV_CUDA(cudaGetLastError());
            }
        }
        return Status::success();
    }

    // Waits for the lane's chunk and scatters its verdicts.
    Status finish(Lane& l, const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results, Counts& c) {
        if (!l.busy) return Status::success();
        l.busy = false;
        if (Status st = wait_done(l, l.count, "a chunk's copies and kernels"); !st.ok()) return st;
        float ms = 0;
        SV_CUDA(cudaEventElapsedTime(&ms, l.k_start, l.k_stop));
        timing.kernel_ms += ms;
        const wire::TailSpan tails = wire::row_tails(rows);
        for (std::size_t i = 0; i < l.count; ++i) {
            const std::uint8_t verdict = l.h_verdicts[i];
            if (verdict > k::kVerdictValid) ++timing.rechecked;  // a special case of the uniform ladder
            const bool ok = k::resolve_verdict32(verdict, rows.row(l.first + i), rows.kind, rows.encoding);
            if (ok) {
                ++c.valid;
            } else {
                ++c.invalid;
            }
            wire::publish_verdict(mode, tails, results, l.first + i, ok);
        }
        return Status::success();
    }

    Status run(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results, Counts& c) {
        SV_CUDA(cudaSetDevice(info.index));
        const std::size_t stride = rows.row_stride();
        const std::size_t per_chunk = options.chunk_bytes / stride;
        const std::size_t chunks = (rows.count + per_chunk - 1) / per_chunk;
        std::size_t next_finish = 0;  // chunks finish in submission order
        for (std::size_t ch = 0; ch < chunks; ++ch) {
            Lane& l = lanes[ch % lanes.size()];
            if (l.busy) {
                Status st = finish(lanes[next_finish % lanes.size()], rows, mode, results, c);
                ++next_finish;
                if (!st.ok()) return st;
            }
            l.first = ch * per_chunk;
            l.count = std::min(per_chunk, rows.count - l.first);
            const std::size_t bytes = l.count * stride;
            const std::uint8_t* from = rows.row(l.first);
            l.queued = std::chrono::steady_clock::now();
            if (pinned_ranges().contains(from, bytes)) {
                timing.bytes_direct += bytes;  // one DMA from the client's pinned segment
            } else {
                std::memcpy(l.h_rows, from, bytes);
                from = l.h_rows;
                timing.bytes_staged += bytes;
            }
            SV_CUDA(cudaMemcpyAsync(l.d_rows, from, bytes, cudaMemcpyHostToDevice, l.stream));
            SV_CUDA(cudaEventRecord(l.k_start, l.stream));
            Status st = launch(l, l.count, rows);
            if (!st.ok()) return st;
            SV_CUDA(cudaEventRecord(l.k_stop, l.stream));
            SV_CUDA(cudaMemcpyAsync(l.h_verdicts, l.d_verdicts, l.count, cudaMemcpyDeviceToHost, l.stream));
            SV_CUDA(cudaEventRecord(l.done, l.stream));
            l.busy = true;
            ++timing.chunks;
        }
        for (; next_finish < chunks; ++next_finish) {
            Status st = finish(lanes[next_finish % lanes.size()], rows, mode, results, c);
            if (!st.ok()) return st;
        }
        return Status::success();
    }
};

DeviceVerifier::DeviceVerifier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeviceVerifier::~DeviceVerifier() = default;

std::unique_ptr<DeviceVerifier> DeviceVerifier::open(const Options& options, Status& status) {
    const Discovery disc = discover();
    const DeviceInfo* found = nullptr;
    for (const auto& d : disc.devices)
        if (d.index == options.device) found = &d;
    if (!found) {
        status = Status{Code::no_device, disc.error.empty() ? "GPU " + std::to_string(options.device) + " not present"
                                                            : disc.error};
        return nullptr;
    }
    if (options.streams < 1 || options.threads_per_block < 32 || options.threads_per_block > kMaxThreadsPerBlock ||
        options.threads_per_block % 32 != 0 || options.chunk_bytes < wire::stride(wire::RecordKind::ecdsa, wire::kMaxTailSize) ||
        options.chunk_bytes > (std::size_t(1) << 34)) {
        status = Status{Code::bad_input, "bad GPU options (streams >= 1, threads_per_block a multiple of 32 "
                                         "in [32, 256], chunk_bytes from one row to 16 GiB)"};
        return nullptr;
    }
    if (!(options.wait_floor_s > 0)) {
        status = Status{Code::bad_input, "bad GPU options (wait_floor_s > 0)"};
        return nullptr;
    }
    if (device_hung(found->index)) {
        status = Status{Code::timeout, "GPU " + std::to_string(found->index) + " is hung (an earlier wait timed out)"};
        return nullptr;
    }
    // No image for this GPU: said as exactly that, before the runtime's
    // error (which reads like any other failure) would say it.
    if (kernel_image_for(found->cc_major, found->cc_minor, built_architectures()) == ImageFit::none) {
        status = Status{Code::no_kernel_image, no_kernel_image_message(*found, built_architectures())};
        return nullptr;
    }
    auto impl = std::make_unique<Impl>();
    impl->info = *found;
    impl->options = options;
    status = impl->init();
    if (status.code == Code::no_kernel_image)  // the runtime found none the list did not foresee
        status.message = no_kernel_image_message(*found, built_architectures()) + " [" + status.message + "]";
    if (!status.ok()) return nullptr;
    return std::unique_ptr<DeviceVerifier>(new DeviceVerifier(std::move(impl)));
}

const DeviceInfo& DeviceVerifier::info() const { return impl_->info; }
const Options& DeviceVerifier::options() const { return impl_->options; }
void DeviceVerifier::set_wait_floor(double seconds) {
    if (seconds > 0) impl_->options.wait_floor_s = seconds;
}
Timing DeviceVerifier::last_timing() const { return impl_->timing; }
LaunchShape DeviceVerifier::launch_shape() const { return LaunchShape{impl_->launch_tpb, impl_->resident_warps}; }

Status DeviceVerifier::verify(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results, Counts* counts) {
    const auto t0 = std::chrono::steady_clock::now();
    impl_->timing = Timing{};
    if (counts) *counts = Counts{};
    if (!rows.valid()) return Status{Code::bad_input, "invalid row span"};
    if (mode == wire::Mode::results && rows.count != 0 && results == nullptr)
        return Status{Code::bad_input, "results mode needs a results buffer"};
    if (device_hung(impl_->info.index))
        return Status{Code::timeout, "GPU " + std::to_string(impl_->info.index) + " is hung (an earlier wait timed out)"};
    if (mode == wire::Mode::results && rows.count != 0) std::memset(results, 0, rows.count);
    Counts c;
    Status st = rows.count == 0 ? Status::success() : impl_->run(rows, mode, results, c);
    if (!st.ok()) {
        // fail closed: no verdict of this call is returned
        if (mode == wire::Mode::results && rows.count != 0) std::memset(results, 0, rows.count);
        // let queued copies finish before the staging buffers are reused
        // (not on a hung device: it never frees them, and nothing reuses them)
        for (auto& l : impl_->lanes) {
            if (l.stream && !device_hung(impl_->info.index)) cudaStreamSynchronize(l.stream);
            l.busy = false;
        }
        return st;
    }
    if (counts) *counts = c;
    impl_->timing.wall_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return st;
}

Status DeviceVerifier::benchmark_kernel(const wire::RowSpan& rows, int repeats, double& rows_per_s) {
    rows_per_s = 0;
    if (!rows.valid() || rows.count == 0 || repeats < 1) return Status{Code::bad_input, "nothing to benchmark"};
    Impl& m = *impl_;
    if (device_hung(m.info.index)) return Status{Code::timeout, "GPU " + std::to_string(m.info.index) + " is hung"};
    SV_CUDA(cudaSetDevice(m.info.index));
    Impl::Lane& l = m.lanes[0];
    const std::size_t n = std::min(rows.count, m.options.chunk_bytes / rows.row_stride());
    SV_CUDA(cudaMemcpyAsync(l.d_rows, rows.data, n * rows.row_stride(), cudaMemcpyHostToDevice, l.stream));
    Status st = m.launch(l, n, rows);  // warm-up
    if (!st.ok()) return st;
    if (st = m.wait_queued(l, n, "the benchmark's warm-up launch"); !st.ok()) return st;
    l.queued = std::chrono::steady_clock::now();
    SV_CUDA(cudaEventRecord(l.k_start, l.stream));
    for (int r = 0; r < repeats; ++r) {
        st = m.launch(l, n, rows);
        if (!st.ok()) return st;
    }
    SV_CUDA(cudaEventRecord(l.k_stop, l.stream));
    SV_CUDA(cudaEventRecord(l.done, l.stream));
    if (st = m.wait_done(l, n * std::size_t(repeats), "the benchmark's launches"); !st.ok()) return st;
    float ms = 0;
    SV_CUDA(cudaEventElapsedTime(&ms, l.k_start, l.k_stop));
    if (ms > 0) rows_per_s = double(n) * repeats / (double(ms) / 1000.0);
    return Status::success();
}

}  // namespace sigverify::gpu
