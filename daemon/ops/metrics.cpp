// SPDX-License-Identifier: MIT
#include "daemon/ops/metrics.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>

#include "daemon/ops/metric_table.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

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

// Prometheus text exposition: a family's # HELP and # TYPE lines, then its samples.
void header(std::string& out, const MetricDef& d) {
    out += "# HELP ";
    out += d.name;
    out += ' ';
    out += d.help;
    out += "\n# TYPE ";
    out += d.name;
    out += ' ';
    out += d.type;
    out += '\n';
}

void sample(std::string& out, std::string_view name, std::string_view labels, const MetricSample& v) {
    out += name;
    if (!labels.empty()) {
        out += '{';
        out += labels;
        out += '}';
    }
    out += ' ';
    out += v.kind == MetricSample::Kind::real ? fmt_double(v.real) : std::to_string(v.integer);
    out += '\n';
}

MetricSample integer(std::uint64_t v) { return {MetricSample::Kind::integer, v, 0}; }

// The batch latency: cumulative buckets, then _sum and _count.
void latency_histogram(std::string& out, std::string_view name, const Metrics& m) {
    const std::string bucket = std::string(name) + "_bucket";
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b < kLatencyBounds.size(); ++b) {
        cumulative += latency_bucket(m, b);
        sample(out, bucket, "le=\"" + fmt_bound(kLatencyBounds[b]) + "\"", integer(cumulative));
    }
    cumulative += latency_bucket(m, kLatencyBounds.size());
    sample(out, bucket, "le=\"+Inf\"", integer(cumulative));
    sample(out, std::string(name) + "_sum", "", {MetricSample::Kind::real, 0, double(load(m.latency_sum_ns)) * 1e-9});
    sample(out, std::string(name) + "_count", "", integer(cumulative));
}

nlohmann::json json_value(const MetricSample& v) {
    switch (v.kind) {
    case MetricSample::Kind::real: return v.real;
    case MetricSample::Kind::flag: return v.integer != 0;
    case MetricSample::Kind::integer: break;
    }
    return v.integer;
}

// A connected client's fields, once for both listings: the key "stats json"
// gives each, the key of the `clients` line, and the value.
struct ClientField {
    std::string_view json_key;
    std::string_view text_key;
    nlohmann::json (*value)(const ClientInfo&);
};
constexpr ClientField kClientFields[] = {
    {"id", "id", [](const ClientInfo& c) { return nlohmann::json(c.id); }},
    {"pid", "pid", [](const ClientInfo& c) { return nlohmann::json(c.pid); }},
    {"uid", "uid", [](const ClientInfo& c) { return nlohmann::json(c.uid); }},
    {"gid", "gid", [](const ClientInfo& c) { return nlohmann::json(c.gid); }},
    {"name", "name", [](const ClientInfo& c) { return nlohmann::json(c.name); }},
    {"batches", "batches", [](const ClientInfo& c) { return nlohmann::json(c.batches); }},
    {"rows", "rows", [](const ClientInfo& c) { return nlohmann::json(c.rows); }},
    {"in_flight", "in_flight", [](const ClientInfo& c) { return nlohmann::json(c.in_flight); }},
    {"ring_entries", "ring", [](const ClientInfo& c) { return nlohmann::json(c.ring_entries); }},
    {"arena_size", "arena", [](const ClientInfo& c) { return nlohmann::json(c.arena_size); }},
};

nlohmann::json latency_json(const Metrics& m) {
    using nlohmann::json;
    json buckets = json::array();
    std::uint64_t cumulative = 0;
    for (std::size_t b = 0; b <= kLatencyBounds.size(); ++b) {
        cumulative += latency_bucket(m, b);
        buckets.push_back({{"le", b < kLatencyBounds.size() ? json(kLatencyBounds[b]) : json("+Inf")},
                           {"count", cumulative}});
    }
    return {{"buckets", buckets}, {"sum", double(load(m.latency_sum_ns)) * 1e-9}, {"count", cumulative}};
}

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
    const MetricSource src{m, s};
    std::string out;
    for (const MetricDef& d : metric_table()) {
        if (d.present != nullptr && !d.present(s)) continue;
        header(out, d);
        if (d.labels == MetricLabels::histogram) {
            latency_histogram(out, d.name, m);
            continue;
        }
        for (std::size_t i = 0, n = label_sets(d.labels, s); i < n; ++i)
            sample(out, d.name, label_text(d.labels, i, s), d.value(src, i));
    }
    return out;
}

