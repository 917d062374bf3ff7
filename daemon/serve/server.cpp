// SPDX-License-Identifier: MIT
#include "daemon/serve/server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <spdlog/spdlog.h>

#include "daemon/ops/cpu_group.hpp"
#include "daemon/ops/exit_codes.hpp"
#include "daemon/ops/logging.hpp"
#include "daemon/memory/mapping_guard.hpp"
#include "daemon/ops/reload.hpp"
#include "daemon/ops/thread_name.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"
#include "sigverify/version.h"  // generated from the CMake project version

namespace sigverify::daemon {

Server::Server(Config cfg, HostKernelFactory host_kernel) : host_kernel_(std::move(host_kernel)) {
    block_handled_signals();  // before any thread starts: the logger's, the backends' call threads
    ctx_.config = std::move(cfg);
    ctx_.log = make_logger(ctx_.config, dist_);
    std::uint64_t epoch = 0;
    while (epoch == 0) {
        if (getrandom(&epoch, sizeof epoch, 0) != static_cast<ssize_t>(sizeof epoch))
            epoch = static_cast<std::uint64_t>(time(nullptr)) ^ (std::uint64_t(getpid()) << 32);
    }
    ctx_.epoch = epoch;
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ctx_.start_time_ns = std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}

Server::~Server() {
    if (listen_.fd >= 0) close(listen_.fd);
    if (signal_fd_ >= 0) close(signal_fd_);
    if (session_ended_fd_ >= 0) close(session_ended_fd_);
}

int Server::run() {
    if (const int status = start(); status != exit_status::clean_stop) return status;
    serve();
    refused_.close_all();
    shutdown_gracefully();
    return exit_status::clean_stop;
}

// Everything before the first accept, in an order that fails early and
// cheaply: the group and the descriptor limit, the backends and their
// self-test, the scheduler, signals, the SIGBUS guard, the sockets. READY=1
// goes out last.
int Server::start() {
    auto& log = *ctx_.log;
    const Config& cfg = ctx_.config;
    if (!admission_.resolve_group()) return exit_status::config_error;
    std::size_t lingering = 0;
    if (!check_descriptor_limit(cfg, log, lingering)) return exit_status::config_error;
    refused_.set_capacity(lingering);
    std::string failure;
    if (!backends_.open(host_kernel_, failure) || !backends_.self_test(failure)) {
        if (!failure.empty()) notify_.status(failure);
        return exit_status::runtime_failure;
    }
    Backend& primary = backends_.primary();
    scheduler_ = std::make_unique<Scheduler>(primary, backends_.cpu_fallback(), cfg.chunk_rows);
    scheduler_->set_metrics(&ctx_.metrics);
    scheduler_->set_planner(backends_.planner());
    // The CPU backend: a worker pauses its chunk every few rows for a waiting
    // 1-row or block-sized batch (the GPU path's chunks are not cut).
    if (backends_.cpu_fallback() == nullptr && primary.cheap_small_chunks()) {
        scheduler_->set_yield_rows(Scheduler::kYieldRows);
        scheduler_->set_pin_workers(cfg.pin_workers);
    }
    scheduler_->set_worker_nice(int(cfg.worker_nice));
    if (backends_.has_gpus()) {
        // The GPU path's chunks are not cut: small batches get workers of their own.
        scheduler_->set_lane_workers(Scheduler::kLaneWorkers);
        // SCHED_IDLE only where no other process shares the daemon's CPU
        // group (daemon/ops/cpu_group.hpp): there it would starve behind them.
        const CpuGroup group = own_cpu_group();
        scheduler_->set_bulk_idle(group.own);
        log.info("bulk workers: {} ({})", group.own ? "SCHED_IDLE beside the lane workers" : "nice +10",
                 group.own ? "alone in " + group.reason : group.reason);
    }
    ctx_.scheduler = scheduler_.get();
    ctx_.backends = [this] { return backends_.describe(); };
    ctx_.backend_kind = backends_.kind();

    if (open_signal_fd() < 0) {
        log.critical("signalfd: {}", std::strerror(errno));
        return exit_status::runtime_failure;
    }
    // Sized from the limits in force: a slot for every segment they allow, so
    // no client mapping is ever unguarded (registered buffers are read with
    // pread, never mapped: daemon/memory/registered_buffers.hpp).
    const char* why = nullptr;
    if (!guard::install(guard::capacity_for(cfg.max_clients, ParkedSessions::kCapacity, largest_segment_bytes(cfg)),
                        &why)) {
        log.critical("{}", why != nullptr ? why : "cannot install the SIGBUS guard");
        return exit_status::runtime_failure;
    }
    const int gid = admission_.have_group() ? int(admission_.group_gid()) : -1;
    if (!open_listen_socket(cfg, gid, log, listen_)) return exit_status::runtime_failure;
    if (!open_stats_socket()) return exit_status::runtime_failure;
    session_ended_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (session_ended_fd_ < 0) {
        log.critical("eventfd: {}", std::strerror(errno));
        return exit_status::runtime_failure;
    }
    ctx_.session_ended_fd = session_ended_fd_;
    admission_.set_segment_budget();
    scheduler_->start();
    log.info("sigverifyd {} listening on {} (backend {}, {} threads, chunk {} rows, arena {} bytes, {} ring entries, "
             "max {} clients, epoch {:016x})",
             SIGVERIFY_VERSION_STRING, listen_.path, primary.name(), primary.concurrency(), scheduler_->chunk_rows(),
             cfg.arena_size, cfg.ring_entries, cfg.max_clients, ctx_.epoch);
    // Sockets exist, the backend passed its self-test: ready.
    last_status_ = status_line();
    notify_.ready(last_status_);
    if (notify_.watchdog_period().count() > 0)
        log.info("systemd watchdog: pinging every {} ms while the workers make progress",
                 notify_.watchdog_period().count() / 1000);
    periodic(std::chrono::steady_clock::now());
    return exit_status::clean_stop;
}

// Signals are handled synchronously through a signalfd; they are blocked in
// every thread, which holds only if they are blocked before the first thread
// starts (threads inherit the mask; a thread started earlier — a GPU call
// thread of the backends, say — would take a SIGTERM with the default
// action and end the process without a graceful stop).
static sigset_t handled_signals() {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    return mask;
}

void Server::block_handled_signals() {
    const sigset_t mask = handled_signals();
    pthread_sigmask(SIG_BLOCK, &mask, nullptr);
    signal(SIGPIPE, SIG_IGN);
}

// The descriptor, or -1.
int Server::open_signal_fd() {
    const sigset_t mask = handled_signals();
    signal_fd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    return signal_fd_;
}

bool Server::open_stats_socket() {
    const Config& cfg = ctx_.config;
    stats_ = std::make_unique<StatsServer>(
        ctx_.metrics, [this](int fd, const ucred& cred, std::string& why) {
            char text[256];
            if (admission_.peer_allowed(fd, cred, text, sizeof text)) return true;
            why = text;
            return false;
        },
        [this] { return snapshot(); }, ctx_.log);
    stats_->set_log_limit(&ctx_.log_limit);
    const bool group = admission_.have_group();
    if (std::string err; !stats_->open(cfg.runtime_dir + "/stats.sock", group ? 0660 : 0600,
                                       group ? static_cast<gid_t>(admission_.group_gid()) : static_cast<gid_t>(-1),
                                       err)) {
        ctx_.log->critical("stats socket: {}", err);
        return false;
    }
    return true;
}

// The main loop: one poll over the listening socket, the signalfd, the
// session-ended eventfd, the stats socket, the lingering refusals, the
// sessions' hang-ups and the parked sessions, in that order (each range's
// start is remembered, every handler gets exactly its own range).
void Server::serve() {
    for (;;) {
        const auto now = std::chrono::steady_clock::now();
        // Reused every round (no allocation per wake-up: a connect loop wakes it often).
        std::vector<pollfd>& fds = poll_fds_;
        fds.clear();
        fds.push_back({accept_backoff_.poll_fd(listen_.fd, now), POLLIN, 0});
        fds.push_back({signal_fd_, POLLIN, 0});
        fds.push_back({session_ended_fd_, POLLIN, 0});
        const std::size_t stats_at = fds.size();
        stats_->add_pollfds(fds);
        const std::size_t refused_at = fds.size();
        refused_.add_pollfds(fds);
        const std::size_t sessions_at = fds.size();
        std::vector<Session*>& watched = watched_;
        watched.clear();
        watch_hang_ups(fds, watched);
        const std::size_t parked_at = fds.size();
        parked_.add_pollfds(fds);
        int timeout = refused_.empty() ? 200 : 50;
        if (const int t = stats_->next_timeout_ms(); t >= 0) timeout = std::min(timeout, t);
        if (const int t = accept_backoff_.timeout_ms(now); t >= 0) timeout = std::min(timeout, t);
        timeout = std::min(timeout, periodic_timeout_ms(std::chrono::steady_clock::now()));
        const int r = poll(fds.data(), fds.size(), timeout);
        if (r < 0 && errno != EINTR) {
            ctx_.log->critical("poll: {}", std::strerror(errno));
            return;
        }
        if (r > 0 && (fds[1].revents & POLLIN) && handle_signals()) return;
        // Hang-ups first: a client that closed and reconnects at once finds its slot free.
        if (r > 0) {
            for (std::size_t i = 0; i < watched.size(); ++i)
                if (fds[sessions_at + i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL))
                    watched[i]->peer_hung_up();
        }
        if (r > 0 && (fds[0].revents & POLLIN)) {
            for (int i = 0; i < 16 && accept_one(); ++i) {
            }
        }
        if (r > 0 && (fds[2].revents & POLLIN)) {
            std::uint64_t ended = 0;
            (void)!read(session_ended_fd_, &ended, sizeof ended);
        }
        if (!refused_.empty()) refused_.drain(fds.data() + refused_at, sessions_at - refused_at);
        if (!parked_.empty()) parked_.release(fds.data() + parked_at, fds.size() - parked_at);
        stats_->handle(fds.data() + stats_at, refused_at - stats_at);
        reap_sessions(false);
        periodic(std::chrono::steady_clock::now());
    }
}

bool Server::handle_signals() {
    signalfd_siginfo si;
    bool stop = false;
    while (read(signal_fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
        if (si.ssi_signo == SIGHUP) {
            reload();
        } else {
            ctx_.log->info("received signal {}: shutting down", si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
            stop = true;
        }
    }
    return stop;
}

bool Server::accept_one() {
    int fd = accept4(listen_.fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
        const int e = errno;
        if (e == EAGAIN || e == EWOULDBLOCK) return false;
        if (e == EINTR || e == ECONNABORTED) return true;
        if (AcceptBackoff::resource_error(e)) {
            // The connection stays in the backlog: polling the socket again at
            // once would spin. Pause, serve the connected clients meanwhile.
            ctx_.metrics.accept_errors.fetch_add(1, std::memory_order_relaxed);
            accept_backoff_.failed(std::chrono::steady_clock::now());
            if (ctx_.log_limit.allow(*ctx_.log, "accept"))
                ctx_.log->warn("accept: {}; not accepting connections for {} ms ({} clients connected)",
                               std::strerror(e), accept_backoff_.pause.count(), ctx_.active_sessions.load());
            return false;
        }
        if (ctx_.log_limit.allow(*ctx_.log, "accept")) ctx_.log->warn("accept: {}", std::strerror(e));
        return false;
    }
    accept_backoff_.succeeded();
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        if (ctx_.log_limit.allow(*ctx_.log, "SO_PEERCRED"))
            ctx_.log->warn("SO_PEERCRED: {}", std::strerror(errno));
        close(fd);
        return true;
    }
    // A refusal sends one reply and closes (or lingers): no allocation, no
    // thread, no segment.
    Admission::Refusal refusal;
    if (!admission_.admit(fd, cred, occupied_slots(), refusal)) {
        refused_.refuse(fd, refusal.status, ctx_.epoch, refusal.prefix, refusal.reason);
        return true;
    }
    start_session(fd, cred);
    return true;
}

void Server::start_session(int fd, const ucred& cred) {
    ctx_.active_sessions.fetch_add(1);
    ctx_.metrics.connections_accepted.fetch_add(1, std::memory_order_relaxed);
    auto session = std::make_shared<Session>(ctx_, fd, cred, next_session_id_++);
    try {
        std::thread t([session] {
            name_this_thread("sv-session");
            session->run();
        });
        sessions_.emplace_back(session, std::move(t));
    } catch (const std::exception& e) {
        ctx_.log->error("cannot start a session thread: {}", e.what());
        ctx_.active_sessions.fetch_sub(1);
    }
}

// Sessions that hold a slot: those running, less those whose client has
// hung up (they are ending: their threads finish within a few milliseconds).
// So a client that closes and reconnects at once is not refused as busy.
// active_sessions is read first: a session that finishes meanwhile can only
// make this an overestimate.
unsigned Server::occupied_slots() const {
    const unsigned active = ctx_.active_sessions.load();
    unsigned ending = 0;
    for (const auto& [session, thread] : sessions_)
        if (session->hang_up_seen() && !session->finished()) ++ending;
    return active - std::min(active, ending);
}

// Every session whose client may still hang up: the main loop notices the
// hang-up at once and ends the session (Session::peer_hung_up), instead of
// the reader finding it at its next socket check.
void Server::watch_hang_ups(std::vector<pollfd>& fds, std::vector<Session*>& watched) const {
    for (const auto& [session, thread] : sessions_) {
        if (session->finished() || session->hang_up_seen()) continue;
        fds.push_back({session->control_fd(), POLLRDHUP, 0});
        watched.push_back(session.get());
    }
}

// Joins the threads of ended sessions (all of them on shutdown). A session
// whose client is still connected although the daemon ended it (a protocol
// violation) is parked (daemon/serve/lingering.hpp): its segment stays mapped for
// the client to read the closed state.
void Server::reap_sessions(bool all) {
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        if (all || it->first->finished()) {
            if (all) it->first->request_stop();
            if (it->second.joinable()) it->second.join();
            if (!all && !ctx_.stopping.load() && !it->first->peer_gone()) parked_.park(it->first);
            it = sessions_.erase(it);
        } else {
            ++it;
        }
    }
    if (all) parked_.clear();
}

void Server::shutdown_gracefully() {
    ctx_.stopping.store(true);
    notify_.stopping("stopping: finishing in-flight batches of " + std::to_string(ctx_.active_sessions.load()) +
                     " clients");
    if (stats_) stats_->close_all();
    if (listen_.fd >= 0) {
        close(listen_.fd);
        listen_.fd = -1;
    }
    unlink(listen_.path.c_str());
    for (auto& [s, t] : sessions_) s->set_closing();
    const auto timeout = std::chrono::milliseconds(ctx_.config.shutdown_timeout_ms);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    if (!scheduler_->wait_idle(deadline)) {
        ctx_.log->warn("shutdown: in-flight batches did not finish within {} ms; cancelling them",
                       ctx_.config.shutdown_timeout_ms);
        for (auto& [s, t] : sessions_) s->cancel_jobs(shm::Status::cancelled);
        // Only chunks already running remain; each is bounded by --chunk-rows.
        scheduler_->wait_idle(std::chrono::steady_clock::now() + std::chrono::seconds(10));
    }
    reap_sessions(true);
    scheduler_->stop();
    ctx_.log->info("sigverifyd stopped");
    ctx_.log->flush();
}

// SIGHUP: the log destination is opened again (logrotate moved the file),
// and the --config file and command line are read again; the keys that can
// change at run time are applied (daemon/ops/reload.hpp), one line says which
// and which changed keys wait for a restart. A file that no longer parses
// changes nothing.
void Server::reload() {
    ParseResult reread = parse_command_line(ctx_.config.command_line);
    if (!reread.config) {
        std::string why = reread.error;
        while (!why.empty() && why.back() == '\n') why.pop_back();
        ctx_.metrics.config_reload_errors.fetch_add(1, std::memory_order_relaxed);
        ctx_.log->error("SIGHUP: configuration not reloaded, keeping the running one: {}", why);
        reopen_logs();
        return;
    }
    const ReloadPlan plan = plan_reload(ctx_.config, *reread.config);
    apply_runtime_keys(ctx_.config, *reread.config);
    reopen_logs();
    ctx_.log->set_level(spdlog::level::from_str(ctx_.config.log_level));
    backends_.apply_sampling();
    next_periodic_ = std::min(next_periodic_, std::chrono::steady_clock::now() +
                                                  std::chrono::seconds(ctx_.config.metrics_interval));
    ctx_.metrics.config_reloads.fetch_add(1, std::memory_order_relaxed);
    // warn: visible at every log level but error/critical/off.
    ctx_.log->warn("SIGHUP: {}", describe_reload(ctx_.config.config_file, plan));
}

void Server::reopen_logs() {
    try {
        dist_->set_sinks({make_log_sink(ctx_.config)});
        if (!ctx_.config.log_file.empty()) ctx_.log->info("SIGHUP: reopened log file {}", ctx_.config.log_file);
    } catch (const std::exception& e) {
        ctx_.log->error("SIGHUP: cannot reopen log file {}: {}", ctx_.config.log_file, e.what());
    }
}

StatsSnapshot Server::snapshot() {
    StatsSnapshot s;
    s.version = SIGVERIFY_VERSION_STRING;
    s.protocol_version = shm::kProtocolVersion;
    s.abi_major = shm::kAbiMajor;
    s.abi_minor = shm::kAbiMinor;
    s.start_time_seconds = double(ctx_.start_time_ns) * 1e-9;
    s.uptime_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    s.epoch = ctx_.epoch;
    for (auto& [session, thread] : sessions_) {
        if (session->finished() || !session->established()) continue;
        s.clients.push_back(session->info());
        s.queued_jobs += s.clients.back().in_flight;
    }
    s.connected_clients = ctx_.active_sessions.load();
    s.max_clients = ctx_.config.max_clients;
    s.stats_connections = stats_ ? stats_->connections() : 0;
    s.shm_bytes = ctx_.segment_budget.total();
    s.shm_budget_bytes = ctx_.segment_budget.total_limit();
    s.settings.log_level = ctx_.config.log_level;
    s.settings.log_format = std::string(to_string(ctx_.config.log_format));
    s.settings.cross_check_sample = ctx_.config.cross_check_sample;
    s.settings.cross_check_invalid_sample = ctx_.config.cross_check_invalid_sample;
    s.settings.metrics_textfile = ctx_.config.metrics_textfile;
    s.settings.metrics_interval = ctx_.config.metrics_interval;
    s.backends = backends_.describe();
    if (const SplitPlanner* planner = backends_.planner(); planner != nullptr) {
        s.has_split = true;
        s.split = planner->estimates();
    }
    return s;
}

std::string Server::status_line() {
    const Metrics& m = ctx_.metrics;
    std::uint64_t valid = 0, invalid = 0;
    for (const auto& t : m.rows_verified) {
        valid += t[1].load(std::memory_order_relaxed);
        invalid += t[0].load(std::memory_order_relaxed);
    }
    return "serving " + std::to_string(ctx_.active_sessions.load()) + " clients; " + std::to_string(valid + invalid) +
           " rows verified (" + std::to_string(invalid) + " invalid); backend " + backends_.summary();
}

int Server::periodic_timeout_ms(std::chrono::steady_clock::time_point now) const {
    auto next = next_periodic_;
    if (notify_.watchdog_period().count() > 0) next = std::min(next, next_watchdog_);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
    return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, 1000));
}

