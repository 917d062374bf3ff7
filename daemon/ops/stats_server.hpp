// SPDX-License-Identifier: MIT
// The stats socket, DIR/stats.sock: a UNIX stream socket served from the
// daemon's control thread with non-blocking I/O only.
//
// One command per connection: the reader sends one line (`help`, `stats`,
// `stats json`, `clients`, `backends`, `version`), the daemon writes the answer
// and closes. Unknown commands get one `error: ...` line. Nothing a reader does
// can block the daemon: every socket is non-blocking, a request is at most
// kMaxRequest bytes and must arrive within the request timeout, an answer is
// at most kMaxOutput bytes and must be read within the write timeout, and at
// most max_connections stats connections are open at once; a reader that
// breaks any of these is dropped (sigverifyd_stats_dropped_total). At the
// connection limit a new reader takes the place of the oldest connection that
// has sent nothing (sigverifyd_stats_evicted_total), so idle connections
// cannot keep an operator from reading the stats.
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <spdlog/logger.h>

#include "daemon/ops/accept_backoff.hpp"
#include "daemon/ops/log_limit.hpp"
#include "daemon/ops/metrics.hpp"

namespace sigverify::daemon {

class StatsServer {
public:
    struct Limits {
        std::size_t max_connections = 16;
        std::size_t max_request = 256;
        std::size_t max_output = 8u << 20;
        std::chrono::milliseconds request_timeout{2000};
        std::chrono::milliseconds write_timeout{5000};
    };
    // Same rule as the control socket (Server::peer_allowed).
    using Access = std::function<bool(int fd, const ucred& cred, std::string& why)>;
    using SnapshotFn = std::function<StatsSnapshot()>;

    StatsServer(Metrics& metrics, Access access, SnapshotFn snapshot, std::shared_ptr<spdlog::logger> log,
                Limits limits);
    StatsServer(Metrics& metrics, Access access, SnapshotFn snapshot, std::shared_ptr<spdlog::logger> log)
        : StatsServer(metrics, std::move(access), std::move(snapshot), std::move(log), Limits{}) {}
    ~StatsServer();
    StatsServer(const StatsServer&) = delete;
    StatsServer& operator=(const StatsServer&) = delete;

    // Binds and listens on path with `mode` (and group `gid` unless it is -1).
    bool open(const std::string& path, mode_t mode, gid_t gid, std::string& error);
    // Closes every connection and the listening socket and unlinks the path.
    void close_all();
    // Rate-limits the refusal lines (nullptr: none); the limit outlives this server.
    void set_log_limit(LogLimit* limit) { log_limit_ = limit; }

    // The poll loop: append this server's descriptors, poll, then hand the
    // same range back to handle() (it also enforces the deadlines, so call it
    // after every poll, events or not).
    void add_pollfds(std::vector<pollfd>& fds) const;
    void handle(const pollfd* fds, std::size_t n);
    // Longest poll timeout that still meets the nearest deadline (ms, >= 0), or -1.
    int next_timeout_ms() const;

    std::size_t connections() const { return conns_.size(); }
    const std::string& path() const { return path_; }

    // The answer to one command line (exposed for tests).
    std::string answer(std::string_view command);

private:
    struct Conn {
        int fd = -1;
        bool writing = false;
        std::string in;
        std::string out;
        std::size_t sent = 0;
        std::chrono::steady_clock::time_point deadline;
    };
    void accept_some();
    bool evict_idle();
    void reject(int fd, const std::string& line);
    // false: the connection is finished (closed by the caller).
    bool on_readable(Conn& c);
    bool on_writable(Conn& c);
    void respond(Conn& c, std::string_view command);
    static void close_conn(Conn& c);

    Metrics& metrics_;
    Access access_;
    SnapshotFn snapshot_;
    std::shared_ptr<spdlog::logger> log_;
    Limits limits_;
    std::string path_;
    int listen_fd_ = -1;
    std::vector<Conn> conns_;
    LogLimit* log_limit_ = nullptr;
    AcceptBackoff backoff_;  // accept() out of descriptors: stop polling listen_fd_ for a while
};

}  // namespace sigverify::daemon
