// SPDX-License-Identifier: MIT
// Daemon-wide state that every session needs, owned by the server (one per
// daemon). Sessions read the configuration and identity from it, bump its
// counters, and submit their jobs to its scheduler.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include <spdlog/logger.h>

#include "daemon/config.hpp"
#include "daemon/log_limit.hpp"
#include "daemon/metrics.hpp"
#include "daemon/segment_budget.hpp"

namespace sigverify::daemon {

class Scheduler;

struct DaemonContext {
    Config config;
    std::uint64_t epoch = 0;
    std::uint64_t start_time_ns = 0;
    Scheduler* scheduler = nullptr;
    std::shared_ptr<spdlog::logger> log;
    std::atomic<bool> stopping{false};       // SIGTERM/SIGINT received
    std::atomic<unsigned> active_sessions{0};
    std::atomic<std::uint64_t> protocol_errors{0};
    std::atomic<std::uint64_t> refused{0};
    Metrics metrics;                          // the stats socket's counters (daemon/metrics.hpp)
    LogLimit log_limit;                       // for every log line a client can trigger repeatedly
    SegmentBudget segment_budget;             // shared memory handed out and not yet truncated, per uid
    int session_ended_fd = -1;                // eventfd: a session thread ended, the server reaps it at once
};

}  // namespace sigverify::daemon
