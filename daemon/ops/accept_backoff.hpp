// SPDX-License-Identifier: MIT
// Back-off for a listening socket whose accept() fails for lack of resources
// (EMFILE, ENFILE, ENOBUFS, ENOMEM). The pending connection stays in the
// backlog, so a level-triggered poll would report it at once again and the
// main loop would spin; instead the caller stops polling the listening socket
// for a pause that doubles from 10 ms up to 1 s while the failures go on, and
// resets after a successful accept. Connected clients are served meanwhile.
#pragma once

#include <cerrno>
#include <chrono>

namespace sigverify::daemon {

struct AcceptBackoff {
    using Clock = std::chrono::steady_clock;
    static constexpr std::chrono::milliseconds kFirst{10};
    static constexpr std::chrono::milliseconds kMax{1000};

    static bool resource_error(int e) { return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM; }

    bool paused(Clock::time_point now) const { return now < until; }
    // The listening descriptor to poll now: -1 (ignored by poll) while paused.
    int poll_fd(int listen_fd, Clock::time_point now) const { return paused(now) ? -1 : listen_fd; }
    void failed(Clock::time_point now) {
        pause = pause.count() == 0 ? kFirst : std::min(pause * 2, kMax);
        until = now + pause;
    }
    void succeeded() { pause = std::chrono::milliseconds(0); }
    // Milliseconds until the pause ends (poll timeout), -1 when not paused.
    int timeout_ms(Clock::time_point now) const {
        if (!paused(now)) return -1;
        return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count()) + 1;
    }

    Clock::time_point until{};
    std::chrono::milliseconds pause{0};
};

}  // namespace sigverify::daemon