std::string render_json(const Metrics& m, const StatsSnapshot& s) {
    using nlohmann::json;
    const MetricSource src{m, s};
    json j;
    // What describes the daemon, its clients and backends (no metric).
    j["version"] = s.version;
    j["protocol_version"] = s.protocol_version;
    j["abi"] = std::to_string(s.abi_major) + "." + std::to_string(s.abi_minor);
    char epoch[17];
    std::snprintf(epoch, sizeof epoch, "%016" PRIx64, s.epoch);
    j["epoch"] = epoch;
    j["settings"] = {{"log_level", s.settings.log_level},
                     {"log_format", s.settings.log_format},
                     {"metrics_textfile", s.settings.metrics_textfile},
                     {"metrics_interval", s.settings.metrics_interval}};
    json clients = json::array();
    for (const auto& c : s.clients) {
        json client = json::object();
        for (const ClientField& f : kClientFields) client[std::string(f.json_key)] = f.value(c);
        clients.push_back(std::move(client));
    }
    j["clients"] = clients;
    json backends = json::array();
    for (const auto& b : s.backends)
        backends.push_back({{"name", b.name},
                            {"kind", b.kind},
                            {"device", b.device},
                            {"memory_bytes", b.memory_bytes},
                            {"self_test", b.self_test}});
    j["tables"] = json::object();
    j["counters"] = json::object();
    j["gauges"] = json::object();
    // Every metric, where the table says.
    for (const MetricDef& d : metric_table()) {
        if (d.json == JsonPlace::none || (d.present != nullptr && !d.present(s))) continue;
        const std::string key(d.json_key);
        if (d.json == JsonPlace::histogram) {
            j[key] = latency_json(m);
            continue;
        }
        for (std::size_t i = 0, n = label_sets(d.labels, s); i < n; ++i) {
            const json v = json_value(d.value(src, i));
            switch (d.json) {
            case JsonPlace::top: j[key] = v; break;
            case JsonPlace::counters:
                j["counters"][d.labels == MetricLabels::rule ? key + "_" + std::string(label_value(d.labels, i)) : key] =
                    v;
                break;
            case JsonPlace::gauges: j["gauges"][key] = v; break;
            case JsonPlace::split: j["split"][key] = v; break;
            case JsonPlace::settings: j["settings"][key] = v; break;
            case JsonPlace::tables: {
                const std::size_t t = d.labels == MetricLabels::table_verdict ? i / 2 : i;
                const std::string field = key.empty() ? std::string(label_value(d.labels, i)) : key;
                j["tables"][std::string(table_label(t))][field] = v;
                break;
            }
            case JsonPlace::backends: backends[i][key] = v; break;
            case JsonPlace::none:
            case JsonPlace::histogram: break;
            }
        }
    }
    j["backends"] = backends;
    // Client names are sanitized to printable ASCII; replace anything else anyway.
    return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string render_clients(const StatsSnapshot& s) {
    if (s.clients.empty()) return "no clients connected\n";
    std::string out;
    for (const auto& c : s.clients) {
        const char* sep = "";
        for (const ClientField& f : kClientFields) {
            const nlohmann::json v = f.value(c);
            out += sep;
            out += f.text_key;
            out += '=';
            if (v.is_string()) {
                out += '"';
                out += label_escape(v.get<std::string>());
                out += '"';
            } else {
                out += v.dump();
            }
            sep = " ";
        }
        out += '\n';
    }
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
