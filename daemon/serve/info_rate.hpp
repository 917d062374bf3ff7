// SPDX-License-Identifier: MIT
// The rate limit of one session's info requests: a token bucket.
//
// Why: an info answer costs the daemon a packet read, a look at every backend
// and a packet written, on the session's reader thread; a client asking in a
// loop kept that thread (and itself) on the CPU and took it from the honest
// clients' verification. Honest use asks once per session (`sigverify info`,
// the libbitcoin hook's GPU check at start), so the burst is generous and the
// rate low. A request over the limit is answered at once with Status::busy
// (a refusal, never a verdict), and the session's next control packets are
// not read until a token is due: a client that keeps asking waits in its own
// recv() instead of spinning.
#pragma once

#include <algorithm>
#include <chrono>

namespace sigverify::daemon {

class InfoRate {
public:
    using Clock = std::chrono::steady_clock;
    static constexpr double kBurst = 16;     // requests a session may make at once
    static constexpr double kPerSecond = 8;  // and after that

    // True when a request may be answered now (a token taken).
    bool take(Clock::time_point now) {
        refill(now);
        if (tokens_ < 1) return false;
        tokens_ -= 1;
        return true;
    }

    // When the next token is due (now when one is there).
    Clock::time_point next_token(Clock::time_point now) {
        refill(now);
        if (tokens_ >= 1) return now;
        const std::chrono::duration<double> wait((1 - tokens_) / kPerSecond);
        return now + std::chrono::duration_cast<Clock::duration>(wait);
    }

private:
    void refill(Clock::time_point now) {
        if (last_ != Clock::time_point{} && now > last_)
            tokens_ = std::min(kBurst, tokens_ + std::chrono::duration<double>(now - last_).count() * kPerSecond);
        last_ = now;
    }

    double tokens_ = kBurst;
    Clock::time_point last_{};
};

}  // namespace sigverify::daemon
