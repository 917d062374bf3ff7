// SPDX-License-Identifier: MIT
// systemd service notification (sd_notify): READY=1, STATUS=, STOPPING=1 and
// the watchdog. A no-op without $NOTIFY_SOCKET (not started by systemd).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace sigverify::daemon {

class Notifier {
public:
    Notifier();  // reads $NOTIFY_SOCKET and $WATCHDOG_USEC / $WATCHDOG_PID
    bool enabled() const { return enabled_; }
    void ready(const std::string& status);
    void status(const std::string& status);
    void stopping(const std::string& status);
    void watchdog();
    // Half of WATCHDOG_USEC (the ping period), or zero when no watchdog is set.
    std::chrono::microseconds watchdog_period() const { return watchdog_period_; }

private:
    bool send(const std::string& message);
    bool enabled_ = false;
    std::chrono::microseconds watchdog_period_{0};
};

// Decides whether a watchdog ping is honest: only when the workers made
// progress since the last check (Metrics::progress moved: a chunk, a piece of
// a chunk or a piece of a job-end group repair finished), or when nothing is
// queued at all. A worker busy on a long repair keeps the pings coming; one
// stuck inside a call while work waits stops them, and systemd restarts the
// service after WatchdogSec=.
class WatchdogGate {
public:
    bool should_ping(std::uint64_t progress, std::uint64_t queued_jobs) {
        const bool moved = !have_last_ || progress != last_progress_;
        have_last_ = true;
        last_progress_ = progress;
        return queued_jobs == 0 || moved;
    }

private:
    bool have_last_ = false;
    std::uint64_t last_progress_ = 0;
};

}  // namespace sigverify::daemon
