// SPDX-License-Identifier: MIT
// Which rows of a batch the GPU verifies and which the CPU workers do.
//
// A GPU launch costs milliseconds however few rows it holds, while a core
// verifies a row in tens of microseconds: a block-sized batch (2k-10k rows)
// can finish sooner on the CPU workers, or on both at once. The planner keeps
// a model of both, updated from every chunk the scheduler runs:
//   GPU:  t(n) = latency + n * gpu_row     (a chunk of n rows, confirmations included)
//   CPU:  t(n) = n * cpu_row / min(workers, cores)   (spread over the CPU workers,
//                                                      as many at once as there are cores)
// and splits a batch of n rows so that both sides finish together: the GPU
// gets g rows with latency + g * gpu_row = (n - g) * cpu_row / workers, or
// none when the CPU alone is done before a launch returns.
//
// latency comes from chunks of at most kLatencyRows rows, gpu_row from chunks
// of at least kThroughputRows rows (their time minus the latency), cpu_row
// from CPU chunks (one core's seconds: the worker thread's CPU time, so a chunk
// that waited for a core does not look slower than a core verifies); each is
// an exponentially weighted average (weight kWeight
// for a new observation), starting from the priors given at construction.
//
// Every client's chunks feed the same model, so no client may steer it far:
// GPU times are the primary's own (ChunkResult::primary_seconds,
// without the CPU confirmations that invalid rows cost), chunks without a
// launch or without rows teach nothing, and once calibrate() has measured the
// GPU's own round trip at start-up the latency estimate stays within a factor
// kCalibrationRange of that measurement whatever the chunks say. The CPU row
// estimate is held within kCalibrationRange of its start-up value (the
// prior) the same way, and the scheduler teaches it only with chunks whose
// rows all verified valid (undecodable rows are refused in nanoseconds:
// a flood of them would make a core look thousands of times faster and
// send honest batches almost whole to the CPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>

namespace sigverify::daemon {

class Backend;

struct SplitEstimates {
    double gpu_latency_s = 3e-3;     // one launch round trip (H200: 2.7 ms for 1 row)
    // Per row of a large chunk on one slot: a slot's share of the H200's ~25 M
    // ECDSA rows/s (BENCHMARKS.md) over the default 3 chunks in flight. Block-sized
    // batches (below kThroughputRows) never teach it, so it must not be stale.
    double gpu_row_s = 3.0 / 25e6;
    double cpu_row_s = 40e-6;        // per row on one core (libsecp256k1 ECDSA)
};

class SplitPlanner {
public:
    static constexpr std::size_t kLatencyRows = 1024;
    static constexpr std::size_t kThroughputRows = 16384;
    static constexpr double kWeight = 0.125;
    static constexpr double kCalibrationRange = 8.0;

    // min_gpu_rows: a GPU share smaller than this goes to the CPU as well
    // (the GPU backend would verify it on the CPU anyway: --gpu-min-rows).
    // cores: how many CPU workers can run at once; 0 = the CPUs in the
    // calling thread's affinity mask (--cpu-threads may exceed them).
    explicit SplitPlanner(SplitEstimates priors = {}, std::size_t min_gpu_rows = 1, unsigned cores = 0);

    // Rows [0, result) of an n-row batch go to the GPU, the rest to
    // cpu_workers CPU workers (0 workers: everything to the GPU).
    std::size_t gpu_rows(std::size_t n, unsigned cpu_workers) const;
    // The split of a batch the lane workers verify (Scheduler::plan_job: every
    // bulk worker busy, one lane worker waiting on the launch): gpu_rows,
    // except that a CPU share which would lengthen the launch by at most
    // 1/kLaneShareToGpu goes to the GPU too. That share (~75 rows of a
    // 4,096-row block at the default estimates) takes microseconds off the
    // launch and holds the other lane worker for the launch's whole length,
    // so the next 1-row batch waited for it (docs/benchmarks-history.md
    // §13). Where a GPU row costs more (the host twin's are CPU
    // work too) the share stays.
    std::size_t lane_gpu_rows(std::size_t n, unsigned cpu_workers) const;
    static constexpr double kLaneShareToGpu = 16;
    std::size_t min_gpu_rows() const { return min_gpu_rows_; }
    unsigned cores() const { return cores_; }

    // The GPU's round trip as measured at start-up (a launch of a few rows):
    // the latency estimate starts there and is held within
    // [latency_s / kCalibrationRange, latency_s * kCalibrationRange] from now on.
    void calibrate(double latency_s);
    // Measures that round trip on gpus (the best of three launches of
    // max(8, min_gpu_rows) generated rows) and calibrates with it; false when
    // it could not (a launch failed, or min_gpu_rows exceeds kLatencyRows).
    bool calibrate_on(Backend& gpus);

    void observe_gpu(std::size_t rows, double seconds);
    // seconds: one core's time for the rows (CPU time, not wall time); the
    // estimate stays within kCalibrationRange of the prior's cpu_row_s.
    void observe_cpu(std::size_t rows, double seconds);
    SplitEstimates estimates() const;

private:
    mutable std::mutex mutex_;
    SplitEstimates e_;
    double latency_floor_s_ = 0;    // 0 / infinity until calibrate()
    double latency_ceiling_s_ = 1e300;
    double cpu_row_floor_s_, cpu_row_ceiling_s_;  // the prior's cpu_row_s within kCalibrationRange
    std::size_t min_gpu_rows_;
    unsigned cores_;
};

}  // namespace sigverify::daemon
