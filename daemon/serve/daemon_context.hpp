// SPDX-License-Identifier: MIT
// Daemon-wide state that every session needs, owned by the server (one per
// daemon). Sessions read the configuration and identity from it, bump its
// counters, and submit their jobs to its scheduler.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <spdlog/logger.h>

#include "daemon/ops/config.hpp"
#include "daemon/ops/log_limit.hpp"
#include "daemon/ops/metrics.hpp"
#include "daemon/serve/segment_budget.hpp"

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
    Metrics metrics;                          // the stats socket's counters (daemon/ops/metrics.hpp)
    // Two of them under the short names the sessions bump (they live in metrics).
    Metrics::Counter& protocol_errors = metrics.protocol_errors;
    Metrics::Counter& refused = metrics.connections_refused;
    LogLimit log_limit;                       // for every log line a client can trigger repeatedly
    SegmentBudget segment_budget;             // shared memory handed out and not yet truncated, per uid
    int session_ended_fd = -1;
    // What the daemon verifies on, for the info request (daemon/serve/info_reply.hpp):
    // "cpu", "gpu" or "host-kernel", and each backend's state now (safe to
    // call from a session thread; set by the server before it serves).
    std::string backend_kind = "cpu";
    std::function<std::vector<BackendInfo>()> backends;                // eventfd: a session thread ended, the server reaps it at once
};

}  // namespace sigverify::daemon
