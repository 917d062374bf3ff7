// SPDX-License-Identifier: MIT
// sigverifyd's metric registry: exact counters, updated with relaxed atomics
// where the work happens (once per batch / chunk / connection, never per row),
// and the renderers of the stats socket: Prometheus text exposition, JSON,
// the client and backend listings. Which metric is exported under which name,
// labels and JSON key is one table (daemon/ops/metric_table.hpp) that both
// renderers walk.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/backends/split_planner.hpp"

namespace sigverify::daemon {

// Table labels: the four wire tables, then "unspecified" (a submission without
// a table label).
constexpr std::size_t kMetricTables = 5;
std::string_view table_label(std::size_t index);
// wire::Table value or shm::kTableUnspecified -> index < kMetricTables.
std::size_t table_index(std::uint8_t table);

// Upper bounds (seconds) of the batch latency histogram (submit -> completion).
inline constexpr std::array<double, 18> kLatencyBounds = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                                          0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                                          0.5,     1.0,    2.5,     5.0,    10.0,  30.0};

struct Metrics {
    using Counter = std::atomic<std::uint64_t>;

    // [table][verdict]: verdict 0 = invalid, 1 = valid.
    std::array<std::array<Counter, 2>, kMetricTables> rows_verified{};
    std::array<Counter, kMetricTables> batches{};          // completed with status ok
    std::array<Counter, kMetricTables> batches_failed{};   // completed with another status
    std::array<Counter, kMetricTables> bytes{};            // row bytes of accepted batches
    // Non-cumulative bucket counts; the last one is +Inf.
    std::array<Counter, kLatencyBounds.size() + 1> latency_buckets{};
    Counter latency_sum_ns{0};
    Counter latency_count{0};

    Counter connections_accepted{0};
    // Refused at admission (every reason, daemon/serve/admission.hpp) or by a
    // session's handshake checks; malformed handshakes, invalid submissions
    // and ring index violations.
    Counter connections_refused{0};
    Counter protocol_errors{0};
    // Buffer registrations refused because the file is not a memfd or on a
    // local file system (FUSE, network, proc/sysfs...: daemon/memory/registered_buffers.cpp).
    Counter registrations_refused_file_system{0};
    // accept() failures for lack of resources (EMFILE, ENFILE, ENOBUFS, ENOMEM) on the
    // control or stats socket; each one pauses that socket's accepts (daemon/ops/accept_backoff.hpp).
    Counter accept_errors{0};
    // Sessions refused by the connection rate limit (daemon/serve/connection_rate.hpp)
    // and by the shared memory budget (daemon/serve/segment_budget.hpp); both are
    // also in connections_refused.
    Counter refused_rate_limited{0};
    Counter refused_shm_budget{0};
    // Info requests refused (busy) over their session's rate (daemon/serve/info_rate.hpp).
    Counter info_refused{0};
    // Segments the daemon truncated to zero bytes when their session ended.
    Counter segments_truncated{0};
    Counter chunks{0};
    // Work units the workers finished: chunks, yield pieces, group-repair
    // pieces (the watchdog's sign of life; not exported).
    Counter progress{0};
    Counter cpu_fallback_chunks{0};
    Counter cpu_fallback_rows{0};
    Counter gpu_crosscheck_mismatches{0};  // bumped by a GPU backend's cross-check
    Counter gpu_errors{0};                 // bumped by a GPU backend on a failed chunk
    Counter gpu_timeouts{0};               // calls to a GPU that passed their deadline (deadline_backend.hpp)
    // Batches verified on a checked (GPU) backend, by confirmation rule
    // (daemon/confirm/confirmation.hpp), and rows of groups several chunks held,
    // re-verified at the end of their batch.
    Counter confirm_batches_strict{0};
    Counter confirm_batches_groups{0};
    Counter confirm_repaired_rows{0};
    // Rows a backend got in place from the client's segment (no staging copy:
    // Backend::verifies_in_place) and rows copied to a worker's private memory first.
    Counter rows_in_place{0};
    Counter rows_staged{0};
    Counter split_cpu_rows{0};  // rows of GPU-daemon batches the split planner gave to the CPU workers
    // Chunks of small batches taken while their client's uid owed the lane
    // confirmation time (daemon/schedule/scheduler.hpp "Lane workers": lane debt).
    Counter lane_indebted_chunks{0};
    Counter stats_requests{0};
    Counter stats_refused{0};              // stats connections refused (permission, too many)
    Counter stats_dropped{0};              // stats readers dropped (slow, idle, oversized request)
    Counter stats_evicted{0};              // idle stats readers closed to make room for a new one
    Counter textfile_writes{0};            // --metrics-textfile written
    Counter textfile_errors{0};            // --metrics-textfile writes that failed (the first one is logged)
    Counter config_reloads{0};             // SIGHUPs that re-read the configuration
    Counter config_reload_errors{0};       // SIGHUPs whose configuration did not parse (nothing changed)

