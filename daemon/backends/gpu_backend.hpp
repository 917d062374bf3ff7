// SPDX-License-Identifier: MIT
// The GPU backend: CUDA verification on one device (kernels/gpu_verifier.hpp).
//
// GpuBackend::open_all opens every selected device, one GpuBackend each
// (streams, G table, buffers: all allocated once, here), and runs its
// known-answer self-test; a device that fails is left out and reported. Each
// is wrapped in its own CheckedBackend (its verdicts are never trusted
// unchecked, and a GPU that lies is switched off alone), and the daemon
// stripes chunks over them with a StripedBackend (daemon/backends/striped_backend.hpp).
// Like every backend it only turns records into verdict bytes; it never
// writes client memory. It reads packed rows in place from the client's
// segment (pinned with the driver: no host copy, one DMA); its CheckedBackend
// judges any disagreement on a private copy, since the client may rewrite them.
// A device has `chunks_in_flight` slots: a DeviceVerifier with its own
// stream and buffers. Workers map onto slots round-robin (worker w: slot
// w % slots), so that many chunks run on one GPU at once — one 100k-row chunk
// fills only part of a big GPU — while the workers waiting for a slot do
// their cross-checks meanwhile. Pieces that arrive while a slot is busy are
// merged into its next launch (LaunchCoalescer), so many small chunks of
// several clients make one large launch instead of a queue of small ones.
//
// The lane slot: one more slot per device, its own DeviceVerifier (stream and
// buffers), used only by the scheduler's lane workers (set_lane_workers;
// daemon/schedule/scheduler.hpp "Lane workers"), never by a bulk worker. So a node's
// 1-row or block-sized batch is launched at once, not after the bulk launch
// running on a shared slot and then merged into the next one (a launch of
// two merged chunks is ~24 ms in the sleeping GPU's model of an H200; a block
// waited 13x its time alone there, BENCHMARKS.md §13). Its kernel still
// shares the device's SMs with the bulk launches running: its stream has
// the device's greatest priority (gpu::Options::high_priority,
// cudaStreamCreateWithPriority), so its blocks take SMs as the running
// kernels' blocks retire (one row per thread: a block lives about one wave,
// estimated ~3 ms on an H200 with ~65k rows resident at 25 M rows/s) rather
// than after the bulk kernels' blocks still queued. (Not yet measured on a
// device: the sleeping GPU models it as a 3 ms wait.)
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/backends/backend.hpp"
#include "daemon/backends/launch_coalescer.hpp"
#include "kernels/gpu_verifier.hpp"
#include "kernels/host_ranges.hpp"

namespace sigverify::daemon {

struct GpuDeviceReport {
    gpu::DeviceInfo info;
    bool usable = false;
    // The build has no machine code for it (gpu::Code::no_kernel_image):
    // self_test is then that report, with the rebuild command.
    bool no_kernel_image = false;
    std::string self_test;  // "passed" (and which slots were left out), or why the device is not used
};

// What became of one device's slots at start-up, and the rule for using it
// (its one home): a wrong verdict on a slot's known-answer self-test leaves
// the whole device out; a slot that cannot be opened for any other reason
// (device memory, a stream) is left out alone, as long as one bulk slot
// opened. Without its lane slot the device still serves: the lane workers
// share the bulk slots (GpuBackend::slot_for), as before the lane slot.
struct DeviceSlots {
    std::size_t bulk_wanted = 0;
    std::size_t bulk_opened = 0;
    bool lane_opened = false;
    bool wrong_verdict = false;  // a slot failed its self-test (gpu::Code::self_test_failed)
    gpu::Status failure;         // the first slot that did not open, if any
    bool usable() const { return !wrong_verdict && bulk_opened > 0; }
    // "passed", "passed; left out: ..." or why the device is not used.
    std::string report() const;
};

class GpuBackend final : public Backend {
public:
    // Opens the devices named by spec ("all" or "0,1"), one backend per
    // device that passes its self-test, in the order of reports' usable
    // entries. Empty with error set when none is usable; reports lists every
    // device tried and what became of it. Every backend accepts the same
    // workers: at least `workers`, and two per slot of all the devices.
    // wait_floor_s: the floor of the deadline of every wait on a device at
    // start-up (gpu::Options::wait_floor_s); once a slot passed its self-test
    // its own waits get twice that and a second, a backstop behind the
    // daemon's deadline on each call (DeadlineBackend), so that a hung
    // launch's thread comes back too.
    static std::vector<std::unique_ptr<GpuBackend>> open_all(const std::string& spec, unsigned workers,
                                                             std::size_t chunk_rows, unsigned chunks_in_flight,
                                                             double wait_floor_s,
                                                             std::vector<GpuDeviceReport>& reports,
                                                             std::string& error);
    ~GpuBackend() override;

    std::string name() const override { return "gpu" + std::to_string(device_); }
    unsigned concurrency() const override { return workers_; }
    std::size_t preferred_chunk_rows() const override { return chunk_rows_; }
    ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override;
    // Rows straight from the client's segment, pinned with the driver while
    // the session lasts, so a chunk's only copy is the DMA to the device.
    bool verifies_in_place() const override { return true; }
    bool map_client_memory(const void* base, std::size_t bytes) noexcept override;
    void unmap_client_memory(const void* base) noexcept override;
    // Workers from `first` on launch on the lane slot (see the top of this file).
    void set_lane_workers(unsigned first) override { lane_first_ = first; }

private:
    struct Slot {
        std::unique_ptr<gpu::DeviceVerifier> verifier;
        std::mutex mutex;  // one launch at a time per slot
        // Joins the pieces of the workers waiting for this slot into one launch.
        std::unique_ptr<LaunchCoalescer> coalescer;
    };
    GpuBackend() = default;
    // A slot of its own verifier (self-tested) and coalescer; null with st set on failure.
    static std::unique_ptr<Slot> open_slot(const gpu::Options& options, std::size_t chunk_rows, gpu::Status& st);
    static constexpr double backstop_floor(double floor_s) { return 2 * floor_s + 1; }
    // The slot worker launches on: the lane slot for a lane worker, else w % slots.
    Slot& slot_for(unsigned worker) const;

    std::vector<std::unique_ptr<Slot>> slots_;  // bulk slots (--gpu-chunks-in-flight)
    std::unique_ptr<Slot> lane_slot_;          // the lane workers' (see the top of this file)
    unsigned lane_first_ = ~0u;                // first lane worker; none until set_lane_workers
    int device_ = 0;  // CUDA device index
    unsigned workers_ = 1;
    std::size_t chunk_rows_ = 0;
    gpu::HostRanges pinned_;  // the client segments this backend pinned
};

}  // namespace sigverify::daemon
