// SPDX-License-Identifier: MIT
#include "daemon/metrics.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "daemon/mapping_guard.hpp"
#include "shm_protocol/wire_format.hpp"

namespace sigverify::daemon {
namespace {

constexpr std::array<std::string_view, kMetricTables> kTableLabels = {"ecdsa", "multisig", "schnorr", "threshold",
                                                                       "unspecified"};

std::uint64_t load(const Metrics::Counter& c) { return c.load(std::memory_order_relaxed); }

// Fixed point with up to 9 decimals, trailing zeros trimmed ("4.339237", "0", "1795994356.557075").
std::string fmt_double(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9f", v);
    std::string s = buf;
    if (s.find('.') != std::string::npos) {
        while (!s.empty() && s.back() == '0') s.pop_back();
        if (!s.empty() && s.back() == '.') s.pop_back();
    }
    return s;
}

std::string fmt_bound(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

// Prometheus label values: escape backslash, quote and newline.
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

struct Writer {
    std::string out;
    void header(std::string_view name, std::string_view type, std::string_view help) {
        out += "# HELP ";
        out += name;
        out += ' ';
        out += help;
        out += "\n# TYPE ";
        out += name;
        out += ' ';
        out += type;
        out += '\n';
    }
    void sample(std::string_view name, std::string_view labels, std::uint64_t v) {
        out += name;
        if (!labels.empty()) {
            out += '{';
            out += labels;
            out += '}';
        }
        out += ' ';
        out += std::to_string(v);
        out += '\n';
    }
    void sample(std::string_view name, std::string_view labels, double v) {
        out += name;
        if (!labels.empty()) {
            out += '{';
            out += labels;
            out += '}';
        }
        out += ' ';
        out += fmt_double(v);
        out += '\n';
    }
    void counter(std::string_view name, std::string_view help, std::uint64_t v) {
        header(name, "counter", help);
        sample(name, "", v);
    }
    void gauge(std::string_view name, std::string_view help, std::uint64_t v) {
        header(name, "gauge", help);
        sample(name, "", v);
    }
    void gauge(std::string_view name, std::string_view help, double v) {
        header(name, "gauge", help);
        sample(name, "", v);
    }
};

std::string table_lbl(std::size_t t) { return "table=\"" + std::string(kTableLabels[t]) + "\""; }

}  // namespace

std::string_view table_label(std::size_t index) {
    return index < kMetricTables ? kTableLabels[index] : kTableLabels[kMetricTables - 1];
}

std::size_t table_index(std::uint8_t table) {
    return table <= static_cast<std::uint8_t>(wire::Table::threshold) ? table : kMetricTables - 1;
}

void Metrics::observe_batch(std::uint8_t table, bool ok, std::uint64_t valid, std::uint64_t invalid,
                            std::uint64_t latency_ns) noexcept {
    const std::size_t t = table_index(table);
    rows_verified[t][1].fetch_add(valid, std::memory_order_relaxed);
    rows_verified[t][0].fetch_add(invalid, std::memory_order_relaxed);
    (ok ? batches[t] : batches_failed[t]).fetch_add(1, std::memory_order_relaxed);
    const double seconds = double(latency_ns) * 1e-9;
    std::size_t b = 0;
    while (b < kLatencyBounds.size() && seconds > kLatencyBounds[b]) ++b;
    latency_buckets[b].fetch_add(1, std::memory_order_relaxed);
    latency_sum_ns.fetch_add(latency_ns, std::memory_order_relaxed);
    latency_count.fetch_add(1, std::memory_order_relaxed);
}

std::string render_prometheus(const Metrics& m, const StatsSnapshot& s) {
    Writer w;
    w.header("sigverifyd_build_info", "gauge", "Build information (always 1).");
    w.sample("sigverifyd_build_info",
             "version=\"" + label_escape(s.version) + "\",protocol=\"" + std::to_string(s.protocol_version) +
                 "\",abi=\"" + std::to_string(s.abi_major) + "." + std::to_string(s.abi_minor) + "\"",
             std::uint64_t{1});
    w.header("sigverifyd_start_time_seconds", "gauge", "Start time of the daemon, seconds since the Unix epoch.");
    w.sample("sigverifyd_start_time_seconds", "", s.start_time_seconds);
    w.header("sigverifyd_uptime_seconds", "gauge", "Seconds since the daemon started.");
    w.sample("sigverifyd_uptime_seconds", "", s.uptime_seconds);

    w.header("sigverifyd_rows_verified_total", "counter", "Rows verified, by table and verdict.");
    for (std::size_t t = 0; t < kMetricTables; ++t)
        for (int v = 1; v >= 0; --v)
            w.sample("sigverifyd_rows_verified_total", table_lbl(t) + (v ? ",verdict=\"valid\"" : ",verdict=\"invalid\""),
                     load(m.rows_verified[t][v]));
    w.header("sigverifyd_batches_total", "counter", "Batches completed successfully, by table.");
    for (std::size_t t = 0; t < kMetricTables; ++t) w.sample("sigverifyd_batches_total", table_lbl(t), load(m.batches[t]));
    w.header("sigverifyd_batches_failed_total", "counter",
             "Batches completed with an error status (cancelled, shutting down, backend failure), by table.");
    for (std::size_t t = 0; t < kMetricTables; ++t)
        w.sample("sigverifyd_batches_failed_total", table_lbl(t), load(m.batches_failed[t]));
    w.header("sigverifyd_bytes_total", "counter", "Row bytes of accepted batches, by table.");
    for (std::size_t t = 0; t < kMetricTables; ++t) w.sample("sigverifyd_bytes_total", table_lbl(t), load(m.bytes[t]));

    w.header("sigverifyd_batch_latency_seconds", "histogram", "Batch latency from submission to completion.");
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b < kLatencyBounds.size(); ++b) {
        cumulative += load(m.latency_buckets[b]);
        w.sample("sigverifyd_batch_latency_seconds_bucket", "le=\"" + fmt_bound(kLatencyBounds[b]) + "\"", cumulative);
    }
    cumulative += load(m.latency_buckets[kLatencyBounds.size()]);
    w.sample("sigverifyd_batch_latency_seconds_bucket", "le=\"+Inf\"", cumulative);
    w.sample("sigverifyd_batch_latency_seconds_sum", "", double(load(m.latency_sum_ns)) * 1e-9);
    w.sample("sigverifyd_batch_latency_seconds_count", "", cumulative);