    // One completed batch (called by the session that posts the completion).
    void observe_batch(std::uint8_t table, bool ok, std::uint64_t valid, std::uint64_t invalid,
                       std::uint64_t latency_ns) noexcept;
};

// What the stats socket reports besides the counters: gauges and listings
// sampled by the server's thread when a request arrives.
struct ClientInfo {
    std::uint64_t id = 0;
    std::int64_t pid = 0;
    std::uint32_t uid = 0;
    std::uint32_t gid = 0;
    std::string name;
    std::uint64_t batches = 0;
    std::uint64_t rows = 0;
    std::uint32_t in_flight = 0;
    std::uint32_t ring_entries = 0;
    std::uint64_t arena_size = 0;
};

struct BackendInfo {
    std::string name;        // "cpu", "gpu0", ...
    std::string kind;        // "cpu" or "gpu"
    std::string device;      // model name for a GPU, "libsecp256k1" for the CPU
    unsigned workers = 0;    // worker threads / streams
    std::uint64_t memory_bytes = 0;  // GPU memory (0 for the CPU)
    std::string self_test;   // "passed" / "failed: ..."
    bool enabled = true;     // false: a GPU that failed its self-test or was switched off (checked_backend.hpp)
    std::uint64_t crosscheck_mismatches = 0;
    std::uint64_t errors = 0;
    std::uint64_t rows_confirmed = 0;       // rows libsecp256k1 re-verified (confirmed or sampled)
    std::uint64_t invalid_unconfirmed = 0;  // groups rule: INVALID verdicts of passing groups left unconfirmed
    std::uint64_t rows_rewritten = 0;       // in-place disagreements settled on a private copy (client rewrites)
    std::uint64_t timeouts = 0;             // calls that passed their deadline (the GPU is then left out as hung)
    bool no_kernel_image = false;           // a GPU the daemon's build has no machine code for (self_test says which)
};

// The settings SIGHUP can change, as they are now (docs/operations.md, "Reload").
struct RunningSettings {
    std::string log_level;
    std::string log_format;  // auto, text, json
    std::uint32_t cross_check_sample = 0;
    std::uint32_t cross_check_invalid_sample = 0;
    std::string metrics_textfile;
    unsigned metrics_interval = 0;
};

struct StatsSnapshot {
    std::string version;
    unsigned protocol_version = 0;
    unsigned abi_major = 0, abi_minor = 0;
    double start_time_seconds = 0;  // unix time
    double uptime_seconds = 0;
    std::uint64_t epoch = 0;
    std::uint64_t queued_jobs = 0;      // jobs with unassigned rows or running chunks
    std::uint64_t connected_clients = 0;
    std::uint64_t max_clients = 0;
    std::uint64_t stats_connections = 0;
    std::uint64_t shm_bytes = 0;        // shared memory handed out and not yet released (segment_budget.hpp)
    std::uint64_t shm_budget_bytes = 0;
    std::vector<ClientInfo> clients;
    std::vector<BackendInfo> backends;
    RunningSettings settings;
    bool has_split = false;  // a GPU daemon's batch split model (daemon/backends/split_planner.hpp)
    SplitEstimates split;
};

// Renderers. `m` is read with relaxed loads: each counter is exact, the set is
// a near-instant sample.
std::string render_prometheus(const Metrics& m, const StatsSnapshot& s);
std::string render_json(const Metrics& m, const StatsSnapshot& s);
std::string render_clients(const StatsSnapshot& s);
std::string render_backends(const StatsSnapshot& s);
std::string render_version(const StatsSnapshot& s);
std::string stats_help();

// Writes text to path atomically (path.tmp.PID, fsync, rename). false + errno text on failure.
bool write_text_atomically(const std::string& path, const std::string& text, std::string& error);

}  // namespace sigverify::daemon
