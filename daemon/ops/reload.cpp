// SPDX-License-Identifier: MIT
#include "daemon/ops/reload.hpp"

#include <string_view>

namespace sigverify::daemon {
namespace {

std::string text(const std::string& v) { return v.empty() ? std::string("(none)") : v; }
template <class T>
std::string text(const T& v) {
    return std::to_string(v);
}
std::string text(LogFormat v) { return std::string(to_string(v)); }

template <class T>
void runtime_key(ReloadPlan& plan, std::string_view key, const T& old_value, const T& new_value) {
    if (old_value == new_value) return;
    plan.applied.push_back(std::string(key) + " " + text(old_value) + " -> " + text(new_value));
}

// Restart keys are only named: their values can be long (gpus) and are in the file.
template <class T>
void restart_key(ReloadPlan& plan, std::string_view key, const T& old_value, const T& new_value) {
    if (!(old_value == new_value)) plan.need_restart.emplace_back(key);
}

}  // namespace

ReloadPlan plan_reload(const Config& a, const Config& b) {
    ReloadPlan p;
    runtime_key(p, "log-level", a.log_level, b.log_level);
    runtime_key(p, "log-format", a.log_format, b.log_format);
    runtime_key(p, "log-file", a.log_file, b.log_file);
    runtime_key(p, "cross-check-sample", a.cross_check_sample, b.cross_check_sample);
    runtime_key(p, "cross-check-invalid-sample", a.cross_check_invalid_sample, b.cross_check_invalid_sample);
    runtime_key(p, "metrics-textfile", a.metrics_textfile, b.metrics_textfile);
    runtime_key(p, "metrics-interval", a.metrics_interval, b.metrics_interval);
    restart_key(p, "runtime-dir", a.runtime_dir, b.runtime_dir);
    restart_key(p, "backend", a.backend, b.backend);
    restart_key(p, "cpu-threads", a.cpu_threads, b.cpu_threads);
    restart_key(p, "max-clients", a.max_clients, b.max_clients);
    restart_key(p, "max-segments-per-uid", a.max_segments_per_uid, b.max_segments_per_uid);
    restart_key(p, "worker-nice", a.worker_nice, b.worker_nice);
    restart_key(p, "pin-workers", a.pin_workers, b.pin_workers);
    restart_key(p, "ring-entries", a.ring_entries, b.ring_entries);
    restart_key(p, "arena-size", a.arena_size, b.arena_size);
    restart_key(p, "max-registered-bytes", a.max_registered_bytes, b.max_registered_bytes);
    restart_key(p, "max-registered-buffers", a.max_registered_buffers, b.max_registered_buffers);
    restart_key(p, "group", a.group, b.group);
    restart_key(p, "foreground", a.foreground, b.foreground);
    restart_key(p, "shutdown-timeout-ms", a.shutdown_timeout_ms, b.shutdown_timeout_ms);
    restart_key(p, "chunk-rows", a.chunk_rows, b.chunk_rows);
    restart_key(p, "gpus", a.gpus, b.gpus);
    restart_key(p, "confirm", a.confirm, b.confirm);
    restart_key(p, "gpu-chunk-rows", a.gpu_chunk_rows, b.gpu_chunk_rows);
    restart_key(p, "gpu-split", a.gpu_split, b.gpu_split);
    restart_key(p, "gpu-chunks-in-flight", a.gpu_chunks_in_flight, b.gpu_chunks_in_flight);
    restart_key(p, "gpu-min-rows", a.gpu_min_rows, b.gpu_min_rows);
    restart_key(p, "gpu-wait-floor", a.gpu_wait_floor_s, b.gpu_wait_floor_s);
    return p;
}

void apply_runtime_keys(Config& running, const Config& reread) {
    running.log_level = reread.log_level;
    running.log_format = reread.log_format;
    running.log_file = reread.log_file;
    running.cross_check_sample = reread.cross_check_sample;
    running.cross_check_invalid_sample = reread.cross_check_invalid_sample;
    running.metrics_textfile = reread.metrics_textfile;
    running.metrics_interval = reread.metrics_interval;
}

std::string describe_reload(const std::string& file, const ReloadPlan& plan) {
    std::string line = "reloaded " + (file.empty() ? std::string("the command line (no --config)") : file) + ": ";
    if (plan.applied.empty()) line += "no run-time changes";
    for (std::size_t i = 0; i < plan.applied.size(); ++i) line += (i ? ", " : "") + plan.applied[i];
    if (!plan.need_restart.empty()) {
        line += "; changes that need a restart (not applied): ";
        for (std::size_t i = 0; i < plan.need_restart.size(); ++i) line += (i ? ", " : "") + plan.need_restart[i];
    }
    return line;
}

}  // namespace sigverify::daemon
