// SPDX-License-Identifier: MIT
// sigverifyd's control plane: the listening socket, access control, session
// threads, signals and the bounded shutdown. It owns the daemon-wide state
// (DaemonContext), the backend(s) and the scheduler, and outlives every
// session it starts.
#pragma once

#include <poll.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <spdlog/sinks/dist_sink.h>

#include "daemon/accept_backoff.hpp"
#include "daemon/backend.hpp"
#include "daemon/striped_backend.hpp"
#include "daemon/gpu_backend.hpp"
#include "daemon/config.hpp"
#include "daemon/connection_rate.hpp"
#include "daemon/logging.hpp"
#include "daemon/daemon_context.hpp"
#include "daemon/metrics.hpp"
#include "daemon/notify.hpp"
#include "daemon/scheduler.hpp"
#include "daemon/session.hpp"
#include "daemon/stats_server.hpp"

namespace sigverify::daemon {

class Server {
public:
    // What stands in GPU `index`'s place under --backend host-kernel, with
    // `workers` worker threads. Empty (the default): HostKernelBackend. A seam
    // for test executables only (tests/daemon/lying_gpu_daemon.cpp puts a
    // lying "GPU" there); sigverifyd's main() never passes one, so neither an
    // option nor a client can reach it.
    using HostKernelFactory = std::function<std::unique_ptr<Backend>(int index, unsigned workers)>;

    explicit Server(Config cfg, HostKernelFactory host_kernel = {});
    ~Server();
    // Runs until SIGTERM/SIGINT; returns the process exit code (daemon/exit_codes.hpp).
    int run();

private:
    bool select_backend();
    void use_gpus(std::vector<std::unique_ptr<Backend>> devices, unsigned cpu_threads);
    bool setup_socket();
    bool accept_one();  // false: stop accepting in this round (backlog empty, or paused)
    bool check_descriptor_limit();
    void reap_sessions(bool all);
    void shutdown_gracefully();
    void reload();       // SIGHUP
    void reopen_logs();
    // Whether the peer may connect; else the reason in why[0, size).
    bool peer_allowed(int fd, const ucred& cred, char* why, std::size_t size);

    DaemonContext ctx_;
    HostKernelFactory host_kernel_;
    std::shared_ptr<spdlog::sinks::dist_sink_mt> dist_;
    std::unique_ptr<Backend> backend_;
    std::unique_ptr<Backend> cpu_fallback_;      // with the GPU: re-runs chunks the GPU failed
    StripedBackend* gpus_ = nullptr;            // backend_ when it is the cross-checked GPUs
    std::unique_ptr<SplitPlanner> planner_;     // with the GPUs and --gpu-split auto
    std::vector<GpuDeviceReport> gpu_reports_;  // every GPU tried at start-up
    std::unique_ptr<Scheduler> scheduler_;
    std::string socket_path_;
    int listen_fd_ = -1;
    int signal_fd_ = -1;
    bool have_group_ = false;
    unsigned group_gid_ = 0;
    std::uint64_t next_session_id_ = 1;
    std::vector<std::pair<std::shared_ptr<Session>, std::thread>> sessions_;
    // Ended by the daemon while their client stays connected: kept (segment
    // mapped and counted) until the client hangs up or a grace period ends.
    std::vector<std::pair<std::shared_ptr<Session>, std::chrono::steady_clock::time_point>> parked_;
    void release_parked(const ::pollfd* fds, std::size_t n);
    // Refused connections: the refusal is sent at once, the socket is closed
    // when the peer has read it (hang-up) or after a second, so the peer never
    // sees a reset instead of the reason. Bounded.
    std::vector<std::pair<int, std::chrono::steady_clock::time_point>> refused_;
    std::vector<pollfd> poll_fds_;     // the main loop's, reused every round
    std::uint64_t smallest_segment_ = 0;  // bytes of the smallest segment a session can get (set_segment_budget)
    std::vector<Session*> watched_;    // sessions whose hang-up the main loop polls
    std::size_t max_lingering_ = 256;  // lowered at start-up to what RLIMIT_NOFILE leaves
    AcceptBackoff accept_backoff_;     // accept() out of descriptors: stop polling listen_fd_ for a while
    ConnectionRate connection_rate_;   // sessions per process and per uid (daemon/connection_rate.hpp)
    int session_ended_fd_ = -1;        // eventfd the session threads write when they end
    void set_segment_budget();
    unsigned occupied_slots() const;
    void watch_hang_ups(std::vector<::pollfd>& fds, std::vector<Session*>& watched) const;
    void linger_refused(int fd);
    // Replies `status` with "prefix text" and closes fd, or leaves it to linger_refused.
    void refuse_connection(int fd, shm::Status status, const char* prefix, const char* text);
    void drain_refused(const ::pollfd* fds, std::size_t n);

    // Stats socket, systemd notification, metrics textfile (daemon/stats_server.hpp, notify.hpp).
    StatsSnapshot snapshot();
    std::vector<BackendInfo> backends() const;  // also DaemonContext::backends (session threads)
    std::string status_line();
    void periodic(std::chrono::steady_clock::time_point now);
    int periodic_timeout_ms(std::chrono::steady_clock::time_point now) const;
    std::unique_ptr<StatsServer> stats_;
    Notifier notify_;
    WatchdogGate watchdog_gate_;
    bool watchdog_withheld_ = false;
    std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point next_watchdog_{}, next_periodic_{};
    std::string last_status_;
    std::string self_test_;
};

}  // namespace sigverify::daemon
