// SPDX-License-Identifier: MIT
// The stats socket's renderers against committed golden output: every metric
// name, type, help text, label and sample of the Prometheus exposition, the
// whole JSON object ("stats json") and the clients / backends / version
// listings, from a fixed set of counters and a
// fixed snapshot where every value differs from every other. So a renderer
// change that renames, drops, reorders or moves a metric (or a JSON key) fails
// here, whatever the live tests happen to read.
//
// After an intended change (a new metric): SIGVERIFY_UPDATE_GOLDEN=1 rewrites
// the files; review their diff.
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "daemon/ops/metrics.hpp"

using namespace sigverify::daemon;

namespace {

// Every counter of m set to a value of its own (base, base + 1, ...).
void fill(Metrics& m) {
    std::uint64_t v = 1000;
    auto next = [&] { return v += 7; };
    for (auto& t : m.rows_verified)
        for (auto& c : t) c = next();
    for (auto& c : m.batches) c = next();
    for (auto& c : m.batches_failed) c = next();
    for (auto& c : m.bytes) c = next();
    for (auto& c : m.latency_buckets) c = next();
    m.latency_sum_ns = 123456789012;
    m.latency_count = next();
    for (Metrics::Counter* c :
         {&m.connections_accepted, &m.accept_errors, &m.refused_rate_limited, &m.refused_shm_budget,
          &m.segments_truncated, &m.chunks, &m.progress, &m.cpu_fallback_chunks, &m.cpu_fallback_rows,
          &m.gpu_crosscheck_mismatches, &m.gpu_errors, &m.confirm_batches_strict, &m.confirm_batches_groups,
          &m.confirm_repaired_rows, &m.rows_in_place, &m.rows_staged, &m.split_cpu_rows, &m.stats_requests,
          &m.stats_refused, &m.stats_dropped, &m.stats_evicted, &m.textfile_writes, &m.textfile_errors,
          &m.config_reloads, &m.config_reload_errors, &m.lane_indebted_chunks, &m.gpu_timeouts, &m.info_refused})
        *c = next();
}

StatsSnapshot snapshot(Metrics& m) {
    StatsSnapshot s;
    s.version = "test-version";
    s.protocol_version = 3;
    s.abi_major = 1;
    s.abi_minor = 9;
    s.start_time_seconds = 1795994356.557075;
    s.uptime_seconds = 4.339237;
    s.epoch = 0x0123456789abcdefull;
    s.queued_jobs = 17;
    s.connected_clients = 2;
    s.max_clients = 64;
    m.connections_refused = 23;
    m.protocol_errors = 29;
    m.registrations_refused_file_system = 31;
    s.stats_connections = 3;
    s.shm_bytes = 1 << 20;
    s.shm_budget_bytes = 1 << 30;
    s.clients.push_back({11, 4242, 1000, 1001, "node \"one\"", 31, 37000, 5, 64, 1 << 22});
    s.clients.push_back({12, 4343, 1002, 1003, "cli", 41, 43000, 7, 128, 1 << 23});
    BackendInfo gpu;
    gpu.name = "gpu0";
    gpu.kind = "gpu";
    gpu.device = "host kernel (CPU)";
    gpu.workers = 4;
    gpu.memory_bytes = 1ull << 34;
    gpu.self_test = "passed; switched off: disagrees";
    gpu.enabled = false;
    gpu.crosscheck_mismatches = 53;
    gpu.errors = 59;
    gpu.rows_confirmed = 61;
    gpu.invalid_unconfirmed = 67;
    gpu.rows_rewritten = 71;
    gpu.timeouts = 73;
    BackendInfo cpu;
    cpu.name = "cpu-fallback";
    cpu.kind = "cpu";
    cpu.device = "libsecp256k1";
    cpu.workers = 2;
    cpu.self_test = "passed";
    s.backends = {gpu, cpu};
    s.settings.log_level = "info";
    s.settings.log_format = "text";
    s.settings.cross_check_sample = 1024;
    s.settings.cross_check_invalid_sample = 64;
    s.settings.metrics_textfile = "/var/lib/node_exporter/sigverifyd.prom";
    s.settings.metrics_interval = 15;
    s.has_split = true;
    s.split.gpu_latency_s = 0.000125;
    s.split.gpu_row_s = 0.00000004;
    s.split.cpu_row_s = 0.00002;
    return s;
}

std::string golden_path(const char* name) { return std::string(SIGVERIFY_GOLDEN_DIR) + "/" + name; }

// The licence line every committed text file carries (scripts/check-spdx.py),
// first in a golden file that is not JSON; not part of the output.
constexpr std::string_view kSpdxLine = "# SPDX-License-Identifier: MIT\n";

// Compares with the golden file; names the first line that differs.
void check_golden(const char* name, const std::string& got) {
    const std::string path = golden_path(name);
    const bool json = path.ends_with(".json");
    if (std::getenv("SIGVERIFY_UPDATE_GOLDEN") != nullptr) {
        std::ofstream(path, std::ios::binary) << (json ? "" : kSpdxLine) << got;
        WARN("rewrote " << path);
        return;
    }
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in.good());
    std::stringstream file;
    file << in.rdbuf();
    std::string text = file.str();
    if (!json && text.starts_with(kSpdxLine)) text.erase(0, kSpdxLine.size());
    const std::stringstream want(text);
    if (want.str() == got) return;
    std::istringstream a(want.str()), b(got);
    std::string la, lb;
    int line = 0;
    while (true) {
        ++line;
        const bool ea = !std::getline(a, la), eb = !std::getline(b, lb);
        if (ea && eb) break;
        if (ea != eb || la != lb) {
            INFO(name << " line " << line << "\n  golden:   " << (ea ? "<end>" : la) << "\n  rendered: "
                      << (eb ? "<end>" : lb));
            CHECK(false);
            return;
        }
    }
    CHECK(want.str() == got);
}

}  // namespace

TEST_CASE("the Prometheus exposition is the golden one", "[metrics]") {
    Metrics m;
    fill(m);
    const StatsSnapshot s = snapshot(m);
    check_golden("stats.prom", render_prometheus(m, s));
}

TEST_CASE("the stats JSON is the golden one", "[metrics]") {
    Metrics m;
    fill(m);
    const StatsSnapshot s = snapshot(m);
    const std::string text = render_json(m, s);
    // One object on one line, newline-terminated (what `sigverify stats --json` reads).
    REQUIRE(text.size() > 2);
    CHECK(text.back() == '\n');
    CHECK(text.find('\n') == text.size() - 1);
    // Compared indented (the dump keeps every key, value and number type), so
    // a difference names its line.
    check_golden("stats.json", nlohmann::json::parse(text).dump(2) + "\n");
}

TEST_CASE("the clients, backends and version listings are the golden ones", "[metrics]") {
    Metrics m;
    fill(m);
    const StatsSnapshot s = snapshot(m);
    check_golden("stats.listings", render_clients(s) + render_backends(s) + render_version(s));
}

TEST_CASE("a daemon without a split model exports no split gauges", "[metrics]") {
    Metrics m;
    fill(m);
    StatsSnapshot s = snapshot(m);
    s.has_split = false;
    CHECK(render_prometheus(m, s).find("sigverifyd_split_gpu") == std::string::npos);
    CHECK(render_json(m, s).find("\"split\"") == std::string::npos);
}
