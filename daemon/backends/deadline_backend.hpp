// SPDX-License-Identifier: MIT
// A deadline on every call to a device: no GPU can hang the daemon.
//
// A device's verify() waits for a launch, a copy, a kernel -- on hardware
// that can stop answering, behind a driver that can block. DeadlineBackend
// wraps one device (a GpuBackend, or the host-kernel stand-in in its place)
// below its CheckedBackend and runs each call on a thread of its own, one per
// worker (started with the backend, with the set-up thread's scheduling: a
// bulk worker's SCHED_IDLE would delay each hand-over), while the worker waits at most
//   gpu::wait_deadline_s(rows, the slowest rate this device answered at, floor)
// (the floor is --gpu-wait-floor; the rate is learnt from calls of 1,024 rows
// or more). Past it:
//   * the device is taken for hung and left out for good: every later call
//     fails at once, the workers already waiting on it give up at once, and
//     it is never called, unmapped or destroyed again (its threads and memory
//     are the process's until exit);
//   * the call fails with backend_error: its CheckedBackend switches the
//     device off, and the scheduler re-runs the chunk on the CPU fallback, so
//     its rows get libsecp256k1's verdicts;
//   * the device writes only into the call's own verdict buffer, copied to
//     the caller's only when the call finished in time: a hung call that
//     returns late publishes nothing, no verdict is published twice;
//   * on_timeout(reason) says which device and why (the log, the metrics).
// The hop to the call's thread costs a hand-over each way (tens of
// microseconds) on the GPU path only: the CPU backend has no deadline. The
// call threads do what the device does on the host (a GPU's staging copy and
// verdict scatter) at ordinary priority, beside the lane workers.
//
// A device that computes on this machine's cores (the host-kernel stand-in,
// CallScheduling::callers) is different: its call thread does the whole
// verification, so each call thread takes the scheduling of the worker it
// serves (a bulk worker's SCHED_IDLE or nice +10) at that worker's calls,
// and the stand-in's bulk work yields to the lane workers as the bulk
// workers' own work does; at ordinary priority it took the cores from the
// small batches it stands beside. Worker w's calls always run on call thread
// w, and a worker's scheduling is set once, so a thread's class moves at
// most once and only down (which needs no privilege).
//
// A late call still reads its records (the GPU path reads them only before
// its own, longer backstop deadline: gpu::Options::wait_floor_s).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/backends/backend.hpp"

namespace sigverify::daemon {

class DeadlineBackend final : public Backend {
public:
    // Called once, from the worker whose call passed its deadline.
    using TimeoutHook = std::function<void(const std::string& reason)>;
    // How a call thread is scheduled (above): ordinary for a device whose work
    // runs off the CPU (a GPU), the calling worker's for one that computes here.
    enum class CallScheduling { ordinary, callers };

    DeadlineBackend(std::unique_ptr<Backend> device, double floor_s, TimeoutHook on_timeout = {},
                    CallScheduling scheduling = CallScheduling::ordinary);
    ~DeadlineBackend() override;
    DeadlineBackend(const DeadlineBackend&) = delete;
    DeadlineBackend& operator=(const DeadlineBackend&) = delete;

    std::string name() const override { return device_->name(); }
    unsigned concurrency() const override { return device_->concurrency(); }
    std::size_t preferred_chunk_rows() const override { return device_->preferred_chunk_rows(); }
    bool available() const override { return !hung() && device_->available(); }
    bool verifies_in_place() const override { return device_->verifies_in_place(); }
    bool map_client_memory(const void* base, std::size_t bytes) noexcept override;
    void unmap_client_memory(const void* base) noexcept override;
    void set_lane_workers(unsigned first) override { device_->set_lane_workers(first); }
    void set_progress(std::atomic<std::uint64_t>* progress) override;
    ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override;

    bool hung() const { return hung_.load(std::memory_order_acquire); }
    // Why it was taken for hung ("" before); written once, before hung() turns true.
    const std::string& hung_reason() const { return reason_; }
    std::uint64_t timeouts() const { return timeouts_.load(std::memory_order_relaxed); }
    // The deadline a call of `rows` rows gets now, in seconds.
    double deadline_s(std::size_t rows) const;

private:
    struct Runner;
    Runner& runner(unsigned worker);
    void give_up(std::size_t rows, double waited_s);
    void learn(std::size_t rows, double seconds);

    std::unique_ptr<Backend> device_;
    double floor_s_;
    TimeoutHook on_timeout_;
    CallScheduling scheduling_;
    std::mutex runners_mutex_;  // runners_' slots (each runner is its worker's alone)
    std::vector<std::shared_ptr<Runner>> runners_;
    std::atomic<double> slowest_rows_per_s_{0};
    std::atomic<bool> hung_{false};
    std::atomic<bool> giving_up_{false};
    std::string reason_;
    std::atomic<std::uint64_t> timeouts_{0};
};

}  // namespace sigverify::daemon
