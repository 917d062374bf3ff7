// SPDX-License-Identifier: MIT
#include "daemon/ops/stats_server.hpp"

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sigverify::daemon {
namespace {

using Clock = std::chrono::steady_clock;

std::string trim(std::string_view s) {
    std::size_t b = 0, e = s.size();
    while (b < e && (s[b] == ' ' || s[b] == '\t' || s[b] == '\r' || s[b] == '\n')) ++b;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t' || s[e - 1] == '\r' || s[e - 1] == '\n')) --e;
    // Collapse inner runs of blanks to one space ("stats   json").
    std::string out;
    bool blank = false;
    for (std::size_t i = b; i < e; ++i) {
        const char c = s[i];
        if (c == ' ' || c == '\t') {
            blank = true;
            continue;
        }
        if (blank && !out.empty()) out += ' ';
        blank = false;
        out += c;
    }
    return out;
}

std::string printable(std::string_view s, std::size_t max) {
    std::string out;
    for (char c : s.substr(0, max)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
    if (s.size() > max) out += "...";
    return out;
}

void drain(int fd) {
    char buf[1024];
    for (int i = 0; i < 16; ++i) {
        const ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r <= 0) break;
    }
}

}  // namespace

StatsServer::StatsServer(Metrics& metrics, Access access, SnapshotFn snapshot, std::shared_ptr<spdlog::logger> log,
                         Limits limits)
    : metrics_(metrics),
      access_(std::move(access)),
      snapshot_(std::move(snapshot)),
      log_(std::move(log)),
      limits_(limits) {}

StatsServer::~StatsServer() { close_all(); }

bool StatsServer::open(const std::string& path, mode_t mode, gid_t gid, std::string& error) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) {
        error = "stats socket path too long: " + path;
        return false;
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    unlink(path.c_str());  // the control socket's probe already proved no live daemon owns this directory
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listen_fd_ < 0) {
        error = std::string("socket: ") + std::strerror(errno);
        return false;
    }
    const mode_t old = umask(0177);
    const int rc = bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    umask(old);
    if (rc != 0) {
        error = "bind " + path + ": " + std::strerror(errno);
        close(listen_fd_);
        listen_fd_ = -1;
        return false;
    }
    path_ = path;
    if (gid != static_cast<gid_t>(-1) && chown(path.c_str(), static_cast<uid_t>(-1), gid) != 0)
        log_->warn("chown {}: {}", path, std::strerror(errno));
    chmod(path.c_str(), mode);
    if (listen(listen_fd_, 64) != 0) {
        error = std::string("listen: ") + std::strerror(errno);
        close_all();
        return false;
    }
    return true;
}

void StatsServer::close_conn(Conn& c) {
    if (c.fd < 0) return;
    drain(c.fd);  // unread input would turn the peer's EOF into a reset
    close(c.fd);
    c.fd = -1;
}

void StatsServer::close_all() {
    for (auto& c : conns_) close_conn(c);
    conns_.clear();
    if (listen_fd_ >= 0) {
        close(listen_fd_);
        listen_fd_ = -1;
        unlink(path_.c_str());
    }
}

void StatsServer::add_pollfds(std::vector<pollfd>& fds) const {
    fds.push_back({backoff_.poll_fd(listen_fd_, Clock::now()), POLLIN, 0});
    for (const auto& c : conns_) fds.push_back({c.fd, short(c.writing ? POLLOUT : POLLIN), 0});
}

int StatsServer::next_timeout_ms() const {
    const int paused = backoff_.timeout_ms(Clock::now());
    if (conns_.empty()) return paused;
    auto nearest = conns_.front().deadline;
    for (const auto& c : conns_) nearest = std::min(nearest, c.deadline);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(nearest - Clock::now()).count();
    const int t = left < 0 ? 0 : static_cast<int>(std::min<long long>(left + 1, 1000));
    return paused >= 0 ? std::min(t, paused) : t;
}

void StatsServer::reject(int fd, const std::string& line) {
    metrics_.stats_refused.fetch_add(1, std::memory_order_relaxed);
    (void)send(fd, line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    shutdown(fd, SHUT_WR);
    drain(fd);
    close(fd);
}

void StatsServer::accept_some() {
    for (int i = 0; i < 16; ++i) {
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            const int e = errno;
            if (AcceptBackoff::resource_error(e)) {
                metrics_.accept_errors.fetch_add(1, std::memory_order_relaxed);
                backoff_.failed(Clock::now());
            }
            if (e != EAGAIN && e != EWOULDBLOCK && e != EINTR && e != ECONNABORTED &&
                (log_limit_ == nullptr || log_limit_->allow(*log_, "stats accept")))
                log_->warn("stats accept: {}{}", std::strerror(e),
                           AcceptBackoff::resource_error(e)
                               ? "; not accepting stats connections for " + std::to_string(backoff_.pause.count()) + " ms"
                               : std::string());
            return;
        }
        backoff_.succeeded();
        ucred cred{};
        socklen_t len = sizeof cred;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
            close(fd);
            continue;
        }
        std::string why;
        if (!access_(fd, cred, why)) {
            if (log_limit_ == nullptr || log_limit_->allow(*log_, "refused stats: permission denied"))
                log_->warn("refused stats connection from pid {}: {}", cred.pid, why);
            reject(fd, "error: permission denied: " + why + "\n");
            continue;
        }
        if (conns_.size() >= limits_.max_connections) evict_idle();
        if (conns_.size() >= limits_.max_connections) {
            if (log_limit_ == nullptr || log_limit_->allow(*log_, "refused stats: too many"))
                log_->warn("refused stats connection from pid {}: {} stats connections open", cred.pid,
                           conns_.size());
            reject(fd, "error: too many stats connections (" + std::to_string(conns_.size()) + ")\n");
            continue;
        }
        Conn c;
        c.fd = fd;
        c.deadline = Clock::now() + limits_.request_timeout;
        conns_.push_back(std::move(c));
    }
}

