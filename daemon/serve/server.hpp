// SPDX-License-Identifier: MIT
// sigverifyd's control plane: it accepts and dispatches. At start-up it puts
// the backends (daemon/serve/backend_setup.hpp), the scheduler, the sockets and the
// SIGBUS guard in place; then one poll loop accepts connections (admitted by
// daemon/serve/admission.hpp, or refused: daemon/serve/lingering.hpp), starts a thread per
// session, notices hang-ups, reaps ended sessions (parking those whose client
// stays connected), answers the stats socket, reloads on SIGHUP and feeds
// systemd; SIGTERM/SIGINT end it with a bounded shutdown. It owns the
// daemon-wide state (DaemonContext) and outlives every session it starts.
#pragma once

#include <poll.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/sinks/dist_sink.h>

#include "daemon/ops/accept_backoff.hpp"
#include "daemon/serve/admission.hpp"
#include "daemon/serve/backend_setup.hpp"
#include "daemon/ops/config.hpp"
#include "daemon/serve/daemon_context.hpp"
#include "daemon/serve/lingering.hpp"
#include "daemon/serve/listen_socket.hpp"
#include "daemon/ops/metrics.hpp"
#include "daemon/ops/notify.hpp"
#include "daemon/schedule/scheduler.hpp"
#include "daemon/serve/session.hpp"
#include "daemon/ops/stats_server.hpp"

namespace sigverify::daemon {

class Server {
public:
    // What stands in GPU `index`'s place under --backend host-kernel, with
    // `workers` worker threads. Empty (the default): HostKernelBackend. A seam
    // for test executables only (tests/daemon/lying_gpu_daemon.cpp puts a
    // lying "GPU" there); sigverifyd's main() never passes one, so neither an
    // option nor a client can reach it.
    using HostKernelFactory = daemon::HostKernelFactory;

    explicit Server(Config cfg, HostKernelFactory host_kernel = {});
    ~Server();
    // Runs until SIGTERM/SIGINT; returns the process exit code (daemon/ops/exit_codes.hpp).
    int run();

private:
    // run()'s three steps. start: exit_status::clean_stop when serving can
    // begin (READY=1 sent), else the exit status.
    int start();
    void serve();
    void shutdown_gracefully();

    static void block_handled_signals();
    int open_signal_fd();
    bool open_stats_socket();
    bool accept_one();  // false: stop accepting in this round (backlog empty, or paused)
    void start_session(int fd, const ucred& cred);
    void reap_sessions(bool all);
    void reload();       // SIGHUP
    void reopen_logs();
    bool handle_signals();  // true: SIGTERM/SIGINT, stop serving
    unsigned occupied_slots() const;
    void watch_hang_ups(std::vector<::pollfd>& fds, std::vector<Session*>& watched) const;

    // Stats socket, systemd notification, metrics textfile (daemon/ops/stats_server.hpp, notify.hpp).
    StatsSnapshot snapshot();
    std::string status_line();
    void periodic(std::chrono::steady_clock::time_point now);
    int periodic_timeout_ms(std::chrono::steady_clock::time_point now) const;

    DaemonContext ctx_;
    HostKernelFactory host_kernel_;
    std::shared_ptr<spdlog::sinks::dist_sink_mt> dist_;
    BackendSet backends_{ctx_};
    Admission admission_{ctx_};
    std::unique_ptr<Scheduler> scheduler_;
    ListenSocket listen_;
    int signal_fd_ = -1;
    int session_ended_fd_ = -1;        // eventfd the session threads write when they end
    std::uint64_t next_session_id_ = 1;
    std::vector<std::pair<std::shared_ptr<Session>, std::thread>> sessions_;
    ParkedSessions parked_;
    RefusedConnections refused_;
    std::vector<::pollfd> poll_fds_;   // the main loop's, reused every round
    std::vector<Session*> watched_;    // sessions whose hang-up the main loop polls
    AcceptBackoff accept_backoff_;     // accept() out of descriptors: stop polling the socket for a while

    std::unique_ptr<StatsServer> stats_;
    Notifier notify_;
    WatchdogGate watchdog_gate_;
    bool watchdog_withheld_ = false;
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point next_watchdog_{}, next_periodic_{};
    std::string last_status_;
};

}  // namespace sigverify::daemon
