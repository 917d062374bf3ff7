// SPDX-License-Identifier: MIT
#include "daemon/ops/notify.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#ifdef SIGVERIFY_HAVE_LIBSYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace sigverify::daemon {
namespace {

// STATUS= is one line: no newlines inside.
std::string one_line(const std::string& s) {
    std::string out = s;
    for (char& c : out)
        if (c == '\n' || c == '\r') c = ' ';
    return out;
}

}  // namespace

Notifier::Notifier() {
    const char* sock = std::getenv("NOTIFY_SOCKET");
    enabled_ = sock != nullptr && *sock != '\0';
    std::uint64_t usec = 0;
#ifdef SIGVERIFY_HAVE_LIBSYSTEMD
    if (sd_watchdog_enabled(0, &usec) <= 0) usec = 0;
#else
    const char* w = std::getenv("WATCHDOG_USEC");
    const char* wp = std::getenv("WATCHDOG_PID");
    if (w != nullptr && (wp == nullptr || std::strtoll(wp, nullptr, 10) == getpid()))
        usec = std::strtoull(w, nullptr, 10);
#endif
    watchdog_period_ = std::chrono::microseconds(usec / 2);
}

bool Notifier::send(const std::string& message) {
    if (!enabled_) return false;
#ifdef SIGVERIFY_HAVE_LIBSYSTEMD
    return sd_notify(0, message.c_str()) > 0;
#else
    // The documented datagram protocol: one AF_UNIX datagram to $NOTIFY_SOCKET
    // ('@' = abstract namespace).
    const char* path = std::getenv("NOTIFY_SOCKET");
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::size_t len = std::strlen(path);
    if (len >= sizeof addr.sun_path) return false;
    std::memcpy(addr.sun_path, path, len);
    if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';
    const int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    const socklen_t alen = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len);
    const bool ok = sendto(fd, message.data(), message.size(), MSG_NOSIGNAL | MSG_DONTWAIT,
                           reinterpret_cast<sockaddr*>(&addr), alen) == static_cast<ssize_t>(message.size());
    close(fd);
    return ok;
#endif
}

void Notifier::ready(const std::string& status) { send("READY=1\nSTATUS=" + one_line(status)); }
void Notifier::status(const std::string& status) { send("STATUS=" + one_line(status)); }
void Notifier::stopping(const std::string& status) { send("STOPPING=1\nSTATUS=" + one_line(status)); }
void Notifier::watchdog() { send("WATCHDOG=1"); }

}  // namespace sigverify::daemon
