// SPDX-License-Identifier: MIT
#include "daemon/server.hpp"


#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>

#include <spdlog/spdlog.h>

#include "daemon/exit_codes.hpp"
#include "daemon/host_kernel_backend.hpp"
#include "daemon/logging.hpp"
#include "daemon/mapping_guard.hpp"
#include "daemon/registered_buffers.hpp"
#include "daemon/reload.hpp"
#include "daemon/self_test.hpp"
#include "shm_protocol/segment_access.hpp"
#include "shm_protocol/segment_layout.hpp"
#include "sigverify/version.h"  // generated from the CMake project version

namespace sigverify::daemon {
namespace {

// Sessions ended by a violation whose client is still connected, kept for it
// to read the closed state (reap_sessions); each keeps its segment mapped,
// so the SIGBUS guard has a slot for each (guard::capacity_for).
constexpr std::size_t kMaxParked = 64;

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

bool mkdir_p(const std::string& path) {
    std::string cur;
    for (std::size_t i = 0; i <= path.size(); ++i) {
        if (i == path.size() || (path[i] == '/' && i != 0)) {
            cur = path.substr(0, i);
            if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST) return false;
        }
    }
    struct stat st;
    return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

Server::Server(Config cfg, HostKernelFactory host_kernel) : host_kernel_(std::move(host_kernel)) {
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
    if (listen_fd_ >= 0) close(listen_fd_);
    if (signal_fd_ >= 0) close(signal_fd_);
    if (session_ended_fd_ >= 0) close(session_ended_fd_);
}

// The shared memory budget: two segments of the largest size a client can
// get per --max-clients slot: one of the session in the slot, one of a
// session that ended there and whose segment is not released yet (a client
// that hung up frees its slot at once; its segment is truncated once its last
// running chunk finished, normally within milliseconds). One uid may hold
// --max-segments-per-uid segments of that size (default 1.5 per slot, three
// quarters of the total: enough for a node using every slot while some of its
// ended sessions' segments are being released, and about a quarter is always
// left to other uids).
void Server::set_segment_budget() {
    shm::Layout layout;
    const std::uint64_t segment = shm::compute_layout(ctx_.config.ring_entries, ctx_.config.ring_entries,
                                                      std::max(ctx_.config.arena_size, shm::kMinArenaSize), layout)
                                      ? layout.segment_size
                                      : ctx_.config.arena_size;
    const std::uint64_t slots = std::max(1u, unsigned(ctx_.config.max_clients));
    const std::uint64_t total = 2 * segment * slots;
    const std::uint64_t per_uid_segments =
        ctx_.config.max_segments_per_uid != 0 ? ctx_.config.max_segments_per_uid : slots + (slots + 1) / 2;
    ctx_.segment_budget.set_limits(total, std::min(total, per_uid_segments * segment));
    smallest_segment_ = shm::compute_layout(shm::kMinRingEntries, shm::kMinRingEntries, shm::kMinArenaSize, layout)
                            ? layout.segment_size
                            : shm::kMinArenaSize;
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

// SIGHUP: the log destination is opened again (logrotate moved the file),
// and the --config file and command line are read again; the keys that can
// change at run time are applied (daemon/reload.hpp), one line says which
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
    if (gpus_ != nullptr)
        for (std::size_t i = 0; i < gpus_->devices(); ++i)
            gpus_->device(i).set_sampling(ctx_.config.cross_check_sample, ctx_.config.cross_check_invalid_sample);
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

bool Server::setup_socket() {
    const std::string& dir = ctx_.config.runtime_dir;
    if (!mkdir_p(dir)) {
        ctx_.log->critical("cannot create runtime directory {}: {}", dir, std::strerror(errno));
        return false;
    }
    socket_path_ = dir + "/sigverifyd.sock";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket_path_.size() >= sizeof addr.sun_path) {
        ctx_.log->critical("socket path too long: {}", socket_path_);
        return false;
    }
    std::memcpy(addr.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
    // A live daemon already there? Then do not steal its socket.
    {
        int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
            close(probe);
            ctx_.log->critical("another sigverifyd is already listening on {}", socket_path_);
            return false;
        }
        if (probe >= 0) close(probe);
    }
    unlink(socket_path_.c_str());
    listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listen_fd_ < 0) {
        ctx_.log->critical("socket: {}", std::strerror(errno));
        return false;
    }
    const mode_t old = umask(0177);
    const int rc = bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    umask(old);
    if (rc != 0) {
        ctx_.log->critical("bind {}: {}", socket_path_, std::strerror(errno));
        return false;
    }
    if (have_group_) {
        if (chown(socket_path_.c_str(), static_cast<uid_t>(-1), group_gid_) != 0)
            ctx_.log->warn("chown {} to group {}: {}", socket_path_, ctx_.config.group, std::strerror(errno));
        chmod(socket_path_.c_str(), 0660);
    } else {
        chmod(socket_path_.c_str(), 0600);
    }
    if (listen(listen_fd_, 128) != 0) {
        ctx_.log->critical("listen: {}", std::strerror(errno));
        return false;
    }
    return true;
}

bool Server::peer_allowed(int fd, const ucred& cred, char* why, std::size_t size) {
    if (cred.uid == 0 || cred.uid == geteuid()) return true;
    if (have_group_) {
        if (cred.gid == group_gid_) return true;
        gid_t groups[1024];
        socklen_t len = sizeof groups;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0) {
            for (socklen_t i = 0; i < len / sizeof(gid_t); ++i)
                if (groups[i] == group_gid_) return true;
        }
        std::snprintf(why, size,
                      "uid %u gid %u is not root, not the daemon's uid %u and not a member of group '%s'",
                      unsigned(cred.uid), unsigned(cred.gid), unsigned(geteuid()), ctx_.config.group.c_str());
    } else {
        std::snprintf(why, size, "uid %u is not root and not the daemon's uid %u (no --group configured)",
                      unsigned(cred.uid), unsigned(geteuid()));
    }
    return false;
}

