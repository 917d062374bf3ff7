// SPDX-License-Identifier: MIT
// Connections the daemon is done with but keeps a little longer, so the peer
// reads why instead of seeing a reset, each until the peer hangs up or its
// deadline passes. Both lists are bounded; the main loop polls them (one
// pollfd per entry, in order, appended by add_pollfds) and hands the polled
// range back. Main thread only.
//
//  * RefusedConnections: refused at admission. The refusal is sent at once;
//    the socket is closed when the peer has read it, or after a second.
//  * ParkedSessions: ended by the daemon (a protocol violation) while their
//    client stays connected: kept, segment mapped and counted in the shared
//    memory budget, for the client to read the closed state; truncated when
//    the client hangs up or after a grace period.
#pragma once

#include <poll.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "daemon/serve/session.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"

namespace sigverify::daemon {

class RefusedConnections {
public:
    // At most `capacity` sockets linger (start-up lowers it to what RLIMIT_NOFILE leaves).
    void set_capacity(std::size_t capacity) { capacity_ = capacity; }
    // Replies `status` with "prefix text" (epoch: the daemon's) and closes fd,
    // or keeps it lingering until the peer has read the reply.
    void refuse(int fd, shm::Status status, std::uint64_t epoch, const char* prefix, const char* text);
    void add_pollfds(std::vector<::pollfd>& fds) const;
    // fds[k] is the k-th entry add_pollfds appended, for k < n.
    void drain(const ::pollfd* fds, std::size_t n);
    void close_all();
    bool empty() const { return sockets_.empty(); }

private:
    void linger(int fd);
    std::vector<std::pair<int, std::chrono::steady_clock::time_point>> sockets_;
    std::size_t capacity_ = 256;
};

class ParkedSessions {
public:
    // Each keeps its segment mapped, so the SIGBUS guard has a slot for each
    // (guard::capacity_for).
    static constexpr std::size_t kCapacity = 64;
    static constexpr auto kGrace = std::chrono::seconds(2);

    // Full: the oldest one's grace is cut short (truncated now).
    void park(std::shared_ptr<Session> session);
    void add_pollfds(std::vector<::pollfd>& fds) const;
    // Drops those whose client hung up or whose grace ended: unmapped,
    // truncated, released. fds[k] is the k-th entry add_pollfds appended, for k < n.
    void release(const ::pollfd* fds, std::size_t n);
    void clear() { sessions_.clear(); }
    bool empty() const { return sessions_.empty(); }

private:
    std::vector<std::pair<std::shared_ptr<Session>, std::chrono::steady_clock::time_point>> sessions_;
};

}  // namespace sigverify::daemon
