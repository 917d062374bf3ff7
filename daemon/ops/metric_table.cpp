// SPDX-License-Identifier: MIT
#include "daemon/ops/metric_table.hpp"

#include <array>
#include <type_traits>

#include "daemon/memory/mapping_guard.hpp"

namespace sigverify::daemon {
namespace {

using Counter = Metrics::Counter;
using PerTable = std::array<Counter, kMetricTables>;

MetricSample integer(std::uint64_t v) { return {MetricSample::Kind::integer, v, 0}; }
MetricSample real(double v) { return {MetricSample::Kind::real, 0, v}; }
MetricSample flag(bool v) { return {MetricSample::Kind::flag, v ? 1u : 0u, 0}; }

// Where a value lives, one reader each: a counter of Metrics, one of a
// per-table array, a field of the snapshot, a field of each listed backend.
template <Counter Metrics::*F>
MetricSample counter(const MetricSource& src, std::size_t) {
    return integer((src.m.*F).load(std::memory_order_relaxed));
}
template <PerTable Metrics::*F>
MetricSample per_table(const MetricSource& src, std::size_t t) {
    return integer((src.m.*F)[t].load(std::memory_order_relaxed));
}
template <std::uint64_t StatsSnapshot::*F>
MetricSample snapshot(const MetricSource& src, std::size_t) {
    return integer(src.s.*F);
}
template <double StatsSnapshot::*F>
MetricSample snapshot_seconds(const MetricSource& src, std::size_t) {
    return real(src.s.*F);
}
template <auto F>  // a pointer to a member of BackendInfo
MetricSample per_backend(const MetricSource& src, std::size_t i) {
    const auto v = src.s.backends[i].*F;
    if constexpr (std::is_same_v<decltype(v), const bool>) return flag(v);
    else return integer(std::uint64_t(v));
}
template <double SplitEstimates::*F>
MetricSample split(const MetricSource& src, std::size_t) {
    return real(src.s.split.*F);
}

MetricSample build_info(const MetricSource&, std::size_t) { return integer(1); }
MetricSample rows_verified(const MetricSource& src, std::size_t i) {
    // Set 2t is the table's valid rows (verdict index 1), 2t + 1 its invalid ones.
    return integer(src.m.rows_verified[i / 2][i % 2 == 0 ? 1 : 0].load(std::memory_order_relaxed));
}
MetricSample ring_in_flight(const MetricSource& src, std::size_t) {
    std::uint64_t sum = 0;
    for (const auto& c : src.s.clients) sum += c.in_flight;
    return integer(sum);
}
MetricSample ring_capacity(const MetricSource& src, std::size_t) {
    std::uint64_t sum = 0;
    for (const auto& c : src.s.clients) sum += c.ring_entries;
    return integer(sum);
}
MetricSample guard_refusals(const MetricSource&, std::size_t) { return integer(guard::usage().refusals); }
MetricSample confirm_batches(const MetricSource& src, std::size_t rule) {
    return integer((rule == 0 ? src.m.confirm_batches_strict : src.m.confirm_batches_groups)
                       .load(std::memory_order_relaxed));
}
MetricSample cross_check_sample(const MetricSource& src, std::size_t) {
    return integer(src.s.settings.cross_check_sample);
}
MetricSample cross_check_invalid_sample(const MetricSource& src, std::size_t) {
    return integer(src.s.settings.cross_check_invalid_sample);
}
bool has_split(const StatsSnapshot& s) { return s.has_split; }

using L = MetricLabels;
using J = JsonPlace;
constexpr std::string_view C = "counter", G = "gauge";

// In the order of the Prometheus exposition.
constexpr MetricDef kMetrics[] = {
    {"sigverifyd_build_info", G, "Build information (always 1).", L::build, build_info, J::none, ""},
    {"sigverifyd_start_time_seconds", G, "Start time of the daemon, seconds since the Unix epoch.", L::none,
     snapshot_seconds<&StatsSnapshot::start_time_seconds>, J::top, "start_time_seconds"},
    {"sigverifyd_uptime_seconds", G, "Seconds since the daemon started.", L::none,
     snapshot_seconds<&StatsSnapshot::uptime_seconds>, J::top, "uptime_seconds"},
    {"sigverifyd_rows_verified_total", C, "Rows verified, by table and verdict.", L::table_verdict, rows_verified,
     J::tables, ""},
    {"sigverifyd_batches_total", C, "Batches completed successfully, by table.", L::table,
     per_table<&Metrics::batches>, J::tables, "batches"},
    {"sigverifyd_batches_failed_total", C,
     "Batches completed with an error status (cancelled, shutting down, backend failure), by table.", L::table,
     per_table<&Metrics::batches_failed>, J::tables, "batches_failed"},
    {"sigverifyd_bytes_total", C, "Row bytes of accepted batches, by table.", L::table, per_table<&Metrics::bytes>,
     J::tables, "bytes"},
    {"sigverifyd_batch_latency_seconds", "histogram", "Batch latency from submission to completion.", L::histogram,
     nullptr, J::histogram, "batch_latency_seconds"},
    {"sigverifyd_queue_depth", G, "Batches queued or being verified, all clients.", L::none,
     snapshot<&StatsSnapshot::queued_jobs>, J::gauges, "queue_depth"},
    {"sigverifyd_ring_in_flight", G, "Submissions consumed from the rings and not yet completed, all clients.",
     L::none, ring_in_flight, J::gauges, "ring_in_flight"},
    {"sigverifyd_ring_capacity", G, "Completion ring entries of all connected clients.", L::none, ring_capacity,
     J::gauges, "ring_capacity"},
    {"sigverifyd_clients_connected", G, "Connected clients.", L::none, snapshot<&StatsSnapshot::connected_clients>,
     J::gauges, "clients_connected"},
    {"sigverifyd_clients_max", G, "Configured --max-clients.", L::none, snapshot<&StatsSnapshot::max_clients>,
     J::gauges, "clients_max"},
    {"sigverifyd_connections_accepted_total", C, "Client connections accepted.", L::none,
     counter<&Metrics::connections_accepted>, J::counters, "connections_accepted"},
    {"sigverifyd_connections_refused_total", C,
     "Client connections refused (permission denied, --max-clients reached).", L::none,
     counter<&Metrics::connections_refused>, J::counters, "connections_refused"},
    {"sigverifyd_accept_errors_total", C,
     "accept() failures for lack of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM); each pauses "
     "accepting on that socket for 10 ms, doubling up to 1 s.",
     L::none, counter<&Metrics::accept_errors>, J::counters, "accept_errors"},
    {"sigverifyd_connections_rate_limited_total", C,
     "Client connections refused by the per-process or per-uid connection rate limit.", L::none,
     counter<&Metrics::refused_rate_limited>, J::counters, "connections_rate_limited"},
    {"sigverifyd_connections_over_shm_budget_total", C,
     "Client connections refused because their segment would exceed the shared memory budget.", L::none,
     counter<&Metrics::refused_shm_budget>, J::counters, "connections_over_shm_budget"},
    {"sigverifyd_shm_bytes", G, "Shared memory handed out to clients and not yet released (truncated).", L::none,
     snapshot<&StatsSnapshot::shm_bytes>, J::gauges, "shm_bytes"},
    {"sigverifyd_shm_budget_bytes", G, "Bound of sigverifyd_shm_bytes (--max-clients segments).", L::none,
     snapshot<&StatsSnapshot::shm_budget_bytes>, J::gauges, "shm_budget_bytes"},
    {"sigverifyd_guard_refusals_total", C,
     "Sessions refused because the SIGBUS guard had no free slot for their segment's mapping "
     "(the table is sized from --max-clients: normally never).",
     L::none, guard_refusals, J::counters, "guard_refusals"},
    {"sigverifyd_segments_truncated_total", C,
     "Segments truncated to zero bytes when their session ended (pages freed even if a client kept them).", L::none,
     counter<&Metrics::segments_truncated>, J::counters, "segments_truncated"},
    {"sigverifyd_protocol_errors_total", C,
     "Protocol errors: malformed handshakes, invalid submissions, ring index violations.", L::none,
     counter<&Metrics::protocol_errors>, J::counters, "protocol_errors"},
    {"sigverifyd_info_requests_refused_total", C,
     "Info requests refused with status busy: their session asked faster than its rate limit.",
     L::none, counter<&Metrics::info_refused>, J::counters, "info_requests_refused"},
    {"sigverifyd_registrations_refused_file_system_total", C,
     "Buffer registrations refused because the file is neither a memfd nor on a local file system "
     "(FUSE, network, proc, sysfs...): a read of it could wait on another process for ever.",
     L::none, counter<&Metrics::registrations_refused_file_system>, J::counters, "registrations_refused_file_system"},
    {"sigverifyd_chunks_total", C, "Chunks verified by the backends.", L::none, counter<&Metrics::chunks>,
     J::counters, "chunks"},
    {"sigverifyd_cpu_fallback_chunks_total", C, "Chunks the primary backend failed and the CPU re-ran.", L::none,
     counter<&Metrics::cpu_fallback_chunks>, J::counters, "cpu_fallback_chunks"},
    {"sigverifyd_cpu_fallback_rows_total", C, "Rows of those chunks.", L::none, counter<&Metrics::cpu_fallback_rows>,
     J::counters, "cpu_fallback_rows"},
    {"sigverifyd_gpu_crosscheck_mismatches_total", C, "GPU verdicts that differed from the libsecp256k1 cross-check.",
     L::none, counter<&Metrics::gpu_crosscheck_mismatches>, J::counters, "gpu_crosscheck_mismatches"},
    {"sigverifyd_gpu_errors_total", C, "GPU errors (failed launches, copies, self-tests).", L::none,
     counter<&Metrics::gpu_errors>, J::counters, "gpu_errors"},
    {"sigverifyd_gpu_timeouts_total", C,
     "Calls to a GPU that passed their deadline (--gpu-wait-floor): the GPU was left out as hung, the CPU verified "
     "their rows.",
     L::none, counter<&Metrics::gpu_timeouts>, J::counters, "gpu_timeouts"},
    {"sigverifyd_confirm_batches_total", C,
     "Batches verified on a GPU, by the rule that chose which verdicts libsecp256k1 confirmed.", L::rule,
     confirm_batches, J::counters, "confirm_batches"},
    {"sigverifyd_rows_in_place_total", C, "Rows a GPU read straight from the client's segment (no staging copy).",
     L::none, counter<&Metrics::rows_in_place>, J::counters, "rows_in_place"},
    {"sigverifyd_rows_staged_total", C, "Rows copied into a worker's private memory before verification.", L::none,
     counter<&Metrics::rows_staged>, J::counters, "rows_staged"},
    {"sigverifyd_split_cpu_rows_total", C,
     "Rows of batches on a GPU daemon that the split planner gave to the CPU workers.", L::none,
     counter<&Metrics::split_cpu_rows>, J::counters, "split_cpu_rows"},
    {"sigverifyd_lane_indebted_chunks_total", C,
     "Chunks of small batches whose client owed the lane workers CPU confirmation time (one lane worker at most).",
     L::none, counter<&Metrics::lane_indebted_chunks>, J::counters, "lane_indebted_chunks"},
    {"sigverifyd_split_gpu_latency_seconds", G, "Measured GPU round trip of a small chunk.", L::none,
     split<&SplitEstimates::gpu_latency_s>, J::split, "gpu_latency_seconds", has_split},
    {"sigverifyd_split_gpu_row_seconds", G, "Measured GPU seconds per row of a large chunk.", L::none,
     split<&SplitEstimates::gpu_row_s>, J::split, "gpu_row_seconds", has_split},
    {"sigverifyd_split_cpu_row_seconds", G, "Measured CPU seconds per row on one core.", L::none,
     split<&SplitEstimates::cpu_row_s>, J::split, "cpu_row_seconds", has_split},
    {"sigverifyd_confirm_repaired_rows_total", C,
     "Rows of multisig groups held by several chunks, re-verified at the end of their batch.", L::none,
     counter<&Metrics::confirm_repaired_rows>, J::counters, "confirm_repaired_rows"},
    {"sigverifyd_backend_workers", G, "Worker threads of each backend.", L::backend,
     per_backend<&BackendInfo::workers>, J::backends, "workers"},
    // The switched-off state as a gauge, so an alert needs no counter arithmetic.
    {"sigverifyd_backend_enabled", G,
     "1 while a backend verifies; 0 for a GPU that failed its self-test or was switched off after an error "
     "or a cross-check mismatch.",
     L::backend_kind, per_backend<&BackendInfo::enabled>, J::backends, "enabled"},
    {"sigverifyd_backend_crosscheck_mismatches_total", C,
     "Verdicts of each backend that differed from the libsecp256k1 cross-check.", L::backend,
     per_backend<&BackendInfo::crosscheck_mismatches>, J::backends, "crosscheck_mismatches"},
    {"sigverifyd_backend_rows_confirmed_total", C,
     "Rows of each backend's verdicts that libsecp256k1 re-verified (confirmed or sampled).", L::backend,
     per_backend<&BackendInfo::rows_confirmed>, J::backends, "rows_confirmed"},
    {"sigverifyd_backend_invalid_unconfirmed_total", C,
     "INVALID verdicts of passing multisig groups handed back without confirmation (groups rule).", L::backend,
     per_backend<&BackendInfo::invalid_unconfirmed>, J::backends, "invalid_unconfirmed"},
    {"sigverifyd_backend_rows_rewritten_total", C,
     "Disagreements on rows read in place that a private copy settled: the client rewrote them.", L::backend,
     per_backend<&BackendInfo::rows_rewritten>, J::backends, "rows_rewritten"},
    {"sigverifyd_backend_errors_total", C, "Failed chunks of each backend.", L::backend,
     per_backend<&BackendInfo::errors>, J::backends, "errors"},
    {"sigverifyd_backend_timeouts_total", C,
     "Calls to each GPU that passed their deadline (the GPU is then left out as hung).", L::backend,
     per_backend<&BackendInfo::timeouts>, J::backends, "timeouts"},
    {"sigverifyd_backend_no_kernel_image", G,
     "1 for a GPU the daemon's build has no machine code for (it serves on the CPU; rebuild with every "
     "architecture, docs/kernels.md).",
     L::backend, per_backend<&BackendInfo::no_kernel_image>, J::backends, "no_kernel_image"},
    {"sigverifyd_stats_connections", G, "Open stats socket connections.", L::none,
     snapshot<&StatsSnapshot::stats_connections>, J::gauges, "stats_connections"},
    {"sigverifyd_stats_requests_total", C, "Stats socket commands answered.", L::none,
     counter<&Metrics::stats_requests>, J::counters, "stats_requests"},
    {"sigverifyd_stats_refused_total", C, "Stats connections refused (permission denied, too many).", L::none,
     counter<&Metrics::stats_refused>, J::counters, "stats_refused"},
    {"sigverifyd_stats_dropped_total", C, "Stats readers dropped (too slow, idle, oversized request).", L::none,
     counter<&Metrics::stats_dropped>, J::counters, "stats_dropped"},
    {"sigverifyd_stats_evicted_total", C,
     "Idle stats connections closed to make room for a new one at the connection limit.", L::none,
     counter<&Metrics::stats_evicted>, J::counters, "stats_evicted"},
    {"sigverifyd_metrics_textfile_writes_total", C, "Successful writes of --metrics-textfile.", L::none,
     counter<&Metrics::textfile_writes>, J::counters, "textfile_writes"},
    {"sigverifyd_metrics_textfile_errors_total", C,
     "Failed writes of --metrics-textfile (the first one is logged; fix the path or its permissions).", L::none,
     counter<&Metrics::textfile_errors>, J::counters, "textfile_errors"},
    {"sigverifyd_config_reloads_total", C, "SIGHUPs that re-read the configuration and applied it.", L::none,
     counter<&Metrics::config_reloads>, J::counters, "config_reloads"},
    {"sigverifyd_config_reload_errors_total", C,
     "SIGHUPs whose configuration did not parse (the running configuration was kept).", L::none,
     counter<&Metrics::config_reload_errors>, J::counters, "config_reload_errors"},
    {"sigverifyd_cross_check_sample", G, "Current --cross-check-sample: 1 in N valid GPU verdicts re-verified.",
     L::none, cross_check_sample, J::settings, "cross_check_sample"},
    {"sigverifyd_cross_check_invalid_sample", G,
     "Current --cross-check-invalid-sample: 1 in N invalid verdicts of passing multisig groups re-verified.", L::none,
     cross_check_invalid_sample, J::settings, "cross_check_invalid_sample"},
};

constexpr std::string_view kRules[] = {"strict", "groups"};
constexpr std::string_view kVerdicts[] = {"valid", "invalid"};

}  // namespace

std::span<const MetricDef> metric_table() { return kMetrics; }

std::string label_escape(std::string_view v) {
    std::string out;
    for (char c : v) {
        if (c == '\\') out += "\\\\";
        else if (c == '"') out += "\\\"";
        else if (c == '\n') out += "\\n";
        else out += c;
    }
    return out;
}

std::size_t label_sets(MetricLabels labels, const StatsSnapshot& s) {
    switch (labels) {
    case MetricLabels::none:
    case MetricLabels::build:
    case MetricLabels::histogram: return 1;
    case MetricLabels::table: return kMetricTables;
    case MetricLabels::table_verdict: return 2 * kMetricTables;
    case MetricLabels::rule: return std::size(kRules);
    case MetricLabels::backend:
    case MetricLabels::backend_kind: return s.backends.size();
    }
    return 0;
}

std::string_view label_value(MetricLabels labels, std::size_t i) {
    switch (labels) {
    case MetricLabels::table: return table_label(i);
    case MetricLabels::table_verdict: return kVerdicts[i % 2];
    case MetricLabels::rule: return kRules[i];
    default: return {};
    }
}

std::string label_text(MetricLabels labels, std::size_t i, const StatsSnapshot& s) {
    auto quoted = [](std::string_view name, std::string_view value) {
        return std::string(name) + "=\"" + std::string(value) + "\"";
    };
    switch (labels) {
    case MetricLabels::none:
    case MetricLabels::histogram: return {};
    case MetricLabels::build:
        return quoted("version", label_escape(s.version)) + "," +
               quoted("protocol", std::to_string(s.protocol_version)) + "," +
               quoted("abi", std::to_string(s.abi_major) + "." + std::to_string(s.abi_minor));
    case MetricLabels::table: return quoted("table", table_label(i));
    case MetricLabels::table_verdict: return quoted("table", table_label(i / 2)) + "," + quoted("verdict", kVerdicts[i % 2]);
    case MetricLabels::rule: return quoted("rule", kRules[i]);
    case MetricLabels::backend: return quoted("backend", label_escape(s.backends[i].name));
    case MetricLabels::backend_kind:
        return quoted("backend", label_escape(s.backends[i].name)) + "," + quoted("kind", label_escape(s.backends[i].kind));
    }
    return {};
}

}  // namespace sigverify::daemon