// Descriptors the daemon needs with every client connected: a base for the
// process itself (stdio, log file, both listening sockets, signalfd, notify
// socket, metrics textfile, GPU driver files), the stats connections, and per
// client its control socket and its segment's descriptor (kept to truncate
// it) plus, during its handshake, the one passed to the client. Refused
// connections kept open until the peer read the reply, and sessions parked
// after a protocol violation (at most 64), use what is left (at most 256),
// and registered buffers (the daemon keeps a descriptor of each, to read it
// with pread: max-clients x max-registered-buffers with every slot full)
// what is left after them; a registration past that is refused.
// Raises the soft RLIMIT_NOFILE up to the hard one when needed; false when
// even the hard limit is too low for the clients.
bool Server::check_descriptor_limit() {
    constexpr rlim_t kBase = 64, kStats = 16, kPerClient = 3, kLinger = 256;
    const rlim_t need = kBase + kStats + kPerClient * rlim_t(ctx_.config.max_clients);
    const rlim_t registrations = rlim_t(ctx_.config.max_clients) * ctx_.config.max_registered_buffers;
    const rlim_t want = need + kLinger + registrations;
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return true;  // cannot tell: go on
    if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < want) {
        rlimit raised = lim;
        raised.rlim_cur = lim.rlim_max == RLIM_INFINITY ? want : std::min(lim.rlim_max, want);
        if (raised.rlim_cur > lim.rlim_cur && setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
    }
    if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < need) {
        ctx_.log->critical("--max-clients {} needs about {} descriptors ({} + {} per client), but RLIMIT_NOFILE "
                           "is {} (hard limit {}): lower --max-clients or raise the limit (LimitNOFILE=)",
                           ctx_.config.max_clients, need, kBase + kStats, kPerClient, lim.rlim_cur,
                           lim.rlim_max == RLIM_INFINITY ? std::string("unlimited") : std::to_string(lim.rlim_max));
        return false;
    }
    max_lingering_ = lim.rlim_cur == RLIM_INFINITY ? kLinger : std::size_t(std::min(kLinger, lim.rlim_cur - need));
    if (lim.rlim_cur == RLIM_INFINITY) return true;  // the budget stays unbounded
    // All that is left, not just a full house's worth: a session that ended
    // while a chunk still reads its buffers holds them a moment longer.
    const rlim_t left = lim.rlim_cur - need - max_lingering_;
    set_registered_descriptor_budget(left);
    if (left < registrations)
        ctx_.log->warn("RLIMIT_NOFILE {} leaves descriptors for {} registered buffers, fewer than --max-clients {} x "
                       "--max-registered-buffers {}: registrations past them are refused (LimitNOFILE=)",
                       lim.rlim_cur, left, ctx_.config.max_clients, ctx_.config.max_registered_buffers);
    return true;
}

