// SPDX-License-Identifier: MIT
// Host API of the CUDA verification backend.
//
// Needs no CUDA header: the device state lives behind a pimpl. The same
// header is served by gpu_verifier.cu (built when SIGVERIFY_HAVE_CUDA is ON)
// and by gpu_verifier_without_cuda.cpp (built otherwise), whose discovery reports "no
// GPU (built without CUDA)", so callers compile and link either way.
//
// Failure model: every CUDA call is checked; any error becomes a Status the
// caller can act on (re-run the batch on the CPU, stop using the device).
// After a cuda_error the verifier should be considered unusable: open a new
// one or fall back for good.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::gpu {

// True when this build contains the CUDA backend.
bool built_with_cuda();

struct DeviceInfo {
    int index = -1;
    std::string name;
    int cc_major = 0;
    int cc_minor = 0;
    int sm_count = 0;
    std::size_t total_memory = 0;
    std::string pci_bus_id;
};

struct Discovery {
    std::vector<DeviceInfo> devices;
    // Why there are no devices ("no GPU (built without CUDA)", the driver's
    // error, ...); empty when discovery worked.
    std::string error;
};

// Lists the GPUs the process can use (all of them, in CUDA index order).
Discovery discover();

// Parses a --gpus style selection against the discovered devices:
// "all" (or "") = every device, otherwise a comma-separated list of indices
// ("0", "0,1"). Duplicates are dropped, order is kept. Returns false with a
// message on a malformed list or an index that is not present.
bool select_devices(std::string_view spec, const std::vector<DeviceInfo>& available,
                    std::vector<int>& chosen, std::string& error);

enum class Code : std::uint8_t {
    ok = 0,
    not_built,         // built without CUDA
    no_device,         // the requested device does not exist
    cuda_error,        // a CUDA call failed (message names the call)
    bad_input,         // an invalid RowSpan or a missing results buffer
    self_test_failed,  // the device gave a wrong verdict on a known answer
    no_kernel_image,   // this build carries no machine code (or PTX) this GPU can run
    timeout,           // a wait on the device passed its deadline: the device is hung, the verifier unusable
};

struct Status {
    Code code = Code::ok;
    std::string message;

    bool ok() const { return code == Code::ok; }
    static Status success() { return {}; }
};

std::string_view to_string(Code code);

// --- The architectures this build carries ---------------------------------
// The CMAKE_CUDA_ARCHITECTURES of the build, comma-separated ("75-real,...,
// 120-virtual"); empty in a build without CUDA.
std::string_view built_architectures();
// "sm_75 sm_80 ... compute_120 (PTX)": what the build carries, for people.
std::string architectures_text(std::string_view architectures);

enum class ImageFit : std::uint8_t {
    machine_code,  // an sm_XY image this GPU runs (same major, minor <= the GPU's)
    ptx_jit,       // only PTX the driver compiles for it at start-up (slower start; not the checked machine code)
    none,          // nothing it can run: "no kernel image"
    unknown,       // the list names something this cannot read (native, all): the runtime will tell
};
// What of `architectures` (built_architectures()'s form) runs on a GPU of
// compute capability major.minor. Pure: tested without a GPU.
ImageFit kernel_image_for(int cc_major, int cc_minor, std::string_view architectures);
// The report of a GPU with no image: what it is, what the build carries, and
// the rebuild command. Starts with "no kernel image for sm_XY in this build"
// (short enough for `sigverify info`'s 48 bytes).
std::string no_kernel_image_message(const DeviceInfo& device, std::string_view architectures);
// The CUDA runtime's error number to a Code: cudaErrorInvalidDeviceFunction
// (98) and cudaErrorNoKernelImageForDevice (209) are no_kernel_image, any
// other failure cuda_error (gpu_verifier.cu asserts the numbers).
Code classify_cuda_error(int cuda_error);
inline constexpr int kCudaErrorInvalidDeviceFunction = 98;
inline constexpr int kCudaErrorNoKernelImageForDevice = 209;

struct Options {
    int device = 0;
    // Bytes of rows per chunk: the size of each stream's pinned staging buffer
    // and device row buffer (allocated once, at open). A chunk holds
    // chunk_bytes / stride rows.
    std::size_t chunk_bytes = std::size_t(64) << 20;
    // Streams the chunks rotate over (>= 2 to overlap copy-in, kernel and
    // copy-out of neighbouring chunks).
    int streams = 3;
    int threads_per_block = 128;
    // Streams at the device's greatest priority (cudaDeviceGetStreamPriorityRange):
    // the block scheduler gives their blocks the SMs that blocks of
    // lower-priority kernels free, so a launch waits about one wave of the
    // kernel running beside it, not for it to end (the daemon's lane slot).
    bool high_priority = false;
    // The floor of every wait's deadline, in seconds (the daemon sets it from
    // --gpu-wait-floor). A wait on the device -- a chunk's copies and
    // kernels, the G tables' upload at open(), the self-test's and the
    // benchmark's launches -- that lasts past wait_deadline_s(its rows, the
    // slowest rate this verifier measured, this floor) fails with
    // Code::timeout: the device is then taken for hung, every verifier of it
    // fails at once from then on, and none frees or synchronizes anything on
    // it again (its memory is the process's until exit).
    double wait_floor_s = 10.0;
};

