// SPDX-License-Identifier: MIT
#include "daemon/serve/backend_setup.hpp"

#include <algorithm>
#include <thread>

#include "daemon/backends/checked_backend.hpp"
#include "daemon/backends/host_kernel_backend.hpp"
#include "daemon/backends/lanes_backend.hpp"
#include "daemon/schedule/scheduler.hpp"  // Scheduler::kLaneWorkers
#include "daemon/backends/self_test.hpp"

namespace sigverify::daemon {

// One device behind its own CheckedBackend (and, for a GPU or its host twin,
// a deadline on every call: deadline_backend.hpp; the lanes are CPU code
// with no driver to hang on).
std::unique_ptr<CheckedBackend> BackendSet::checked_device(std::unique_ptr<Backend> device, bool deadline) {
    const Config& cfg = ctx_.config;
    const CrossCheckPolicy policy{cfg.cross_check_sample, cfg.gpu_min_rows, cfg.cross_check_invalid_sample};
    const std::string name = device->name();
    // The host twin verifies on this machine's cores, in its call threads.
    const auto scheduling = dynamic_cast<const HostKernelBackend*>(device.get()) != nullptr
                                ? DeadlineBackend::CallScheduling::callers
                                : DeadlineBackend::CallScheduling::ordinary;
    std::unique_ptr<Backend> inner = std::move(device);
    if (deadline) {
        // A GPU that never answers is left out and its rows go to the CPU.
        auto guarded = std::make_unique<DeadlineBackend>(
            std::move(inner), cfg.gpu_wait_floor_s,
            [this](const std::string& reason) {
                ctx_.metrics.gpu_timeouts.fetch_add(1, std::memory_order_relaxed);
                ctx_.log->error("{}", reason);
            },
            scheduling);
        deadlines_.push_back(guarded.get());
        inner = std::move(guarded);
    } else {
        deadlines_.push_back(nullptr);
    }
    return std::make_unique<CheckedBackend>(
        std::move(inner), cfg.gpu_chunk_rows, policy, [this, name](const std::string& reason) {
            // Runs once per device, in the worker that found the fault, after its counters moved.
            const bool mismatch = reason.find("disagrees") != std::string::npos;
            (mismatch ? ctx_.metrics.gpu_crosscheck_mismatches : ctx_.metrics.gpu_errors)
                .fetch_add(1, std::memory_order_relaxed);
            const bool others = gpus_ != nullptr && gpus_->any_enabled();
            ctx_.log->error("{} switched off, {}: {}", name,
                            others ? "the other GPUs take its share" : "verifying on the CPU from now on", reason);
        });
}

// Puts the GPUs (or their host twins, or the lanes) in place: each behind
// its own CheckedBackend, all striped, with a CPU fallback and (GPUs only)
// the batch split.
void BackendSet::use_gpus(std::vector<std::unique_ptr<Backend>> devices, unsigned cpu_threads, bool cpu_lanes) {
    const Config& cfg = ctx_.config;
    const unsigned workers = devices.front()->concurrency();
    std::vector<std::unique_ptr<CheckedBackend>> checked;
    for (auto& device : devices) checked.push_back(checked_device(std::move(device), !cpu_lanes));
    auto striped = std::make_unique<StripedBackend>(std::move(checked));
    gpus_ = striped.get();
    primary_ = std::move(striped);
    cpu_fallback_ = std::make_unique<CpuBackend>(std::max(workers, cpu_threads));
    // The lanes and libsecp256k1 would split the same cores: no split.
    if (cfg.gpu_split && !cpu_lanes) planner_ = std::make_unique<SplitPlanner>(SplitEstimates{}, cfg.gpu_min_rows);
    if (cpu_lanes) {
        ctx_.log->info("backend {}: {} worker(s), chunks of {} rows, chunks under {} rows on libsecp256k1, "
                       "cross-check: 1 in {} valid verdicts re-verified by libsecp256k1; invalid verdicts: "
                       "confirm rule {} (multisig: those of failing groups and 1 in {} others; other tables: all)",
                       gpus_->name(), workers, gpus_->preferred_chunk_rows(), cfg.gpu_min_rows,
                       cfg.cross_check_sample, to_string(cfg.confirm), cfg.cross_check_invalid_sample);
        return;
    }
    ctx_.log->info("backend {}: {} worker(s) striped over {} GPU(s), chunks of {} rows, {} in flight per GPU, "
                   "chunks under {} rows on the CPU, batch split {}, cross-check: 1 in {} valid verdicts "
                   "re-verified by libsecp256k1; invalid verdicts: confirm rule {} (multisig: those of failing "
                   "groups and 1 in {} others; other tables: all); GPU waits: deadline {} s + {}x rows at the "
                   "slowest measured rate",
                   gpus_->name(), workers, gpus_->devices(), cfg.gpu_chunk_rows, cfg.gpu_chunks_in_flight,
                   cfg.gpu_min_rows, cfg.gpu_split ? "auto" : "off", cfg.cross_check_sample, to_string(cfg.confirm),
                   cfg.cross_check_invalid_sample, cfg.gpu_wait_floor_s, gpu::kWaitSlack);
}

// The lanes at width w, where a GPU would be (lanes_backend.hpp).
void BackendSet::use_lanes(kernels::lanes::Width w, unsigned workers, unsigned cpu_threads) {
    auto device = std::make_unique<LanesBackend>(workers, w);
    lanes_ = device.get();
    ctx_.log->info("backend lanes: {}", lanes_device_text(lanes_->width()));
    std::vector<std::unique_ptr<Backend>> devices;
    devices.push_back(std::move(device));
    use_gpus(std::move(devices), cpu_threads, true);
}

// AUTO without a usable GPU: the lanes when this CPU runs them at a width
// faster than libsecp256k1 (ifma8, or ifma4 where SIGVERIFY_LANES forces it;
// SIGVERIFY_LANES=scalar forces the exact path, which is not) and they passed the self-test on their own; else false
// (the CPU backend).
bool BackendSet::auto_lanes(const std::string& no_gpu, unsigned workers, unsigned cpu_threads) {
    namespace lanes = kernels::lanes;
    auto& log = *ctx_.log;
    const lanes::Width w = lanes::chosen_width();
    if (w == lanes::Width::scalar) {
        log.info("backend auto: no usable GPU ({}), and {}: using the cpu", no_gpu,
                 lanes::cpu_has_ifma8() ? "SIGVERIFY_LANES=scalar leaves the lanes only their scalar width"
                                        : "this CPU has no AVX-512 IFMA for the lanes");
        return false;
    }
    LanesBackend probe(1, w);
    std::string detail;
    if (!backend_self_test(probe, detail)) {
        log.error("backend auto: no usable GPU ({}), and the lanes ({}) failed their self-test: {}; using the cpu",
                  no_gpu, probe.name(), detail);
        return false;
    }
    log.info("backend auto: no usable GPU ({}); the lanes ({}) passed their self-test: using them", no_gpu,
             probe.name());
    use_lanes(w, workers, cpu_threads);
    return true;
}

// One host twin (or the factory's stand-in) per --gpus entry; a stand-in
// that does not open is reported as a GPU that did not.
std::vector<std::unique_ptr<Backend>> BackendSet::open_host_kernel(const HostKernelFactory& host_kernel,
                                                                   unsigned cpu_threads) {
    const Config& cfg = ctx_.config;
    const std::size_t count =
        cfg.gpus == "all" ? 1 : std::size_t(std::count(cfg.gpus.begin(), cfg.gpus.end(), ',')) + 1;
    std::vector<std::unique_ptr<Backend>> devices;
    for (std::size_t i = 0; i < count; ++i) {
        gpu::Status st;
        auto device = host_kernel ? host_kernel(int(i), cpu_threads, st)
                                  : std::make_unique<HostKernelBackend>(int(i), cpu_threads);
        GpuDeviceReport r;
        r.info.index = int(i);
        r.info.name = "host kernel (CPU)";
        r.usable = device != nullptr;
        DeviceSlots tally;  // the report a real GPU's failure gets
        tally.bulk_wanted = 1;
        tally.bulk_opened = r.usable ? 1 : 0;
        tally.lane_opened = r.usable;
        if (!r.usable) tally.failure = st.ok() ? gpu::Status{gpu::Code::cuda_error, "did not open"} : st;
        r.no_kernel_image = tally.failure.code == gpu::Code::no_kernel_image;
        r.self_test = tally.report();
        gpu_reports_.push_back(r);
        if (device) devices.push_back(std::move(device));
    }
    ctx_.log->warn("--backend host-kernel: the GPU kernels' host twin in the place of {} GPU(s), for tests (slow)",
                   count);
    return devices;
}

void BackendSet::log_reports() const {
    auto& log = *ctx_.log;
    for (const auto& r : gpu_reports_) {
        if (r.no_kernel_image)  // exactly that, with the rebuild command (gpu::no_kernel_image_message)
            log.error("gpu {} {}: {}", r.info.index, r.info.name, r.self_test);
        else
            log.info("gpu {} {} ({} SMs, {} MiB): self-test {}", r.info.index, r.info.name, r.info.sm_count,
                     r.info.total_memory >> 20, r.self_test);
    }
}

bool BackendSet::open(const HostKernelFactory& host_kernel, std::string& failure) {
    auto& log = *ctx_.log;
    const Config& cfg = ctx_.config;
    const unsigned cpu_threads = cfg.cpu_threads ? cfg.cpu_threads : std::max(1u, std::thread::hardware_concurrency());
    failure.clear();
    // The GPU path's workers, and the latency lane's on top (Scheduler::set_lane_workers).
    const unsigned gpu_workers = cpu_threads + Scheduler::kLaneWorkers;
    if (cfg.backend == BackendChoice::lanes) {
        use_lanes(kernels::lanes::chosen_width(), gpu_workers, cpu_threads);
        return true;
    }
    if (cfg.backend != BackendChoice::cpu) {
        std::string error;
        std::vector<std::unique_ptr<Backend>> devices;
        if (cfg.backend == BackendChoice::host_kernel) {
            devices = open_host_kernel(host_kernel, gpu_workers);
            if (devices.empty()) error = "no stand-in GPU opened";
        } else {
            for (auto& gpu : GpuBackend::open_all(cfg.gpus, gpu_workers, cfg.gpu_chunk_rows, cfg.gpu_chunks_in_flight,
                                                  cfg.gpu_wait_floor_s, gpu_reports_, error))
                devices.push_back(std::move(gpu));
        }
        log_reports();
        if (!devices.empty()) {
            use_gpus(std::move(devices), cfg.backend == BackendChoice::host_kernel ? gpu_workers : cpu_threads, false);
            return true;
        }
        if (cfg.backend == BackendChoice::gpu) {
            log.critical("--backend gpu: no usable GPU: {}", error);
            failure = "no usable GPU: " + error;
            return false;
        }
        if (cfg.backend == BackendChoice::automatic && auto_lanes(error, gpu_workers, cpu_threads)) return true;
        if (cfg.backend == BackendChoice::host_kernel) log.info("backend host-kernel: no usable GPU ({}), using the cpu", error);
    }
    try {
        primary_ = std::make_unique<CpuBackend>(cfg.cpu_threads);
    } catch (const std::exception& e) {
        log.critical("cannot start the cpu backend: {}", e.what());
        return false;
    }
    return true;
}

std::size_t BackendSet::gpus_enabled() const {
    std::size_t n = 0;
    for (std::size_t i = 0; gpus_ != nullptr && i < gpus_->devices(); ++i) n += gpus_->device(i).primary_enabled();
    return n;
}

bool BackendSet::self_test(std::string& failure) {
    auto& log = *ctx_.log;
    failure.clear();
    bool passed = backend_self_test(*primary_, self_test_);
    // A GPU switched off during it failed only itself: again on the others.
    for (std::size_t on = gpus_enabled(), before = gpus_ != nullptr ? gpus_->devices() : 0;
         !passed && on > 0 && on < before; before = on, on = gpus_enabled())
        passed = backend_self_test(*primary_, self_test_);
    if (!passed && gpus_ != nullptr && gpus_enabled() == 0 && cpu_fallback_ != nullptr) {
        log.error("every GPU was switched off during the self-test ({}): verifying on the CPU", self_test_);
        passed = backend_self_test(*cpu_fallback_, self_test_);
    }
    if (!passed) {
        log.critical("backend {} failed its self-test: {}", primary_->name(), self_test_);
        failure = "backend " + primary_->name() + " failed its self-test: " + self_test_;
        return false;
    }
    log.info("backend {} self-test {}", primary_->name(), self_test_);
    // After the self-test, so that only a GPU that answered right is timed.
    if (planner_ != nullptr && gpus_enabled() > 0 && planner_->calibrate_on(*primary_))
        log.info("batch split: GPU round trip {:.3f} ms at start-up; the estimate stays within {}x of it",
                 planner_->estimates().gpu_latency_s * 1e3, SplitPlanner::kCalibrationRange);
    return true;
}

std::string BackendSet::kind() const {
    if (gpus_ == nullptr) return "cpu";
    if (lanes_ != nullptr) return lanes_->name();
    return ctx_.config.backend == BackendChoice::host_kernel ? "host-kernel" : "gpu";
}

std::string BackendSet::summary() const {
    return primary_ ? primary_->name() + " x" + std::to_string(primary_->concurrency()) : std::string("none");
}

void BackendSet::apply_sampling() {
    if (gpus_ == nullptr) return;
    for (std::size_t i = 0; i < gpus_->devices(); ++i)
        gpus_->device(i).set_sampling(ctx_.config.cross_check_sample, ctx_.config.cross_check_invalid_sample);
}

// Striped device i's state and counters into b.
void BackendSet::describe_checked(BackendInfo& b, std::size_t i) const {
    const DeadlineBackend* deadline = deadlines_[i];
    const CheckedBackend& d = gpus_->device(i);
    const CrossCheckCounters& c = d.counters();
    const bool hung = deadline != nullptr && deadline->hung();
    b.workers = d.concurrency();
    b.self_test = d.primary_enabled() ? "passed"
                  : hung              ? "passed; switched off: " + deadline->hung_reason()
                                      : "passed; switched off: " + d.disable_reason();
    b.enabled = d.primary_enabled();
    b.timeouts = deadline != nullptr ? deadline->timeouts() : 0;
    b.crosscheck_mismatches = c.mismatches.load();
    b.errors = c.primary_errors.load();
    b.rows_confirmed = c.rows_rechecked.load();
    b.invalid_unconfirmed = c.invalid_unconfirmed.load();
    b.rows_rewritten = c.rows_rewritten.load();
}

// Read by the stats socket (main thread) and by sessions answering an info
// request (their own threads): gpu_reports_ and the devices are fixed once
// the server serves, and each device's state and counters are atomics
// (a switched-off device's reason is written before its flag turns false).
std::vector<BackendInfo> BackendSet::describe() const {
    std::vector<BackendInfo> out;
    // Every GPU tried, also when none is used (a GPU the build has no image for, on a CPU daemon).
    {
        std::size_t next = 0;  // the usable reports are the striped devices, in order
        for (const auto& r : gpu_reports_) {
            BackendInfo b;
            b.name = "gpu" + std::to_string(r.info.index);
            b.kind = "gpu";
            b.device = r.info.name;
            b.memory_bytes = r.info.total_memory;
            b.no_kernel_image = r.no_kernel_image;
            if (gpus_ != nullptr && r.usable && next < gpus_->devices()) {
                describe_checked(b, next);
                ++next;
            } else {
                b.self_test = r.no_kernel_image ? r.self_test : "failed: " + r.self_test;
                b.enabled = false;
            }
            out.push_back(std::move(b));
        }
    }
    if (lanes_ != nullptr) {
        BackendInfo b;
        b.name = lanes_->name();
        b.kind = "lanes";
        b.device = lanes_device_text(lanes_->width());
        describe_checked(b, 0);
        out.push_back(std::move(b));
    }
    const Backend* cpu = gpus_ != nullptr ? cpu_fallback_.get() : primary_.get();
    if (cpu) {
        BackendInfo b;
        b.name = gpus_ != nullptr ? "cpu-fallback" : cpu->name();
        b.kind = "cpu";
        b.device = "libsecp256k1";
        b.workers = cpu->concurrency();
        b.self_test = self_test_;
        out.push_back(std::move(b));
    }
    return out;
}

}  // namespace sigverify::daemon