bool Server::accept_one() {
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
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
    // The checks, cheapest and least revealing first: who the peer is (an
    // unpermitted uid learns nothing else), a free slot, room in the shared
    // memory budget, then the rate limit (last, so that only sessions that
    // start take a token). A refusal formats
    // its reason into `why` on the stack, sends one reply and closes: no
    // allocation, no thread, no segment (refuse_connection).
    char why[256];
    if (!peer_allowed(fd, cred, why, sizeof why)) {
        ++ctx_.refused;
        if (ctx_.log_limit.allow(*ctx_.log, "refused: permission denied"))
            ctx_.log->warn("refused connection from pid {}: {}", cred.pid, why);
        refuse_connection(fd, shm::Status::permission_denied, "permission denied: ", why);
        return true;
    }
    if (occupied_slots() >= ctx_.config.max_clients) {
        ++ctx_.refused;
        if (ctx_.log_limit.allow(*ctx_.log, "refused: busy"))
            ctx_.log->warn("refused connection from pid {} uid {}: --max-clients {} reached", cred.pid, cred.uid,
                           ctx_.config.max_clients);
        std::snprintf(why, sizeof why, "%u clients", ctx_.config.max_clients);
        refuse_connection(fd, shm::Status::busy, "sigverifyd is serving its maximum of ", why);
        return true;
    }
    if (!ctx_.segment_budget.would_fit(cred.uid, smallest_segment_)) {
        // Not even the smallest segment would fit: refused here, not after a
        // session thread read its hello (the exact check is there).
        ++ctx_.refused;
        ctx_.metrics.refused_shm_budget.fetch_add(1, std::memory_order_relaxed);
        if (ctx_.log_limit.allow(*ctx_.log, "refused: shared memory budget"))
            ctx_.log->warn("refused connection from pid {} uid {}: shared memory budget (uid or total) reached",
                           cred.pid, cred.uid);
        std::snprintf(why, sizeof why, "uid %u or the daemon is at its shared memory budget", unsigned(cred.uid));
        refuse_connection(fd, shm::Status::busy, "sigverifyd is busy: ", why);
        return true;
    }
    if (!connection_rate_.admit(cred.uid, cred.pid, std::chrono::steady_clock::now(), why, sizeof why)) {
        ++ctx_.refused;
        ctx_.metrics.refused_rate_limited.fetch_add(1, std::memory_order_relaxed);
        if (ctx_.log_limit.allow(*ctx_.log, "refused: rate limit"))
            ctx_.log->warn("refused connection from pid {} uid {}: {}", cred.pid, cred.uid, why);
        refuse_connection(fd, shm::Status::busy, "sigverifyd is busy: ", why);
        return true;
    }
    ctx_.active_sessions.fetch_add(1);
    ctx_.metrics.connections_accepted.fetch_add(1, std::memory_order_relaxed);
    auto session = std::make_shared<Session>(ctx_, fd, cred, next_session_id_++);
    try {
        std::thread t([session] { session->run(); });
        sessions_.emplace_back(session, std::move(t));
    } catch (const std::exception& e) {
        ctx_.log->error("cannot start a session thread: {}", e.what());
        ctx_.active_sessions.fetch_sub(1);
    }
    return true;
}