// The deadline of a wait on rows rows, in seconds: the floor, plus
// kWaitSlack times the time they take at rows_per_s (the slowest rate the
// waiter measured; kWaitPriorRowsPerS before it measured any: slower than
// any GPU the kernel supports, so a first large launch is not cut short).
inline constexpr double kWaitSlack = 4.0;
inline constexpr double kWaitPriorRowsPerS = 1e5;
constexpr double wait_deadline_s(std::size_t rows, double rows_per_s, double floor_s) {
    const double rate = rows_per_s > 0 ? rows_per_s : kWaitPriorRowsPerS;
    return floor_s + kWaitSlack * double(rows) / rate;
}

// Threads per block of a launch of n rows, rows_per_thread each: the
// configured threads_per_block, or for a launch too small to give every SM a
// block, fewer (a multiple of 32, at least 32) so that its blocks spread over
// all sm_count SMs instead of piling onto a few (a 4,096-row block-sized
// batch: 128 blocks of 32 threads on an H200's 132 SMs, not 32 blocks of 128).
constexpr int spread_threads_per_block(std::size_t n, int threads_per_block, int sm_count, int rows_per_thread) {
    if (sm_count <= 0 || rows_per_thread <= 0 || n == 0) return threads_per_block;
    const std::size_t full_blocks = (n + std::size_t(threads_per_block) * rows_per_thread - 1) /
                                    (std::size_t(threads_per_block) * rows_per_thread);
    if (full_blocks >= std::size_t(sm_count)) return threads_per_block;
    const std::size_t threads = (n + std::size_t(rows_per_thread) - 1) / std::size_t(rows_per_thread);
    const std::size_t per_sm = (threads + std::size_t(sm_count) - 1) / std::size_t(sm_count);
    const std::size_t rounded = (per_sm + 31) / 32 * 32;
    return int(rounded < 32 ? 32 : rounded > std::size_t(threads_per_block) ? std::size_t(threads_per_block) : rounded);
}

// Host memory the device verifiers copy rows from without staging them:
// pin_host_memory registers [base, base + bytes) with the CUDA driver for
// every device (cudaHostRegister: portable, and read-only where the driver
// allows), so that a copy from it is one DMA. Pins of one base nest; the
// range is unregistered when unpinned as often. verify() copies rows that lie
// inside a pinned range straight to the device, and any others through its
// pinned staging buffer (one host copy). The memory must stay mapped until
// it is unpinned, and no verify() may read it after.
Status pin_host_memory(const void* base, std::size_t bytes);
void unpin_host_memory(const void* base);

struct Counts {
    std::uint64_t valid = 0;
    std::uint64_t invalid = 0;
};

// Timing of the last verify() call.
struct Timing {
    double wall_ms = 0;    // whole call: staging, copies, kernels, result scatter
    double kernel_ms = 0;  // sum of the kernels' CUDA-event times
    std::size_t chunks = 0;
    // rows the kernel answered kVerdictRecheck (verified on the host by the
    // exact path; none for honest rows)
    std::size_t rechecked = 0;
    // bytes of rows copied to the device straight from pinned host memory,
    // and through the staging buffer (a host copy first)
    std::size_t bytes_direct = 0;
    std::size_t bytes_staged = 0;
};

// How the kernel is launched on this device (chosen at open() from the
// device's shared memory per block and the runtime's occupancy figures).
struct LaunchShape {
    int threads_per_block = 0;    // of a full launch; a small one may spread smaller blocks
    int resident_warps_per_sm = 0;  // theoretical, at that block size (0: not computed)
};

class DeviceVerifier {
public:
    // Opens a device: creates streams, uploads the precomputed G tables,
    // allocates every buffer. Returns null with status set on failure.
    static std::unique_ptr<DeviceVerifier> open(const Options& options, Status& status);
    ~DeviceVerifier();
    DeviceVerifier(const DeviceVerifier&) = delete;
    DeviceVerifier& operator=(const DeviceVerifier&) = delete;

    const DeviceInfo& info() const;
    const Options& options() const;
    // A new Options::wait_floor_s for the waits from now on (> 0).
    void set_wait_floor(double seconds);

    // Known-answer self-test (valid and invalid rows, ECDSA in both encodings
    // and Schnorr, results and collect modes). ok() only when every verdict
    // is right.
    Status self_test();

    // Verifies all rows. Results mode: results[i] = 1/0 for every row (zeroed
    // first: fail closed). Collect mode: the tail_size tail of every valid row
    // is zeroed in place, invalid rows are untouched; results may be null.
    // counts (optional) receives the tally. Large spans are split into
    // chunks pipelined over the streams. On a non-ok status, results (results
    // mode) hold zeros for every row not known valid, and in collect mode rows
    // may already be partly collected: the caller re-runs the batch on the CPU
    // from the original bytes it kept, or treats zeroed tails as final only
    // after ok().
    Status verify(const wire::RowSpan& rows, wire::Mode mode, std::uint8_t* results,
                  Counts* counts = nullptr);

    // Kernel-only timing: uploads the first chunk of rows once, then runs the
    // kernel over it `repeats` times; rows_per_s is measured with CUDA events.
    Status benchmark_kernel(const wire::RowSpan& rows, int repeats, double& rows_per_s);

    Timing last_timing() const;
    LaunchShape launch_shape() const;

private:
    struct Impl;
    explicit DeviceVerifier(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace sigverify::gpu
