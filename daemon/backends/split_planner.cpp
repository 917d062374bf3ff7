// SPDX-License-Identifier: MIT
#include "daemon/backends/split_planner.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include <sched.h>

#include "daemon/backends/backend.hpp"
#include "reference/row_generator.hpp"

namespace sigverify::daemon {

namespace {
void blend(double& estimate, double observed) {
    if (std::isfinite(observed) && observed > 0) estimate += SplitPlanner::kWeight * (observed - estimate);
}

unsigned affinity_cores() {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return std::max(1u, std::thread::hardware_concurrency());
    return unsigned(std::max(1, CPU_COUNT(&allowed)));
}
}  // namespace

SplitPlanner::SplitPlanner(SplitEstimates priors, std::size_t min_gpu_rows, unsigned cores)
    : e_(priors),
      cpu_row_floor_s_(priors.cpu_row_s / kCalibrationRange),
      cpu_row_ceiling_s_(priors.cpu_row_s * kCalibrationRange),
      min_gpu_rows_(min_gpu_rows),
      cores_(cores != 0 ? cores : affinity_cores()) {}

std::size_t SplitPlanner::gpu_rows(std::size_t n, unsigned cpu_workers) const {
    if (n == 0 || cpu_workers == 0) return n;
    const SplitEstimates e = estimates();
    // CPU seconds per row, all workers (as many at once as there are cores).
    const double c = e.cpu_row_s / double(std::min<std::size_t>({cpu_workers, cores_, n}));
    if (double(n) * c <= e.gpu_latency_s) return 0;  // the CPU is done before a launch returns
    // latency + g * gpu_row = (n - g) * c
    const double g = (double(n) * c - e.gpu_latency_s) / (c + e.gpu_row_s);
    const std::size_t rows = std::min(n, static_cast<std::size_t>(std::max(0.0, std::ceil(g))));
    return rows < min_gpu_rows_ ? 0 : rows;
}

std::size_t SplitPlanner::lane_gpu_rows(std::size_t n, unsigned cpu_workers) const {
    const std::size_t rows = gpu_rows(n, cpu_workers);
    if (rows == 0 || rows == n) return rows;
    const SplitEstimates e = estimates();
    const double launch_s = e.gpu_latency_s + double(rows) * e.gpu_row_s;
    return double(n - rows) * e.gpu_row_s * kLaneShareToGpu <= launch_s ? n : rows;
}

void SplitPlanner::calibrate(double latency_s) {
    if (!std::isfinite(latency_s) || latency_s <= 0) return;
    std::lock_guard lock(mutex_);
    e_.gpu_latency_s = latency_s;
    latency_floor_s_ = latency_s / kCalibrationRange;
    latency_ceiling_s_ = latency_s * kCalibrationRange;
}

bool SplitPlanner::calibrate_on(Backend& gpus) {
    const std::size_t rows = std::max<std::size_t>(8, min_gpu_rows_);
    if (rows > kLatencyRows) return false;
    reference::GenOptions o;
    o.table = wire::Table::ecdsa;
    o.count = rows;
    o.seed = 0xca11b7a7e;
    o.threads = 1;
    std::vector<std::uint8_t> table;
    try {
        table = reference::generate_rows(o);
    } catch (...) {
        return false;
    }
    const wire::RowSpan span{wire::RecordKind::ecdsa, reference::effective_key_size(o), wire::SigEncoding::opaque,
                             table.data(), rows};
    std::vector<std::uint8_t> verdicts(rows);
    double best = 0;
    for (int i = 0; i < 3; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const ChunkResult r = gpus.verify(0, span, verdicts.data());
        if (r.status != shm::Status::ok || !r.launched) return false;
        const double s = r.primary_seconds.value_or(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        best = i == 0 ? s : std::min(best, s);
    }
    calibrate(best);
    return best > 0;
}

void SplitPlanner::observe_gpu(std::size_t rows, double seconds) {
    if (rows == 0) return;  // an empty chunk's time is no launch's
    std::lock_guard lock(mutex_);
    if (rows <= kLatencyRows) {
        blend(e_.gpu_latency_s, seconds);
        e_.gpu_latency_s = std::clamp(e_.gpu_latency_s, latency_floor_s_, latency_ceiling_s_);
    }
    if (rows >= kThroughputRows) blend(e_.gpu_row_s, (seconds - e_.gpu_latency_s) / double(rows));
}

void SplitPlanner::observe_cpu(std::size_t rows, double seconds) {
    if (rows == 0) return;
    std::lock_guard lock(mutex_);
    blend(e_.cpu_row_s, seconds / double(rows));
    e_.cpu_row_s = std::clamp(e_.cpu_row_s, cpu_row_floor_s_, cpu_row_ceiling_s_);
}

SplitEstimates SplitPlanner::estimates() const {
    std::lock_guard lock(mutex_);
    return e_;
}

}  // namespace sigverify::daemon