// If the peer's hello arrived already, it is read and the connection closed
// at once: the reply stays readable for the peer after the close, and with
// nothing of the peer's left unread the close does not reset the connection.
// Otherwise (the peer has not sent yet: closing now would make its send fail
// with EPIPE before it reads the reason) the connection lingers.
void Server::refuse_connection(int fd, shm::Status status, const char* prefix, const char* text) {
    alignas(8) char hello[512];
    const ssize_t got = recv(fd, hello, sizeof hello, MSG_DONTWAIT);
    send_refusal(fd, status, ctx_.epoch, prefix, text);
    if (got >= 0) {
        close(fd);  // got == 0: the peer is gone already
        return;
    }
    linger_refused(fd);
}

void Server::linger_refused(int fd) {
    shutdown(fd, SHUT_WR);
    if (refused_.size() >= max_lingering_) {
        close(fd);
        return;
    }
    refused_.emplace_back(fd, std::chrono::steady_clock::now() + std::chrono::seconds(1));
}

// fds[k] is refused_[k] for k < n: the entries polled, in order (accept_one
// only appends). One pass, so a flood of refusals costs linear time.
void Server::drain_refused(const pollfd* fds, std::size_t n) {
    const auto now = std::chrono::steady_clock::now();
    std::size_t kept = 0;
    for (std::size_t i = 0; i < refused_.size(); ++i) {
        bool done = now >= refused_[i].second;
        if (!done && i < n && fds[i].fd == refused_[i].first && fds[i].revents != 0) {
            char buf[512];
            const ssize_t r = recv(fds[i].fd, buf, sizeof buf, MSG_DONTWAIT);
            done = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ||
                   (fds[i].revents & (POLLHUP | POLLERR | POLLNVAL)) != 0;
        }
        if (done) close(refused_[i].first);
        else refused_[kept++] = refused_[i];
    }
    refused_.resize(kept);
}

// Joins the threads of ended sessions (all of them on shutdown). A session
// whose client is still connected although the daemon ended it (a protocol
// violation) is parked: its segment stays mapped for the client to read the
// closed state, and is truncated when the client hangs up or after
// kParkedGrace (it stays counted in the shared memory budget meanwhile).
void Server::reap_sessions(bool all) {
    constexpr auto kParkedGrace = std::chrono::seconds(2);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = sessions_.begin(); it != sessions_.end();) {
        if (all || it->first->finished()) {
            if (all) it->first->request_stop();
            if (it->second.joinable()) it->second.join();
            if (!all && !ctx_.stopping.load() && !it->first->peer_gone()) {
                // Each holds its control socket and segment descriptor: bounded,
                // the oldest one's grace is cut short (truncated now) when full.
                if (parked_.size() >= kMaxParked) parked_.erase(parked_.begin());
                parked_.emplace_back(it->first, now + kParkedGrace);
            }
            it = sessions_.erase(it);
        } else {
            ++it;
        }
    }
    if (all) parked_.clear();
}

