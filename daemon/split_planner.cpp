// SPDX-License-Identifier: MIT
#include "daemon/split_planner.hpp"

#include <algorithm>
#include <cmath>

namespace sigverify::daemon {

namespace {
void blend(double& estimate, double observed) {
    if (std::isfinite(observed) && observed > 0) estimate += SplitPlanner::kWeight * (observed - estimate);
}
}  // namespace

std::size_t SplitPlanner::gpu_rows(std::size_t n, unsigned cpu_workers) const {
    if (n == 0 || cpu_workers == 0) return n;
    const SplitEstimates e = estimates();
    const double c = e.cpu_row_s / double(std::min<std::size_t>(cpu_workers, n));  // CPU seconds per row, all workers
    if (double(n) * c <= e.gpu_latency_s) return 0;  // the CPU is done before a launch returns
    // latency + g * gpu_row = (n - g) * c
    const double g = (double(n) * c - e.gpu_latency_s) / (c + e.gpu_row_s);
    const std::size_t rows = std::min(n, static_cast<std::size_t>(std::max(0.0, std::ceil(g))));
    return rows < min_gpu_rows_ ? 0 : rows;
}

void SplitPlanner::observe_gpu(std::size_t rows, double seconds) {
    std::lock_guard lock(mutex_);
    if (rows <= kLatencyRows) blend(e_.gpu_latency_s, seconds);
    if (rows >= kThroughputRows) blend(e_.gpu_row_s, (seconds - e_.gpu_latency_s) / double(rows));
}

void SplitPlanner::observe_cpu(std::size_t rows, double seconds) {
    if (rows == 0) return;
    std::lock_guard lock(mutex_);
    blend(e_.cpu_row_s, seconds / double(rows));
}

SplitEstimates SplitPlanner::estimates() const {
    std::lock_guard lock(mutex_);
    return e_;
}

}  // namespace sigverify::daemon
