// SPDX-License-Identifier: MIT
// What sigverifyd verifies on, set up once at start-up (the server's first
// step): the CPU backend, or the GPUs — each behind its own CheckedBackend,
// all striped, with a CPU fallback for what a GPU refuses and the batch split
// planner (docs/architecture.md, the GPU chain). Then the self-test, before
// READY=1, and the planner's calibration on the GPUs that passed it.
//
// Invariant: once open() returned true the set never changes shape (no
// backend added or removed, gpu_reports fixed), so describe() may be called
// from any thread; each device's state is its own atomics.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "daemon/backends/backend.hpp"
#include "daemon/backends/deadline_backend.hpp"
#include "daemon/serve/daemon_context.hpp"
#include "daemon/backends/gpu_backend.hpp"
#include "daemon/ops/metrics.hpp"
#include "daemon/backends/split_planner.hpp"
#include "daemon/backends/striped_backend.hpp"

namespace sigverify::daemon {

// What stands in GPU `index`'s place under --backend host-kernel, with
// `workers` worker threads. Null with `failure` set: that "GPU" did not open,
// reported as a GPU that did not (e.g. gpu::Code::no_kernel_image). Empty
// (the default): HostKernelBackend.
using HostKernelFactory =
    std::function<std::unique_ptr<Backend>(int index, unsigned workers, gpu::Status& failure)>;

class BackendSet {
public:
    // ctx outlives the set: its config chooses, its log and counters record.
    explicit BackendSet(DaemonContext& ctx) : ctx_(ctx) {}
    BackendSet(const BackendSet&) = delete;
    BackendSet& operator=(const BackendSet&) = delete;

    // Opens what --backend chooses: with a usable GPU (gpu|auto) the GPUs,
    // else the CPU; --backend gpu without a usable GPU fails. host-kernel:
    // the GPU path with `host_kernel` (or the kernels' host twin) in each
    // GPU's place. false: logged, and `failure` is the line for systemd STATUS=
    // (empty when there is none).
    bool open(const HostKernelFactory& host_kernel, std::string& failure);
    // Known answers through the primary backend, then the split planner's
    // calibration. A GPU switched off meanwhile (an error, a wait past its
    // deadline, a wrong verdict its cross-check caught) fails only itself:
    // again on the GPUs still on, and with none left on the CPU, which then
    // serves. false: failed (logged), `failure` for STATUS=.
    bool self_test(std::string& failure);

    Backend& primary() const { return *primary_; }
    Backend* cpu_fallback() const { return cpu_fallback_.get(); }  // with the GPUs only
    SplitPlanner* planner() const { return planner_.get(); }       // with the GPUs and --gpu-split auto
    bool has_gpus() const { return gpus_ != nullptr; }
    // "cpu", "gpu" or "host-kernel" (the info request's backend kind).
    std::string kind() const;
    // "NAME xWORKERS" for the status line.
    std::string summary() const;
    // SIGHUP: the cross-check sampling rates of the config now in force.
    void apply_sampling();
    // Every backend and every GPU tried at start-up, as the stats socket and
    // the info request list them.
    std::vector<BackendInfo> describe() const;

private:
    void use_gpus(std::vector<std::unique_ptr<Backend>> devices, unsigned cpu_threads);
    std::vector<std::unique_ptr<Backend>> open_host_kernel(const HostKernelFactory& host_kernel, unsigned cpu_threads);
    // Logs what became of each GPU tried (a GPU without a kernel image as exactly that).
    void log_reports() const;
    std::size_t gpus_enabled() const;

    DaemonContext& ctx_;
    std::unique_ptr<Backend> primary_;
    std::unique_ptr<Backend> cpu_fallback_;      // with the GPU: re-runs chunks the GPU failed
    StripedBackend* gpus_ = nullptr;            // primary_ when it is the cross-checked GPUs
    std::unique_ptr<SplitPlanner> planner_;     // with the GPUs and --gpu-split auto
    std::vector<GpuDeviceReport> gpu_reports_;  // every GPU tried at start-up
    std::vector<const DeadlineBackend*> deadlines_;  // each striped device's deadline (its timeouts, why it hung)
    std::string self_test_;                      // the primary's self-test result
};

}  // namespace sigverify::daemon
