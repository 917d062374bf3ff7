// SPDX-License-Identifier: MIT
#include "daemon/serve/lingering.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace sigverify::daemon {
namespace {

constexpr short kHungUp = POLLRDHUP | POLLHUP | POLLERR | POLLNVAL;

// The refusal reply: status and "prefix text" as the reason; no allocation.
void send_refusal(int fd, shm::Status status, std::uint64_t epoch, const char* prefix, const char* text) {
    shm::HelloReply reply{};
    reply.magic = shm::kReplyMagic;
    reply.protocol_version = shm::kProtocolVersion;
    reply.status = static_cast<std::uint32_t>(status);
    reply.epoch = epoch;
    std::snprintf(reply.error, sizeof reply.error, "%s%s", prefix, text);
    (void)send(fd, &reply, sizeof reply, MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace

// If the peer's hello arrived already, it is read and the connection closed
// at once: the reply stays readable for the peer after the close, and with
// nothing of the peer's left unread the close does not reset the connection.
// Otherwise (the peer has not sent yet: closing now would make its send fail
// with EPIPE before it reads the reason) the connection lingers.
void RefusedConnections::refuse(int fd, shm::Status status, std::uint64_t epoch, const char* prefix,
                                const char* text) {
    alignas(8) char hello[512];
    const ssize_t got = recv(fd, hello, sizeof hello, MSG_DONTWAIT);
    send_refusal(fd, status, epoch, prefix, text);
    if (got >= 0) {
        close(fd);  // got == 0: the peer is gone already
        return;
    }
    linger(fd);
}

void RefusedConnections::linger(int fd) {
    shutdown(fd, SHUT_WR);
    if (sockets_.size() >= capacity_) {
        close(fd);
        return;
    }
    sockets_.emplace_back(fd, std::chrono::steady_clock::now() + std::chrono::seconds(1));
}

void RefusedConnections::add_pollfds(std::vector<pollfd>& fds) const {
    for (const auto& [fd, deadline] : sockets_) fds.push_back({fd, POLLIN | POLLRDHUP, 0});
}

// One pass, so a flood of refusals costs linear time (refuse only appends,
// so the polled entries are the first n, in order).
void RefusedConnections::drain(const pollfd* fds, std::size_t n) {
    const auto now = std::chrono::steady_clock::now();
    std::size_t kept = 0;
    for (std::size_t i = 0; i < sockets_.size(); ++i) {
        bool done = now >= sockets_[i].second;
        if (!done && i < n && fds[i].fd == sockets_[i].first && fds[i].revents != 0) {
            char buf[512];
            const ssize_t r = recv(fds[i].fd, buf, sizeof buf, MSG_DONTWAIT);
            done = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ||
                   (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0;
        }
        if (done) close(sockets_[i].first);
        else sockets_[kept++] = sockets_[i];
    }
    sockets_.resize(kept);
}

void RefusedConnections::close_all() {
    for (const auto& [fd, deadline] : sockets_) close(fd);
    sockets_.clear();
}

void ParkedSessions::park(std::shared_ptr<Session> session) {
    if (sessions_.size() >= kCapacity) sessions_.erase(sessions_.begin());
    sessions_.emplace_back(std::move(session), std::chrono::steady_clock::now() + kGrace);
}

void ParkedSessions::add_pollfds(std::vector<pollfd>& fds) const {
    for (const auto& [session, deadline] : sessions_) fds.push_back({session->control_fd(), POLLRDHUP, 0});
}

void ParkedSessions::release(const pollfd* fds, std::size_t n) {
    const auto now = std::chrono::steady_clock::now();
    std::size_t kept = 0;
    for (std::size_t i = 0; i < sessions_.size(); ++i) {
        const bool hung_up = i < n && (fds[i].revents & kHungUp) != 0;
        if (!hung_up && now < sessions_[i].second) sessions_[kept++] = std::move(sessions_[i]);
    }
    sessions_.resize(kept);  // the dropped ones are destroyed: unmapped, truncated, released
}

}  // namespace sigverify::daemon
