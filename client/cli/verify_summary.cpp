// SPDX-License-Identifier: MIT
#include "client/cli/verify_summary.hpp"

#include <cstdio>

namespace sigverify::cli {
namespace {

double per_second(std::uint64_t rows, double seconds) { return seconds > 0 ? double(rows) / seconds : 0.0; }

std::string epoch_hex(std::uint64_t epoch) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)epoch);
    return buf;
}

}  // namespace

std::string summary_text(const VerifySummary& s) {
    const std::uint64_t rows = s.valid + s.invalid;
    std::string how = s.daemon ? "daemon" : "local";
    if (s.columns) how += ", columns";
    how += s.daemon ? ", epoch " + epoch_hex(s.epoch) : ", " + std::to_string(s.threads) + " threads";
    char line[512];
    std::snprintf(line, sizeof line, "%s (%s): rows=%llu valid=%llu invalid=%llu seconds=%.3f rows/s=%.0f\n",
                  s.collect ? "collect" : "verify", how.c_str(), (unsigned long long)rows, (unsigned long long)s.valid,
                  (unsigned long long)s.invalid, s.seconds, per_second(rows, s.seconds));
    std::string text = line;
    if (s.baseline) {
        const BaselineSummary& b = *s.baseline;
        std::snprintf(line, sizeof line,
                      "baseline: plain libsecp256k1 calls, 1 thread: rows=%llu valid=%llu seconds=%.3f rows/s=%.0f "
                      "(sigverify %u threads = %.2fx)\n",
                      (unsigned long long)b.rows, (unsigned long long)b.valid, b.seconds,
                      per_second(b.rows, b.seconds), s.threads, s.seconds > 0 ? b.seconds / s.seconds : 0.0);
        text += line;
    }
    return text;
}

nlohmann::ordered_json summary_json(const VerifySummary& s, std::string_view status) {
    const std::uint64_t rows = s.valid + s.invalid;
    nlohmann::ordered_json j{{"command", s.collect ? "collect" : "verify"},
                             {"status", status},
                             {"where", s.daemon ? "daemon" : "local"},
                             {"input", s.columns ? "columns" : "rows"}};
    if (s.daemon) j["epoch"] = epoch_hex(s.epoch);
    else j["threads"] = s.threads;
    j["rows"] = rows;
    j["valid"] = s.valid;
    j["invalid"] = s.invalid;
    j["seconds"] = s.seconds;
    j["rows_per_second"] = per_second(rows, s.seconds);
    if (s.baseline) {
        const BaselineSummary& b = *s.baseline;
        j["baseline"] = {{"threads", 1},
                         {"rows", b.rows},
                         {"valid", b.valid},
                         {"seconds", b.seconds},
                         {"rows_per_second", per_second(b.rows, b.seconds)},
                         {"speedup", s.seconds > 0 ? b.seconds / s.seconds : 0.0}};
    }
    return j;
}

}  // namespace sigverify::cli