void Server::periodic(std::chrono::steady_clock::time_point now) {
    if (notify_.watchdog_period().count() > 0 && now >= next_watchdog_) {
        next_watchdog_ = now + notify_.watchdog_period();
        std::uint64_t queued = 0;
        for (auto& [session, thread] : sessions_)
            if (!session->finished() && session->established()) queued += session->info().in_flight;
        if (watchdog_gate_.should_ping(ctx_.metrics.progress.load(std::memory_order_relaxed), queued)) {
            notify_.watchdog();
            if (watchdog_withheld_) ctx_.log->info("systemd watchdog: workers progress again, pinging");
            watchdog_withheld_ = false;
        } else if (!watchdog_withheld_) {
            watchdog_withheld_ = true;
            ctx_.log->error("systemd watchdog: {} batches queued and no worker progressed for {} ms; withholding "
                            "WATCHDOG=1",
                            queued, notify_.watchdog_period().count() / 1000);
        }
    }
    ctx_.log_limit.flush(*ctx_.log);  // summaries of rate-limited lines
    if (now < next_periodic_) return;
    next_periodic_ = now + std::chrono::seconds(ctx_.config.metrics_interval);
    if (std::string st = status_line(); st != last_status_) {
        notify_.status(st);
        last_status_ = std::move(st);
    }
    if (!ctx_.config.metrics_textfile.empty()) {
        std::string err;
        if (write_text_atomically(ctx_.config.metrics_textfile, render_prometheus(ctx_.metrics, snapshot()), err)) {
            ctx_.metrics.textfile_writes.fetch_add(1, std::memory_order_relaxed);
        } else {
            if (ctx_.metrics.textfile_errors.fetch_add(1, std::memory_order_relaxed) == 0)
                ctx_.log->error("--metrics-textfile: {}", err);
        }
    }
}

}  // namespace sigverify::daemon