void Server::release_parked(const pollfd* fds, std::size_t n) {
    const auto now = std::chrono::steady_clock::now();
    std::size_t kept = 0;
    for (std::size_t i = 0; i < parked_.size(); ++i) {
        const bool hung_up = i < n && (fds[i].revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
        if (!hung_up && now < parked_[i].second) parked_[kept++] = std::move(parked_[i]);
    }
    parked_.resize(kept);  // the dropped ones are destroyed: unmapped, truncated, released
}

void Server::shutdown_gracefully() {
    ctx_.stopping.store(true);
    notify_.stopping("stopping: finishing in-flight batches of " + std::to_string(ctx_.active_sessions.load()) +
                     " clients");
    if (stats_) stats_->close_all();
    if (listen_fd_ >= 0) {
        close(listen_fd_);
        listen_fd_ = -1;
    }
    unlink(socket_path_.c_str());
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

// Puts the GPUs (or their host twins) in place: each behind its own
// CheckedBackend, all striped, with a CPU fallback and the batch split.
void Server::use_gpus(std::vector<std::unique_ptr<Backend>> devices, unsigned cpu_threads) {
    const Config& cfg = ctx_.config;
    const unsigned workers = devices.front()->concurrency();
    const CrossCheckPolicy policy{cfg.cross_check_sample, cfg.gpu_min_rows, cfg.cross_check_invalid_sample};
    std::vector<std::unique_ptr<CheckedBackend>> checked;
    for (auto& device : devices) {
        const std::string name = device->name();
        checked.push_back(std::make_unique<CheckedBackend>(
            std::move(device), cfg.gpu_chunk_rows, policy, [this, name](const std::string& reason) {
                // Runs once per GPU, in the worker that found the fault, after its counters moved.
                const bool mismatch = reason.find("disagrees") != std::string::npos;
                (mismatch ? ctx_.metrics.gpu_crosscheck_mismatches : ctx_.metrics.gpu_errors)
                    .fetch_add(1, std::memory_order_relaxed);
                const bool others = gpus_ != nullptr && gpus_->any_enabled();
                ctx_.log->error("{} switched off, {}: {}", name,
                                others ? "the other GPUs take its share" : "verifying on the CPU from now on", reason);
            }));
    }
    auto striped = std::make_unique<StripedBackend>(std::move(checked));
    gpus_ = striped.get();
    backend_ = std::move(striped);
    cpu_fallback_ = std::make_unique<CpuBackend>(std::max(workers, cpu_threads));
    if (cfg.gpu_split) planner_ = std::make_unique<SplitPlanner>(SplitEstimates{}, cfg.gpu_min_rows);
    ctx_.log->info("backend {}: {} worker(s) striped over {} GPU(s), chunks of {} rows, {} in flight per GPU, "
                   "chunks under {} rows on the CPU, batch split {}, cross-check: 1 in {} valid verdicts "
                   "re-verified by libsecp256k1; invalid verdicts: confirm rule {} (multisig: those of failing "
                   "groups and 1 in {} others; other tables: all)",
                   gpus_->name(), workers, gpus_->devices(), cfg.gpu_chunk_rows, cfg.gpu_chunks_in_flight,
                   cfg.gpu_min_rows, cfg.gpu_split ? "auto" : "off", cfg.cross_check_sample, to_string(cfg.confirm),
                   cfg.cross_check_invalid_sample);
}

// Chooses the verification backend. With a usable GPU (--backend gpu|auto),
// the GPUs (use_gpus); otherwise the CPU backend. --backend gpu without a
// usable GPU is a start-up error. --backend host-kernel: the GPU path with
// the kernels' host twin in each GPU's place (tests; one per --gpus entry).
bool Server::select_backend() {
    auto& log = *ctx_.log;
    const Config& cfg = ctx_.config;
    const unsigned cpu_threads = cfg.cpu_threads ? cfg.cpu_threads : std::max(1u, std::thread::hardware_concurrency());
    // The GPU path's workers, and the latency lane's on top (Scheduler::set_lane_workers).
    const unsigned gpu_workers = cpu_threads + Scheduler::kLaneWorkers;
    if (cfg.backend == BackendChoice::host_kernel) {
        const std::size_t count =
            cfg.gpus == "all" ? 1 : std::size_t(std::count(cfg.gpus.begin(), cfg.gpus.end(), ',')) + 1;
        std::vector<std::unique_ptr<Backend>> devices;
        for (std::size_t i = 0; i < count; ++i) {
            devices.push_back(host_kernel_ ? host_kernel_(int(i), gpu_workers)
                                           : std::make_unique<HostKernelBackend>(int(i), gpu_workers));
            GpuDeviceReport r;
            r.info.index = int(i);
            r.info.name = "host kernel (CPU)";
            r.usable = true;
            r.self_test = "passed";
            gpu_reports_.push_back(r);
        }
        log.warn("--backend host-kernel: the GPU kernels' host twin in the place of {} GPU(s), for tests (slow)",
                 count);
        use_gpus(std::move(devices), cpu_threads);
        return true;
    }
    if (cfg.backend != BackendChoice::cpu) {
        std::string error;
        auto opened = GpuBackend::open_all(cfg.gpus, gpu_workers, cfg.gpu_chunk_rows, cfg.gpu_chunks_in_flight,
                                           gpu_reports_, error);
        for (const auto& r : gpu_reports_)
            log.info("gpu {} {} ({} SMs, {} MiB): self-test {}", r.info.index, r.info.name, r.info.sm_count,
                     r.info.total_memory >> 20, r.self_test);
        if (!opened.empty()) {
            std::vector<std::unique_ptr<Backend>> devices;
            for (auto& gpu : opened) devices.push_back(std::move(gpu));
            use_gpus(std::move(devices), cpu_threads);
            return true;
        }
        if (cfg.backend == BackendChoice::gpu) {
            log.critical("--backend gpu: no usable GPU: {}", error);
            notify_.status("no usable GPU: " + error);
            return false;
        }
        log.info("backend auto: no usable GPU ({}), using the cpu", error);
    }
    try {
        backend_ = std::make_unique<CpuBackend>(cfg.cpu_threads);
    } catch (const std::exception& e) {
        log.critical("cannot start the cpu backend: {}", e.what());
        return false;
    }
    return true;
}

int Server::run() {
    auto& log = *ctx_.log;
    const Config& cfg = ctx_.config;
    if (!cfg.group.empty()) {
        group g{};
        group* result = nullptr;
        std::vector<char> buf(1 << 16);
        if (getgrnam_r(cfg.group.c_str(), &g, buf.data(), buf.size(), &result) != 0 || result == nullptr) {
            log.critical("--group {}: no such group", cfg.group);
            return exit_status::config_error;
        }
        have_group_ = true;
        group_gid_ = g.gr_gid;
    }
    if (!check_descriptor_limit()) return exit_status::config_error;
    if (!select_backend()) return exit_status::runtime_failure;
    if (!backend_self_test(*backend_, self_test_)) {
        log.critical("backend {} failed its self-test: {}", backend_->name(), self_test_);
        notify_.status("backend " + backend_->name() + " failed its self-test: " + self_test_);
        return exit_status::runtime_failure;
    }
    log.info("backend {} self-test {}", backend_->name(), self_test_);
    // After the self-test, so that only a GPU that answered right is timed.
    if (planner_ != nullptr && planner_->calibrate_on(*backend_))
        log.info("batch split: GPU round trip {:.3f} ms at start-up; the estimate stays within {}x of it",
                 planner_->estimates().gpu_latency_s * 1e3, SplitPlanner::kCalibrationRange);
    scheduler_ = std::make_unique<Scheduler>(*backend_, cpu_fallback_.get(), cfg.chunk_rows);
    scheduler_->set_metrics(&ctx_.metrics);
    scheduler_->set_planner(planner_.get());
    // The CPU backend: a worker pauses its chunk every few rows for a waiting
    // 1-row or block-sized batch (the GPU path's chunks are not cut).
    if (cpu_fallback_ == nullptr && backend_->cheap_small_chunks()) {
        scheduler_->set_yield_rows(Scheduler::kYieldRows);
        scheduler_->set_pin_workers(cfg.pin_workers);
    }
    scheduler_->set_worker_nice(int(cfg.worker_nice));
    if (gpus_ != nullptr) {
        // The GPU path's chunks are not cut: small batches get workers of their own.
        scheduler_->set_lane_workers(Scheduler::kLaneWorkers);
        scheduler_->set_bulk_nice(Scheduler::kBulkNice);
    }
    ctx_.scheduler = scheduler_.get();
    ctx_.backends = [this] { return backends(); };
    ctx_.backend_kind = gpus_ == nullptr ? "cpu" : cfg.backend == BackendChoice::host_kernel ? "host-kernel" : "gpu";

    // Signals are handled synchronously through a signalfd; block them in
    // every thread (threads inherit this mask).
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &mask, nullptr);
    signal(SIGPIPE, SIG_IGN);
    signal_fd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (signal_fd_ < 0) {
        log.critical("signalfd: {}", std::strerror(errno));
        return exit_status::runtime_failure;
    }
    // Sized from the limits in force: a slot for every segment they allow, so
    // no client mapping is ever unguarded (registered buffers are read with
    // pread, never mapped: daemon/registered_buffers.hpp).
    {
        shm::Layout layout;
        const std::uint64_t largest = shm::compute_layout(cfg.ring_entries, cfg.ring_entries,
                                                          std::max(cfg.arena_size, shm::kMinArenaSize), layout)
                                          ? layout.segment_size
                                          : cfg.arena_size;
        const char* why = nullptr;
        if (!guard::install(guard::capacity_for(cfg.max_clients, kMaxParked, largest), &why)) {
            log.critical("{}", why != nullptr ? why : "cannot install the SIGBUS guard");
            return exit_status::runtime_failure;
        }
    }
    if (!setup_socket()) return exit_status::runtime_failure;
    stats_ = std::make_unique<StatsServer>(
        ctx_.metrics, [this](int fd, const ucred& cred, std::string& why) {
            char text[256];
            if (peer_allowed(fd, cred, text, sizeof text)) return true;
            why = text;
            return false;
        },
        [this] { return snapshot(); }, ctx_.log);
    stats_->set_log_limit(&ctx_.log_limit);
    if (std::string err; !stats_->open(cfg.runtime_dir + "/stats.sock", have_group_ ? 0660 : 0600,
                                       have_group_ ? static_cast<gid_t>(group_gid_) : static_cast<gid_t>(-1), err)) {
        log.critical("stats socket: {}", err);
        return exit_status::runtime_failure;
    }
    session_ended_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (session_ended_fd_ < 0) {
        log.critical("eventfd: {}", std::strerror(errno));
        return exit_status::runtime_failure;
    }
    ctx_.session_ended_fd = session_ended_fd_;
    set_segment_budget();
    scheduler_->start();
    log.info("sigverifyd {} listening on {} (backend {}, {} threads, chunk {} rows, arena {} bytes, {} ring entries, "
             "max {} clients, epoch {:016x})",
             SIGVERIFY_VERSION_STRING, socket_path_, backend_->name(), backend_->concurrency(), scheduler_->chunk_rows(),
             cfg.arena_size, cfg.ring_entries, cfg.max_clients, ctx_.epoch);
    // Sockets exist, the backend passed its self-test: ready.
    last_status_ = status_line();
    notify_.ready(last_status_);
    if (notify_.watchdog_period().count() > 0)
        log.info("systemd watchdog: pinging every {} ms while the workers make progress",
                 notify_.watchdog_period().count() / 1000);
    periodic(std::chrono::steady_clock::now());

    for (;;) {
        const auto now = std::chrono::steady_clock::now();
        // Reused every round (no allocation per wake-up: a connect loop wakes it often).
        std::vector<pollfd>& fds = poll_fds_;
        fds.clear();
        fds.push_back({accept_backoff_.poll_fd(listen_fd_, now), POLLIN, 0});
        fds.push_back({signal_fd_, POLLIN, 0});
        fds.push_back({session_ended_fd_, POLLIN, 0});
        const std::size_t stats_at = fds.size();
        stats_->add_pollfds(fds);
        const std::size_t refused_at = fds.size();
        for (const auto& [fd, deadline] : refused_) fds.push_back({fd, POLLIN | POLLRDHUP, 0});
        const std::size_t sessions_at = fds.size();
        std::vector<Session*>& watched = watched_;
        watched.clear();
        watch_hang_ups(fds, watched);
        const std::size_t parked_at = fds.size();
        for (const auto& [session, deadline] : parked_) fds.push_back({session->control_fd(), POLLRDHUP, 0});
        int timeout = refused_.empty() ? 200 : 50;
        if (const int t = stats_->next_timeout_ms(); t >= 0) timeout = std::min(timeout, t);
        if (const int t = accept_backoff_.timeout_ms(now); t >= 0) timeout = std::min(timeout, t);
        timeout = std::min(timeout, periodic_timeout_ms(std::chrono::steady_clock::now()));
        const int r = poll(fds.data(), fds.size(), timeout);
        if (r < 0 && errno != EINTR) {
            log.critical("poll: {}", std::strerror(errno));
            break;
        }
        if (r > 0 && (fds[1].revents & POLLIN)) {
            signalfd_siginfo si;
            bool stop = false;
            while (read(signal_fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
                if (si.ssi_signo == SIGHUP) {
                    reload();
                } else {
                    log.info("received signal {}: shutting down", si.ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
                    stop = true;
                }
            }
            if (stop) break;
        }
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
        if (!refused_.empty()) drain_refused(fds.data() + refused_at, sessions_at - refused_at);
        if (!parked_.empty()) release_parked(fds.data() + parked_at, fds.size() - parked_at);
        stats_->handle(fds.data() + stats_at, refused_at - stats_at);
        reap_sessions(false);
        periodic(std::chrono::steady_clock::now());
    }
    for (const auto& [fd, deadline] : refused_) close(fd);
    refused_.clear();
    shutdown_gracefully();
    return exit_status::clean_stop;
}

// Read by the stats socket (main thread) and by sessions answering an info
// request (their own threads): gpu_reports_ and the devices are fixed once
// run() starts serving, and each device's state and counters are atomics
// (a switched-off device's reason is written before its flag turns false).
std::vector<BackendInfo> Server::backends() const {
    std::vector<BackendInfo> out;
    if (gpus_ != nullptr) {
        std::size_t next = 0;  // the usable reports are the striped devices, in order
        for (const auto& r : gpu_reports_) {
            BackendInfo b;
            b.name = "gpu" + std::to_string(r.info.index);
            b.kind = "gpu";
            b.device = r.info.name;
            b.memory_bytes = r.info.total_memory;
            if (r.usable && next < gpus_->devices()) {
                const CheckedBackend& d = gpus_->device(next++);
                const CrossCheckCounters& c = d.counters();
                b.workers = d.concurrency();
                b.self_test = d.primary_enabled() ? "passed" : "passed; switched off: " + d.disable_reason();
                b.enabled = d.primary_enabled();
                b.crosscheck_mismatches = c.mismatches.load();
                b.errors = c.primary_errors.load();
                b.rows_confirmed = c.rows_rechecked.load();
                b.invalid_unconfirmed = c.invalid_unconfirmed.load();
                b.rows_rewritten = c.rows_rewritten.load();
            } else {
                b.self_test = "failed: " + r.self_test;
                b.enabled = false;
            }
            out.push_back(std::move(b));
        }
    }
    const Backend* cpu = gpus_ != nullptr ? cpu_fallback_.get() : backend_.get();
    if (cpu) {
        BackendInfo b;
        b.name = gpus_ != nullptr ? "cpu-fallback" : cpu->name();
        b.kind = "cpu";
        b.device = "libsecp256k1";
        b.workers = cpu->concurrency();
        b.self_test = self_test_;
        out.push_back(std::move(b));
    }
    return out;
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
    s.refused = ctx_.refused.load();
    s.protocol_errors = ctx_.protocol_errors.load();
    s.stats_connections = stats_ ? stats_->connections() : 0;
    s.shm_bytes = ctx_.segment_budget.total();
    s.shm_budget_bytes = ctx_.segment_budget.total_limit();
    s.settings.log_level = ctx_.config.log_level;
    s.settings.log_format = std::string(to_string(ctx_.config.log_format));
    s.settings.cross_check_sample = ctx_.config.cross_check_sample;
    s.settings.cross_check_invalid_sample = ctx_.config.cross_check_invalid_sample;
    s.settings.metrics_textfile = ctx_.config.metrics_textfile;
    s.settings.metrics_interval = ctx_.config.metrics_interval;
    s.backends = backends();
    if (planner_ != nullptr) {
        s.has_split = true;
        s.split = planner_->estimates();
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
           " rows verified (" + std::to_string(invalid) + " invalid); backend " +
           (backend_ ? backend_->name() + " x" + std::to_string(backend_->concurrency()) : std::string("none"));
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
