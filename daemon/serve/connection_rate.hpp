// SPDX-License-Identifier: MIT
// Rate limit of new client sessions: token buckets per client process and
// per uid, checked by the server right after accept() and before anything is
// set up for the connection (no thread, no segment), so a refused attempt
// costs the daemon one small reply.
//
// Why two levels: a per-uid bucket alone would let one process of a uid that
// loops connect/handshake/close take every token, and the node, the CLI and
// the monitoring of the same uid would be refused with it. The per-process
// bucket (SO_PEERCRED pid, which the peer cannot choose) stops such a loop
// early and leaves the uid's bucket to the uid's other processes. The
// per-uid bucket bounds what a uid can cost the daemon however many
// processes it starts; a uid that forks a process per connection can still
// use up its own uid's bucket (not another uid's). Honest clients keep their
// session open: a node connects once, a CLI command once per run.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>

namespace sigverify::daemon {

class ConnectionRate {
public:
    using Clock = std::chrono::steady_clock;

    struct Limits {
        double per_process_burst = 20;  // sessions a process may open at once
        double per_process_rate = 20;   // per second after the burst
        double per_uid_burst = 200;
        double per_uid_rate = 200;
        std::size_t max_tracked = 4096;  // processes (and uids) remembered at once
    };

    ConnectionRate() : ConnectionRate(Limits{}) {}
    explicit ConnectionRate(Limits limits) : limits_(limits) {}

    const Limits& limits() const { return limits_; }

    // One connection attempt of (uid, pid): true when it may go on (a token of
    // both buckets taken); false with the reason in `why` (NUL-terminated,
    // truncated to `size`) otherwise (nothing taken). No allocation once the
    // process and the uid are tracked: a refusal in a connect loop is cheap.
    bool admit(uid_t uid, pid_t pid, Clock::time_point now, char* why, std::size_t size) {
        Bucket& p = bucket(processes_, std::uint64_t(std::uint32_t(uid)) << 32 | std::uint32_t(pid),
                           limits_.per_process_burst, limits_.per_process_rate, now);
        Bucket& u = bucket(uids_, uid, limits_.per_uid_burst, limits_.per_uid_rate, now);
        if (p.tokens < 1) {
            std::snprintf(why, size, "connection rate limit: process %d opened more than %u sessions at %u/s", int(pid),
                          unsigned(limits_.per_process_burst), unsigned(limits_.per_process_rate));
            return false;
        }
        if (u.tokens < 1) {
            std::snprintf(why, size, "connection rate limit: uid %u opened more than %u sessions at %u/s",
                          unsigned(uid), unsigned(limits_.per_uid_burst), unsigned(limits_.per_uid_rate));
            return false;
        }
        p.tokens -= 1;
        u.tokens -= 1;
        return true;
    }
    bool admit(uid_t uid, pid_t pid, Clock::time_point now, std::string& why) {
        char text[160];
        if (admit(uid, pid, now, text, sizeof text)) return true;
        why = text;
        return false;
    }

private:
    struct Bucket {
        double tokens = 0;
        Clock::time_point at{};
    };
    using Table = std::unordered_map<std::uint64_t, Bucket>;

    // The key's bucket refilled up to `now`. A table at max_tracked first
    // forgets the buckets that are full again (they hold no information).
    Bucket& bucket(Table& table, std::uint64_t key, double burst, double rate, Clock::time_point now) {
        if (table.size() >= limits_.max_tracked && table.find(key) == table.end()) {
            for (auto it = table.begin(); it != table.end();) {
                const double seconds = std::chrono::duration<double>(now - it->second.at).count();
                if (it->second.tokens + seconds * rate >= burst) it = table.erase(it);
                else ++it;
            }
            // Still full: so many recent processes that the per-uid bucket is
            // what limits them; forgetting them keeps the memory bounded.
            if (table.size() >= limits_.max_tracked) table.clear();
        }
        auto [it, fresh] = table.try_emplace(key, Bucket{burst, now});
        Bucket& b = it->second;
        if (!fresh) {
            const double seconds = std::chrono::duration<double>(now - b.at).count();
            b.tokens = std::min(burst, b.tokens + std::max(0.0, seconds) * rate);
            b.at = now;
        }
        return b;
    }

    Limits limits_;
    Table processes_;
    Table uids_;
};

}  // namespace sigverify::daemon
