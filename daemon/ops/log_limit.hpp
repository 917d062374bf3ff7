// SPDX-License-Identifier: MIT
// Rate limit for log lines a client can trigger repeatedly (refusals,
// malformed handshakes, protocol errors): at most `burst` lines per key per
// `interval`; the lines held back are summed up in one "suppressed K similar
// messages" line when the key's interval ends (written by the next allow() of
// that key or by flush(), which the server's main loop calls about once a
// second). The counters (stats socket) keep the exact numbers; only the log
// is thinned. Thread-safe (sessions log from their own threads).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include <spdlog/logger.h>

namespace sigverify::daemon {

class LogLimit {
public:
    using Clock = std::chrono::steady_clock;

    explicit LogLimit(unsigned burst = 10, std::chrono::milliseconds interval = std::chrono::seconds(10))
        : burst_(burst), interval_(interval) {}

    // True when the caller may write its line for `key` now. Allocates only
    // the first time a key is seen (a refusal in a connect loop costs no
    // allocation here).
    bool allow(spdlog::logger& log, std::string_view key) {
        const auto now = Clock::now();
        std::lock_guard lock(mutex_);
        auto it = windows_.find(key);
        if (it == windows_.end()) it = windows_.emplace(std::string(key), Window{}).first;
        Window& w = it->second;
        if (now >= w.end) {
            summarize(log, key, w);
            w.end = now + interval_;
            w.written = 0;
        }
        if (w.written < burst_) {
            ++w.written;
            return true;
        }
        ++w.suppressed;
        return false;
    }

    // Writes the summaries of the intervals that have ended.
    void flush(spdlog::logger& log) {
        const auto now = Clock::now();
        std::lock_guard lock(mutex_);
        for (auto& [key, w] : windows_)
            if (now >= w.end) summarize(log, key, w);
    }

private:
    struct Window {
        Clock::time_point end{};
        unsigned written = 0;
        std::uint64_t suppressed = 0;
    };

    void summarize(spdlog::logger& log, std::string_view key, Window& w) {
        if (w.suppressed == 0) return;
        log.warn("suppressed {} similar messages ({}) in the last {} s", w.suppressed, key,
                 std::chrono::duration_cast<std::chrono::seconds>(interval_).count());
        w.suppressed = 0;
    }

    const unsigned burst_;
    const std::chrono::milliseconds interval_;
    std::mutex mutex_;
    std::map<std::string, Window, std::less<>> windows_;
};

}  // namespace sigverify::daemon
