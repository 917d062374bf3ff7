// SPDX-License-Identifier: MIT
// The shared memory sigverifyd has handed out, per uid and in total.
//
// A segment counts from the moment a session decides to create it until the
// session is destroyed: after the last chunk that writes into it finished,
// the daemon unmapped it and truncated it to zero bytes (tmpfs frees the
// pages even while a client still holds the descriptor or a mapping; see
// Session::~Session). So a client that keeps the descriptor of every segment
// it was given holds no memory the budget does not count, and a new session
// that would exceed either bound is refused before its segment is created.
// Thread-safe: sessions reserve from their own threads, and release from
// whichever thread drops the last reference.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace sigverify::daemon {

class SegmentBudget {
public:
    SegmentBudget() = default;
    SegmentBudget(std::uint64_t total_limit, std::uint64_t per_uid_limit) { set_limits(total_limit, per_uid_limit); }

    void set_limits(std::uint64_t total_limit, std::uint64_t per_uid_limit) {
        std::lock_guard lock(mutex_);
        total_limit_ = total_limit;
        per_uid_limit_ = per_uid_limit;
    }

    // Counts `bytes` for `uid`, or returns false with the reason when that
    // would exceed the uid's or the daemon's bound.
    bool try_reserve(uid_t uid, std::uint64_t bytes, std::string& why) {
        std::lock_guard lock(mutex_);
        std::uint64_t& mine = by_uid_[uid];
        if (total_ + bytes > total_limit_) {
            why = "shared memory budget exhausted: " + std::to_string(total_) + " of " +
                  std::to_string(total_limit_) + " bytes handed out and not yet released";
        } else if (mine + bytes > per_uid_limit_) {
            why = "uid " + std::to_string(uid) + " holds " + std::to_string(mine) + " of its " +
                  std::to_string(per_uid_limit_) + " bytes of shared memory";
        } else {
            mine += bytes;
            total_ += bytes;
            return true;
        }
        if (mine == 0) by_uid_.erase(uid);
        return false;
    }

    // Whether `bytes` more for `uid` would fit now (nothing is counted); the
    // server asks with the smallest segment before it starts a session thread,
    // so a uid already at its bound is refused without one. No allocation.
    bool would_fit(uid_t uid, std::uint64_t bytes) const {
        std::lock_guard lock(mutex_);
        const auto it = by_uid_.find(uid);
        const std::uint64_t mine = it == by_uid_.end() ? 0 : it->second;
        return total_ + bytes <= total_limit_ && mine + bytes <= per_uid_limit_;
    }

    // Gives back what try_reserve counted, once the segment is truncated.
    void release(uid_t uid, std::uint64_t bytes) {
        std::lock_guard lock(mutex_);
        auto it = by_uid_.find(uid);
        if (it == by_uid_.end()) return;
        it->second -= std::min(it->second, bytes);
        total_ -= std::min(total_, bytes);
        if (it->second == 0) by_uid_.erase(it);
    }

    std::uint64_t total() const {
        std::lock_guard lock(mutex_);
        return total_;
    }
    std::uint64_t total_limit() const {
        std::lock_guard lock(mutex_);
        return total_limit_;
    }
    std::uint64_t of_uid(uid_t uid) const {
        std::lock_guard lock(mutex_);
        const auto it = by_uid_.find(uid);
        return it == by_uid_.end() ? 0 : it->second;
    }

private:
    mutable std::mutex mutex_;
    std::uint64_t total_limit_ = UINT64_MAX;
    std::uint64_t per_uid_limit_ = UINT64_MAX;
    std::uint64_t total_ = 0;
    std::map<uid_t, std::uint64_t> by_uid_;
};

}  // namespace sigverify::daemon
