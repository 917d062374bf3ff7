// SPDX-License-Identifier: MIT
// Every metric the stats socket exports, one row each (metric_table.cpp): its
// Prometheus name, type and help, what it is labelled by, where its value
// lives, and where the JSON object ("stats json") puts it. Both renderers
// (render_prometheus, render_json in metrics.cpp) walk this table, in its
// order; a new metric is one row (and a review of the golden files of
// tests/ops/test_metrics_render.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "daemon/ops/metrics.hpp"

namespace sigverify::daemon {

// What a metric family's samples are labelled by. Each kind has a fixed
// number of label sets (label_sets), numbered from 0.
enum class MetricLabels : std::uint8_t {
    none,           // one sample, no label
    build,          // version, protocol, abi (the build information gauge)
    table,          // table="ecdsa" ... "unspecified" (kMetricTables)
    table_verdict,  // table, then verdict="valid" / "invalid": set 2t + 0 valid, 2t + 1 invalid
    rule,           // rule="strict" / "groups" (daemon/confirm/confirmation.hpp)
    backend,        // backend="NAME", one set per listed backend
    backend_kind,   // backend="NAME",kind="gpu|cpu"
    histogram,      // le="BOUND" buckets, then _sum and _count (the batch latency)
};

// Where "stats json" puts a metric's value(s).
enum class JsonPlace : std::uint8_t {
    none,       // Prometheus only
    top,        // j[key]
    counters,   // j["counters"][key]; rule sets: key_strict, key_groups
    gauges,     // j["gauges"][key]
    split,      // j["split"][key]
    settings,   // j["settings"][key]
    tables,     // j["tables"][TABLE][key]; table_verdict: j["tables"][TABLE]["valid" / "invalid"]
    backends,   // j["backends"][i][key]
    histogram,  // j[key] = {buckets: [{le, count}], sum, count}
};

struct MetricSample {
    enum class Kind : std::uint8_t { integer, real, flag };  // flag: 0/1 in Prometheus, a bool in JSON
    Kind kind = Kind::integer;
    std::uint64_t integer = 0;
    double real = 0;
};

// What a value is read from: the counters (relaxed loads) and the snapshot
// the server sampled for this request.
struct MetricSource {
    const Metrics& m;
    const StatsSnapshot& s;
};

struct MetricDef {
    std::string_view name;
    std::string_view type;  // "counter", "gauge", "histogram"
    std::string_view help;
    MetricLabels labels;
    // The value of label set `i` (0 when unlabelled); nullptr for the histogram.
    MetricSample (*value)(const MetricSource&, std::size_t i);
    JsonPlace json;
    std::string_view json_key;
    bool (*present)(const StatsSnapshot&) = nullptr;  // exported only when true; nullptr: always
};

std::span<const MetricDef> metric_table();

// How many label sets `labels` has for this snapshot.
std::size_t label_sets(MetricLabels labels, const StatsSnapshot& s);
// Prometheus label text of set i, without braces ("table=\"ecdsa\",verdict=\"valid\"").
std::string label_text(MetricLabels labels, std::size_t i, const StatsSnapshot& s);
// The last label's value of set i ("valid", "strict"): the JSON key of labelled counters.
std::string_view label_value(MetricLabels labels, std::size_t i);

// The histogram's buckets, non-cumulative as counted (the last one is +Inf).
inline std::uint64_t latency_bucket(const Metrics& m, std::size_t b) {
    return m.latency_buckets[b].load(std::memory_order_relaxed);
}

// Prometheus label values: backslash, quote and newline escaped.
std::string label_escape(std::string_view v);

}  // namespace sigverify::daemon
