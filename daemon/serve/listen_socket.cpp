// SPDX-License-Identifier: MIT
#include "daemon/serve/listen_socket.hpp"

#include "daemon/memory/registered_buffers.hpp"  // set_registered_descriptor_budget

#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sigverify::daemon {
namespace {

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

bool open_listen_socket(const Config& cfg, int gid, spdlog::logger& log, ListenSocket& out) {
    const std::string& dir = cfg.runtime_dir;
    if (!mkdir_p(dir)) {
        log.critical("cannot create runtime directory {}: {}", dir, std::strerror(errno));
        return false;
    }
    out.path = dir + "/sigverifyd.sock";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (out.path.size() >= sizeof addr.sun_path) {
        log.critical("socket path too long: {}", out.path);
        return false;
    }
    std::memcpy(addr.sun_path, out.path.c_str(), out.path.size() + 1);
    // A live daemon already there? Then do not steal its socket.
    {
        int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (probe >= 0 && connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
            close(probe);
            log.critical("another sigverifyd is already listening on {}", out.path);
            return false;
        }
        if (probe >= 0) close(probe);
    }
    unlink(out.path.c_str());
    out.fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (out.fd < 0) {
        log.critical("socket: {}", std::strerror(errno));
        return false;
    }
    const mode_t old = umask(0177);
    const int rc = bind(out.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    umask(old);
    if (rc != 0) {
        log.critical("bind {}: {}", out.path, std::strerror(errno));
        return false;
    }
    if (gid >= 0) {
        if (chown(out.path.c_str(), static_cast<uid_t>(-1), static_cast<gid_t>(gid)) != 0)
            log.warn("chown {} to group {}: {}", out.path, cfg.group, std::strerror(errno));
        chmod(out.path.c_str(), 0660);
    } else {
        chmod(out.path.c_str(), 0600);
    }
    if (listen(out.fd, 128) != 0) {
        log.critical("listen: {}", std::strerror(errno));
        return false;
    }
    return true;
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
bool check_descriptor_limit(const Config& cfg, spdlog::logger& log, std::size_t& lingering) {
    constexpr rlim_t kBase = 64, kStats = 16, kPerClient = 3, kLinger = 256;
    const rlim_t need = kBase + kStats + kPerClient * rlim_t(cfg.max_clients);
    const rlim_t registrations = rlim_t(cfg.max_clients) * cfg.max_registered_buffers;
    const rlim_t want = need + kLinger + registrations;
    lingering = kLinger;
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return true;  // cannot tell: go on
    if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < want) {
        rlimit raised = lim;
        raised.rlim_cur = lim.rlim_max == RLIM_INFINITY ? want : std::min(lim.rlim_max, want);
        if (raised.rlim_cur > lim.rlim_cur && setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
    }
    if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < need) {
        log.critical("--max-clients {} needs about {} descriptors ({} + {} per client), but RLIMIT_NOFILE "
                     "is {} (hard limit {}): lower --max-clients or raise the limit (LimitNOFILE=)",
                     cfg.max_clients, need, kBase + kStats, kPerClient, lim.rlim_cur,
                     lim.rlim_max == RLIM_INFINITY ? std::string("unlimited") : std::to_string(lim.rlim_max));
        return false;
    }
    lingering = lim.rlim_cur == RLIM_INFINITY ? kLinger : std::size_t(std::min(kLinger, lim.rlim_cur - need));
    if (lim.rlim_cur == RLIM_INFINITY) return true;  // the budget stays unbounded
    // All that is left, not just a full house's worth: a session that ended
    // while a chunk still reads its buffers holds them a moment longer.
    const rlim_t left = lim.rlim_cur - need - lingering;
    set_registered_descriptor_budget(left);
    if (left < registrations)
        log.warn("RLIMIT_NOFILE {} leaves descriptors for {} registered buffers, fewer than --max-clients {} x "
                 "--max-registered-buffers {}: registrations past them are refused (LimitNOFILE=)",
                 lim.rlim_cur, left, cfg.max_clients, cfg.max_registered_buffers);
    return true;
}

}  // namespace sigverify::daemon
