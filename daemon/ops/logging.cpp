// SPDX-License-Identifier: MIT
#include "daemon/ops/logging.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#ifdef SIGVERIFY_HAVE_LIBSYSTEMD
#include <spdlog/sinks/systemd_sink.h>
#endif

namespace sigverify::daemon {
namespace {

void append_json_string(spdlog::memory_buf_t& out, spdlog::string_view_t text) {
    out.push_back('"');
    for (const char c : text) {
        switch (c) {
            case '"': out.append(std::string_view("\\\"")); break;
            case '\\': out.append(std::string_view("\\\\")); break;
            case '\n': out.append(std::string_view("\\n")); break;
            case '\r': out.append(std::string_view("\\r")); break;
            case '\t': out.append(std::string_view("\\t")); break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char esc[8];
                    std::snprintf(esc, sizeof esc, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
                    out.append(std::string_view(esc));
                } else {
                    out.push_back(c);
                }
        }
    }
    out.push_back('"');
}

// Log collectors (Loki, Elasticsearch, jq) read one object per line; the time
// is UTC with milliseconds so lines of several hosts sort together.
class JsonFormatter final : public spdlog::formatter {
public:
    void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
        const auto since_epoch = msg.time.time_since_epoch();
        const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(since_epoch);
        const auto millis = std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch - seconds).count();
        const std::time_t t = static_cast<std::time_t>(seconds.count());
        std::tm utc{};
        gmtime_r(&t, &utc);
        char time_text[40];
        const std::size_t n = std::strftime(time_text, sizeof time_text, "%Y-%m-%dT%H:%M:%S", &utc);
        std::snprintf(time_text + n, sizeof time_text - n, ".%03dZ", static_cast<int>(millis));
        dest.append(std::string_view("{\"time\":\""));
        dest.append(std::string_view(time_text));
        dest.append(std::string_view("\",\"level\":"));
        const auto level = spdlog::level::to_string_view(msg.level);
        append_json_string(dest, level);
        dest.append(std::string_view(",\"message\":"));
        append_json_string(dest, msg.payload);
        dest.append(std::string_view("}\n"));
    }
    std::unique_ptr<spdlog::formatter> clone() const override { return std::make_unique<JsonFormatter>(); }
};

}  // namespace

bool stderr_is_journal() {
    const char* env = std::getenv("JOURNAL_STREAM");
    if (env == nullptr || *env == '\0') return false;
    unsigned long long dev = 0, ino = 0;
    if (std::sscanf(env, "%llu:%llu", &dev, &ino) != 2) return false;
    struct stat st{};
    if (fstat(STDERR_FILENO, &st) != 0) return false;
    return static_cast<unsigned long long>(st.st_dev) == dev && static_cast<unsigned long long>(st.st_ino) == ino;
}

LogFormat effective_log_format(const Config& cfg) {
    if (cfg.log_format != LogFormat::automatic) return cfg.log_format;
#ifdef SIGVERIFY_HAVE_LIBSYSTEMD
    if (cfg.log_file.empty() && stderr_is_journal()) return LogFormat::automatic;
#endif
    return LogFormat::text;
}

std::unique_ptr<spdlog::formatter> make_json_formatter() { return std::make_unique<JsonFormatter>(); }

spdlog::sink_ptr make_log_sink(const Config& cfg) {
    const LogFormat format = effective_log_format(cfg);
#ifdef SIGVERIFY_HAVE_LIBSYSTEMD
    if (format == LogFormat::automatic) {
        // The journal keeps its own time and our priority (PRIORITY=): the
        // message alone, no timestamp or level text of ours.
        return std::make_shared<spdlog::sinks::systemd_sink_mt>("sigverifyd", false);
    }
#endif
    spdlog::sink_ptr sink;
    if (cfg.log_file.empty()) sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
    else sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(cfg.log_file);
    if (format == LogFormat::json) sink->set_formatter(make_json_formatter());
    return sink;
}

std::shared_ptr<spdlog::logger> make_logger(const Config& cfg, std::shared_ptr<spdlog::sinks::dist_sink_mt>& dist) {
    dist = std::make_shared<spdlog::sinks::dist_sink_mt>();
    dist->add_sink(make_log_sink(cfg));
    auto log = std::make_shared<spdlog::logger>("sigverifyd", dist);
    log->set_level(spdlog::level::from_str(cfg.log_level));
    log->flush_on(spdlog::level::info);
    return log;
}

}  // namespace sigverify::daemon
