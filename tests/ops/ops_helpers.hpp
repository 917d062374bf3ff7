// SPDX-License-Identifier: MIT
// Test helpers: raw access to sigverifyd's stats socket (and its counters), and its notify socket.
#pragma once

#include <grp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace sigverify::test {

inline sockaddr_un unix_addr(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) throw std::runtime_error("path too long: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    return addr;
}

// Connected stream socket to DIR/stats.sock, or -errno.
inline int stats_connect(const std::string& dir) {
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    const sockaddr_un addr = unix_addr(dir + "/stats.sock");
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int e = errno;
        close(fd);
        return -e;
    }
    return fd;
}

// On a connected stats socket: sends payload (plus a newline), half-closes,
// reads the answer to EOF (5 s bound), closes.
inline std::string stats_exchange(int fd, const std::string& payload, bool newline) {
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    const std::string msg = payload + (newline ? "\n" : "");
    // A refused or oversized request may be cut short by the daemon: ignore send errors.
    std::size_t off = 0;
    while (off < msg.size()) {
        const ssize_t n = send(fd, msg.data() + off, msg.size() - off, MSG_NOSIGNAL);
        if (n <= 0) break;
        off += std::size_t(n);
    }
    shutdown(fd, SHUT_WR);
    std::string out;
    char buf[65536];
    for (;;) {
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n > 0) out.append(buf, std::size_t(n));
        else if (n < 0 && errno == EINTR) continue;
        else break;  // EOF, or a reset after the answer
    }
    close(fd);
    return out;
}

inline std::string stats_raw(const std::string& dir, const std::string& payload, bool newline) {
    const int fd = stats_connect(dir);
    if (fd < 0) throw std::runtime_error("connect stats.sock: " + std::string(std::strerror(-fd)));
    return stats_exchange(fd, payload, newline);
}

inline std::string stats_command(const std::string& dir, const std::string& cmd) { return stats_raw(dir, cmd, true); }

// One of the counters of `stats json` (its "counters" object).
inline std::uint64_t stats_counter(const std::string& dir, const std::string& name) {
    return nlohmann::json::parse(stats_command(dir, "stats json"))["counters"][name].get<std::uint64_t>();
}

// Runs `cmd` on the stats socket from a child with uid 65534 whose only group
// is `gid` (default 65534). Returns {connect errno or 0, answer}.
inline std::pair<int, std::string> stats_as_nobody(const std::string& dir, const std::string& cmd,
                                                   gid_t gid = 65534) {
    int fds[2];
    if (pipe(fds) != 0) throw std::runtime_error("pipe");
    const pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        if (setgroups(1, &gid) != 0 || setgid(gid) != 0 || setuid(65534) != 0) _exit(3);
        std::string line;
        const int fd = stats_connect(dir);
        if (fd < 0) {
            line = std::to_string(-fd) + " ";
        } else {
            try {
                line = "0 " + stats_exchange(fd, cmd, true);
            } catch (const std::exception& e) {
                line = "999 " + std::string(e.what());
            }
        }
        (void)!write(fds[1], line.data(), line.size());
        _exit(0);
    }
    close(fds[1]);
    std::string out;
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, std::size_t(n));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error("child failed to drop privileges");
    const auto space = out.find(' ');
    if (space == std::string::npos) throw std::runtime_error("child said nothing");
    return {std::stoi(out.substr(0, space)), out.substr(space + 1)};
}

// A datagram socket standing in for systemd's NOTIFY_SOCKET.
class NotifySocket {
public:
    explicit NotifySocket(std::string path) : path_(std::move(path)) {
        fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        const sockaddr_un addr = unix_addr(path_);
        unlink(path_.c_str());
        if (fd_ < 0 || bind(fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0)
            throw std::runtime_error("cannot bind the notify socket " + path_);
    }
    ~NotifySocket() {
        if (fd_ >= 0) close(fd_);
        unlink(path_.c_str());
    }
    NotifySocket(const NotifySocket&) = delete;
    NotifySocket& operator=(const NotifySocket&) = delete;
    const std::string& path() const { return path_; }
    // Next datagram, or "" after `timeout`.
    std::string next(std::chrono::milliseconds timeout) {
        pollfd p{fd_, POLLIN, 0};
        if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return {};
        char buf[4096];
        const ssize_t n = recv(fd_, buf, sizeof buf, 0);
        return n > 0 ? std::string(buf, std::size_t(n)) : std::string();
    }

private:
    std::string path_;
    int fd_ = -1;
};

}  // namespace sigverify::test