// At the connection limit: closes the oldest connection that has sent
// nothing yet (nothing received, nothing waiting in its socket), so that
// readers holding idle connections cannot keep an operator out. One that is
// sending its command or reading its answer is never closed for this.
bool StatsServer::evict_idle() {
    for (auto it = conns_.begin(); it != conns_.end(); ++it) {
        if (it->writing || !it->in.empty()) continue;
        int pending = 0;
        if (ioctl(it->fd, FIONREAD, &pending) != 0 || pending != 0) continue;
        metrics_.stats_evicted.fetch_add(1, std::memory_order_relaxed);
        const std::string line = "error: closed: idle at the stats connection limit (" +
                                 std::to_string(limits_.max_connections) + "), to make room for another reader\n";
        (void)send(it->fd, line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        shutdown(it->fd, SHUT_WR);
        close_conn(*it);
        conns_.erase(it);
        return true;
    }
    return false;
}

std::string StatsServer::answer(std::string_view raw) {
    const std::string cmd = trim(raw);
    if (cmd == "help") return stats_help();
    if (cmd == "stats") return render_prometheus(metrics_, snapshot_());
    if (cmd == "stats json") return render_json(metrics_, snapshot_());
    if (cmd == "clients") return render_clients(snapshot_());
    if (cmd == "backends") return render_backends(snapshot_());
    if (cmd == "version") return render_version(snapshot_());
    return "error: unknown command '" + printable(cmd, 64) + "' (try 'help')\n";
}

void StatsServer::respond(Conn& c, std::string_view command) {
    c.out = answer(command);
    if (c.out.size() > limits_.max_output)
        c.out = "error: answer larger than " + std::to_string(limits_.max_output) + " bytes\n";
    metrics_.stats_requests.fetch_add(1, std::memory_order_relaxed);
    c.in.clear();
    c.in.shrink_to_fit();
    c.writing = true;
    c.sent = 0;
    c.deadline = Clock::now() + limits_.write_timeout;
}

bool StatsServer::on_readable(Conn& c) {
    char buf[512];
    for (;;) {
        const ssize_t r = recv(c.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (r < 0) {
            if (errno == EINTR) continue;
            return errno == EAGAIN || errno == EWOULDBLOCK;
        }
        if (r == 0) {
            if (c.in.empty()) return false;  // connected and left
            respond(c, c.in);                // command without a newline, then EOF
            return on_writable(c);
        }
        c.in.append(buf, std::size_t(r));
        const auto nl = c.in.find('\n');
        if (nl != std::string::npos) {
            if (nl > limits_.max_request) break;
            const std::string line = c.in.substr(0, nl);
            respond(c, line);
            return on_writable(c);  // most answers fit the socket buffer at once
        }
        if (c.in.size() > limits_.max_request) break;
    }
    metrics_.stats_dropped.fetch_add(1, std::memory_order_relaxed);
    const std::string line = "error: request longer than " + std::to_string(limits_.max_request) + " bytes\n";
    (void)send(c.fd, line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
    return false;
}

bool StatsServer::on_writable(Conn& c) {
    while (c.sent < c.out.size()) {
        const ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return errno == EAGAIN || errno == EWOULDBLOCK;  // keep polling for POLLOUT
        }
        c.sent += std::size_t(n);
    }
    shutdown(c.fd, SHUT_WR);
    return false;  // answered: close
}

void StatsServer::handle(const pollfd* fds, std::size_t n) {
    // fds[0] is the listening socket, then the connections in the order
    // add_pollfds() appended them (conns_ is not reordered before this call).
    std::vector<bool> done(conns_.size(), false);
    for (std::size_t i = 1; i < n && i - 1 < conns_.size(); ++i) {
        Conn& c = conns_[i - 1];
        if (fds[i].fd != c.fd || fds[i].revents == 0) continue;
        if (c.writing) {
            if (fds[i].revents & (POLLERR | POLLHUP | POLLNVAL)) done[i - 1] = true;
            else if (fds[i].revents & POLLOUT) done[i - 1] = !on_writable(c);
        } else {
            if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) done[i - 1] = !on_readable(c);
            if (fds[i].revents & POLLNVAL) done[i - 1] = true;
        }
    }
    const auto now = Clock::now();
    std::vector<Conn> keep;
    keep.reserve(conns_.size());
    for (std::size_t i = 0; i < conns_.size(); ++i) {
        Conn& c = conns_[i];
        if (!done[i] && now >= c.deadline) {
            metrics_.stats_dropped.fetch_add(1, std::memory_order_relaxed);
            log_->debug("dropped a stats reader: {}", c.writing ? "did not read its answer in time"
                                                                : "sent no command in time");
            done[i] = true;
        }
        if (done[i]) close_conn(c);
        else keep.push_back(std::move(c));
    }
    conns_ = std::move(keep);
    if (n > 0 && fds[0].fd == listen_fd_ && (fds[0].revents & POLLIN)) accept_some();
}

}  // namespace sigverify::daemon