    w.gauge("sigverifyd_queue_depth", "Batches queued or being verified, all clients.", s.queued_jobs);
    std::uint64_t in_flight = 0, capacity = 0;
    for (const auto& c : s.clients) {
        in_flight += c.in_flight;
        capacity += c.ring_entries;
    }
    w.gauge("sigverifyd_ring_in_flight", "Submissions consumed from the rings and not yet completed, all clients.",
            in_flight);
    w.gauge("sigverifyd_ring_capacity", "Completion ring entries of all connected clients.", capacity);
    w.gauge("sigverifyd_clients_connected", "Connected clients.", s.connected_clients);
    w.gauge("sigverifyd_clients_max", "Configured --max-clients.", s.max_clients);
    w.counter("sigverifyd_connections_accepted_total", "Client connections accepted.", load(m.connections_accepted));
    w.counter("sigverifyd_connections_refused_total",
              "Client connections refused (permission denied, --max-clients reached).", load(m.connections_refused));
    w.counter("sigverifyd_accept_errors_total",
              "accept() failures for lack of descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM); each pauses "
              "accepting on that socket for 10 ms, doubling up to 1 s.",
              load(m.accept_errors));
    w.counter("sigverifyd_connections_rate_limited_total",
              "Client connections refused by the per-process or per-uid connection rate limit.",
              load(m.refused_rate_limited));
    w.counter("sigverifyd_connections_over_shm_budget_total",
              "Client connections refused because their segment would exceed the shared memory budget.",
              load(m.refused_shm_budget));
    w.gauge("sigverifyd_shm_bytes", "Shared memory handed out to clients and not yet released (truncated).",
            s.shm_bytes);
    w.gauge("sigverifyd_shm_budget_bytes", "Bound of sigverifyd_shm_bytes (--max-clients segments).",
            s.shm_budget_bytes);
    w.counter("sigverifyd_guard_refusals_total",
              "Sessions and buffer registrations refused because the SIGBUS guard had no free slot for their mapping "
              "(the table is sized from --max-clients and --max-registered-buffers: normally never).",
              guard::usage().refusals);
    w.counter("sigverifyd_segments_truncated_total",
              "Segments truncated to zero bytes when their session ended (pages freed even if a client kept them).",
              load(m.segments_truncated));
    w.counter("sigverifyd_protocol_errors_total",
              "Protocol errors: malformed handshakes, invalid submissions, ring index violations.", load(m.protocol_errors));
    w.counter("sigverifyd_chunks_total", "Chunks verified by the backends.", load(m.chunks));
    w.counter("sigverifyd_cpu_fallback_chunks_total", "Chunks the primary backend failed and the CPU re-ran.",
              load(m.cpu_fallback_chunks));
    w.counter("sigverifyd_cpu_fallback_rows_total", "Rows of those chunks.", load(m.cpu_fallback_rows));
    w.counter("sigverifyd_gpu_crosscheck_mismatches_total",
              "GPU verdicts that differed from the libsecp256k1 cross-check.", load(m.gpu_crosscheck_mismatches));
    w.counter("sigverifyd_gpu_errors_total", "GPU errors (failed launches, copies, self-tests).", load(m.gpu_errors));
    w.header("sigverifyd_confirm_batches_total", "counter",
             "Batches verified on a GPU, by the rule that chose which verdicts libsecp256k1 confirmed.");
    w.sample("sigverifyd_confirm_batches_total", "rule=\"strict\"", load(m.confirm_batches_strict));
    w.sample("sigverifyd_confirm_batches_total", "rule=\"groups\"", load(m.confirm_batches_groups));
    w.counter("sigverifyd_rows_in_place_total",
              "Rows a GPU read straight from the client's segment (no staging copy).", load(m.rows_in_place));
    w.counter("sigverifyd_rows_staged_total", "Rows copied into a worker's private memory before verification.",
              load(m.rows_staged));
    w.counter("sigverifyd_split_cpu_rows_total",
              "Rows of batches on a GPU daemon that the split planner gave to the CPU workers.",
              load(m.split_cpu_rows));
    if (s.has_split) {
        w.gauge("sigverifyd_split_gpu_latency_seconds", "Measured GPU round trip of a small chunk.",
                s.split.gpu_latency_s);
        w.gauge("sigverifyd_split_gpu_row_seconds", "Measured GPU seconds per row of a large chunk.", s.split.gpu_row_s);
        w.gauge("sigverifyd_split_cpu_row_seconds", "Measured CPU seconds per row on one worker.", s.split.cpu_row_s);
    }
    w.counter("sigverifyd_confirm_repaired_rows_total",
              "Rows of multisig groups held by several chunks, re-verified at the end of their batch.",
              load(m.confirm_repaired_rows));
    w.header("sigverifyd_backend_workers", "gauge", "Worker threads of each backend.");
    for (const auto& b : s.backends)
        w.sample("sigverifyd_backend_workers", "backend=\"" + label_escape(b.name) + "\"", std::uint64_t{b.workers});
    // The switched-off state as a gauge, so an alert needs no counter arithmetic.
    w.header("sigverifyd_backend_enabled", "gauge",
             "1 while a backend verifies; 0 for a GPU that failed its self-test or was switched off after an error "
             "or a cross-check mismatch.");
    for (const auto& b : s.backends)
        w.sample("sigverifyd_backend_enabled",
                 "backend=\"" + label_escape(b.name) + "\",kind=\"" + label_escape(b.kind) + "\"",
                 std::uint64_t{b.enabled ? 1u : 0u});
    w.header("sigverifyd_backend_crosscheck_mismatches_total", "counter",
             "Verdicts of each backend that differed from the libsecp256k1 cross-check.");
    for (const auto& b : s.backends)
        w.sample("sigverifyd_backend_crosscheck_mismatches_total", "backend=\"" + label_escape(b.name) + "\"",
                 b.crosscheck_mismatches);
    w.header("sigverifyd_backend_rows_confirmed_total", "counter",
             "Rows of each backend's verdicts that libsecp256k1 re-verified (confirmed or sampled).");
    for (const auto& b : s.backends)
        w.sample("sigverifyd_backend_rows_confirmed_total", "backend=\"" + label_escape(b.name) + "\"",
                 b.rows_confirmed);
    w.header("sigverifyd_backend_invalid_unconfirmed_total", "counter",
             "INVALID verdicts of passing multisig groups handed back without confirmation (groups rule).");
    for (const auto& b : s.backends)
        w.sample("sigverifyd_backend_invalid_unconfirmed_total", "backend=\"" + label_escape(b.name) + "\"",
                 b.invalid_unconfirmed);
    w.header("sigverifyd_backend_rows_rewritten_total", "counter",
             "Disagreements on rows read in place that a private copy settled: the client rewrote them.");
    for (const auto& b : s.backends)
        w.sample("sigverifyd_backend_rows_rewritten_total", "backend=\"" + label_escape(b.name) + "\"",
                 b.rows_rewritten);
    w.header("sigverifyd_backend_errors_total", "counter", "Failed chunks of each backend.");
    for (const auto& b : s.backends)
        w.sample("sigverifyd_backend_errors_total", "backend=\"" + label_escape(b.name) + "\"", b.errors);
    w.gauge("sigverifyd_stats_connections", "Open stats socket connections.", s.stats_connections);
    w.counter("sigverifyd_stats_requests_total", "Stats socket commands answered.", load(m.stats_requests));
    w.counter("sigverifyd_stats_refused_total", "Stats connections refused (permission denied, too many).",
              load(m.stats_refused));
    w.counter("sigverifyd_stats_dropped_total", "Stats readers dropped (too slow, idle, oversized request).",
              load(m.stats_dropped));
    w.counter("sigverifyd_stats_evicted_total",
              "Idle stats connections closed to make room for a new one at the connection limit.",
              load(m.stats_evicted));
    w.counter("sigverifyd_metrics_textfile_writes_total", "Successful writes of --metrics-textfile.", load(m.textfile_writes));
    w.counter("sigverifyd_metrics_textfile_errors_total",
              "Failed writes of --metrics-textfile (the first one is logged; fix the path or its permissions).",
              load(m.textfile_errors));
    w.counter("sigverifyd_config_reloads_total", "SIGHUPs that re-read the configuration and applied it.",
              load(m.config_reloads));
    w.counter("sigverifyd_config_reload_errors_total",
              "SIGHUPs whose configuration did not parse (the running configuration was kept).",
              load(m.config_reload_errors));
    w.gauge("sigverifyd_cross_check_sample", "Current --cross-check-sample: 1 in N valid GPU verdicts re-verified.",
            std::uint64_t{s.settings.cross_check_sample});
    w.gauge("sigverifyd_cross_check_invalid_sample",
            "Current --cross-check-invalid-sample: 1 in N invalid verdicts of passing multisig groups re-verified.",
            std::uint64_t{s.settings.cross_check_invalid_sample});
    return std::move(w.out);
}

std::string render_json(const Metrics& m, const StatsSnapshot& s) {
    using nlohmann::json;
    json j;
    j["version"] = s.version;
    j["protocol_version"] = s.protocol_version;
    j["abi"] = std::to_string(s.abi_major) + "." + std::to_string(s.abi_minor);
    char epoch[17];
    std::snprintf(epoch, sizeof epoch, "%016" PRIx64, s.epoch);
    j["epoch"] = epoch;
    j["start_time_seconds"] = s.start_time_seconds;
    j["uptime_seconds"] = s.uptime_seconds;
    json tables = json::object();
    for (std::size_t t = 0; t < kMetricTables; ++t) {
        tables[std::string(kTableLabels[t])] = {{"valid", load(m.rows_verified[t][1])},
                                                {"invalid", load(m.rows_verified[t][0])},
                                                {"batches", load(m.batches[t])},
                                                {"batches_failed", load(m.batches_failed[t])},
                                                {"bytes", load(m.bytes[t])}};
    }
    j["tables"] = tables;
    json buckets = json::array();
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b <= kLatencyBounds.size(); ++b) {
        cumulative += load(m.latency_buckets[b]);
        buckets.push_back({{"le", b < kLatencyBounds.size() ? json(kLatencyBounds[b]) : json("+Inf")},
                           {"count", cumulative}});
    }
    j["batch_latency_seconds"] = {
        {"buckets", buckets}, {"sum", double(load(m.latency_sum_ns)) * 1e-9}, {"count", cumulative}};
    std::uint64_t in_flight = 0, capacity = 0;
    for (const auto& c : s.clients) {
        in_flight += c.in_flight;
        capacity += c.ring_entries;
    }
    j["gauges"] = {{"queue_depth", s.queued_jobs},       {"ring_in_flight", in_flight},
                   {"ring_capacity", capacity},          {"clients_connected", s.connected_clients},
                   {"clients_max", s.max_clients},       {"stats_connections", s.stats_connections},
                   {"shm_bytes", s.shm_bytes},           {"shm_budget_bytes", s.shm_budget_bytes}};
    if (s.has_split)
        j["split"] = {{"gpu_latency_seconds", s.split.gpu_latency_s},
                      {"gpu_row_seconds", s.split.gpu_row_s},
                      {"cpu_row_seconds", s.split.cpu_row_s}};
    j["counters"] = {{"connections_accepted", load(m.connections_accepted)},
                     {"connections_refused", load(m.connections_refused)},
                     {"protocol_errors", load(m.protocol_errors)},
                     {"accept_errors", load(m.accept_errors)},
                     {"connections_rate_limited", load(m.refused_rate_limited)},
                     {"connections_over_shm_budget", load(m.refused_shm_budget)},
                     {"segments_truncated", load(m.segments_truncated)},
                     {"guard_refusals", guard::usage().refusals},
                     {"chunks", load(m.chunks)},
                     {"cpu_fallback_chunks", load(m.cpu_fallback_chunks)},
                     {"cpu_fallback_rows", load(m.cpu_fallback_rows)},
                     {"gpu_crosscheck_mismatches", load(m.gpu_crosscheck_mismatches)},
                     {"gpu_errors", load(m.gpu_errors)},
                     {"confirm_batches_strict", load(m.confirm_batches_strict)},
                     {"confirm_batches_groups", load(m.confirm_batches_groups)},
                     {"confirm_repaired_rows", load(m.confirm_repaired_rows)},
                     {"split_cpu_rows", load(m.split_cpu_rows)},
                     {"rows_in_place", load(m.rows_in_place)},
                     {"rows_staged", load(m.rows_staged)},
                     {"stats_requests", load(m.stats_requests)},
                     {"stats_refused", load(m.stats_refused)},
                     {"stats_dropped", load(m.stats_dropped)},
                     {"stats_evicted", load(m.stats_evicted)},
                     {"textfile_writes", load(m.textfile_writes)},
                     {"textfile_errors", load(m.textfile_errors)},
                     {"config_reloads", load(m.config_reloads)},
                     {"config_reload_errors", load(m.config_reload_errors)}};
    j["settings"] = {{"log_level", s.settings.log_level},
                     {"log_format", s.settings.log_format},
                     {"cross_check_sample", s.settings.cross_check_sample},
                     {"cross_check_invalid_sample", s.settings.cross_check_invalid_sample},
                     {"metrics_textfile", s.settings.metrics_textfile},
                     {"metrics_interval", s.settings.metrics_interval}};
    json clients = json::array();
    for (const auto& c : s.clients)
        clients.push_back({{"id", c.id},
                           {"pid", c.pid},
                           {"uid", c.uid},
                           {"gid", c.gid},
                           {"name", c.name},
                           {"batches", c.batches},
                           {"rows", c.rows},
                           {"in_flight", c.in_flight},
                           {"ring_entries", c.ring_entries},
                           {"arena_size", c.arena_size}});
    j["clients"] = clients;
    json backends = json::array();
    for (const auto& b : s.backends)
        backends.push_back({{"name", b.name},
                            {"kind", b.kind},
                            {"device", b.device},
                            {"workers", b.workers},
                            {"memory_bytes", b.memory_bytes},
                            {"self_test", b.self_test},
                            {"enabled", b.enabled},
                            {"crosscheck_mismatches", b.crosscheck_mismatches},
                            {"errors", b.errors},
                            {"rows_confirmed", b.rows_confirmed},
                            {"invalid_unconfirmed", b.invalid_unconfirmed},
                            {"rows_rewritten", b.rows_rewritten}});
    j["backends"] = backends;
    // Client names are sanitized to printable ASCII; replace anything else anyway.
    return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string render_clients(const StatsSnapshot& s) {
    std::string out;
    char line[512];
    for (const auto& c : s.clients) {
        std::snprintf(line, sizeof line,
                      "id=%" PRIu64 " pid=%" PRId64 " uid=%u gid=%u name=\"%s\" batches=%" PRIu64 " rows=%" PRIu64
                      " in_flight=%u ring=%u arena=%" PRIu64 "\n",
                      c.id, c.pid, c.uid, c.gid, label_escape(c.name).c_str(), c.batches, c.rows, c.in_flight,
                      c.ring_entries, c.arena_size);
        out += line;
    }
    if (s.clients.empty()) out = "no clients connected\n";
    return out;
}

std::string render_backends(const StatsSnapshot& s) {
    std::string out;
    char line[512];
    for (const auto& b : s.backends) {
        std::snprintf(line, sizeof line,
                      "backend=%s kind=%s device=\"%s\" workers=%u memory=%" PRIu64
                      " self_test=\"%s\" crosscheck_mismatches=%" PRIu64 " errors=%" PRIu64
                      " rows_confirmed=%" PRIu64 " invalid_unconfirmed=%" PRIu64 "\n",
                      b.name.c_str(), b.kind.c_str(), label_escape(b.device).c_str(), b.workers, b.memory_bytes,
                      label_escape(b.self_test).c_str(), b.crosscheck_mismatches, b.errors, b.rows_confirmed,
                      b.invalid_unconfirmed);
        out += line;
    }
    return out;
}

std::string render_version(const StatsSnapshot& s) {
    char epoch[17];
    std::snprintf(epoch, sizeof epoch, "%016" PRIx64, s.epoch);
    return "sigverifyd " + s.version + " protocol " + std::to_string(s.protocol_version) + " abi " +
           std::to_string(s.abi_major) + "." + std::to_string(s.abi_minor) + " epoch " + epoch + "\n";
}

std::string stats_help() {
    return "commands (one per connection, newline-terminated):\n"
           "  help        this list\n"
           "  stats       all metrics, Prometheus text exposition format\n"
           "  stats json  all metrics, clients and backends as one JSON object\n"
           "  clients     one line per connected client: pid, uid, name, batches, rows, in flight\n"
           "  backends    one line per backend: workers, device, memory, self-test, mismatches, errors\n"
           "  version     daemon version, protocol and ABI\n";
}

bool write_text_atomically(const std::string& path, const std::string& text, std::string& error) {
    const std::string tmp = path + ".tmp." + std::to_string(getpid());
    const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) {
        error = "open " + tmp + ": " + std::strerror(errno);
        return false;
    }
    std::size_t off = 0;
    while (off < text.size()) {
        const ssize_t n = write(fd, text.data() + off, text.size() - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            error = "write " + tmp + ": " + std::strerror(errno);
            close(fd);
            unlink(tmp.c_str());
            return false;
        }
        off += std::size_t(n);
    }
    const bool synced = fsync(fd) == 0;
    const bool closed = close(fd) == 0;
    if (!synced || !closed) {
        error = "fsync/close " + tmp + ": " + std::strerror(errno);
        unlink(tmp.c_str());
        return false;
    }
    if (rename(tmp.c_str(), path.c_str()) != 0) {
        error = "rename " + tmp + " -> " + path + ": " + std::strerror(errno);
        unlink(tmp.c_str());
        return false;
    }
    return true;
}

}  // namespace sigverify::daemon
