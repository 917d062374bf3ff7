// SPDX-License-Identifier: MIT
// libsigverify internals: connecting to sigverifyd (see connection.hpp).
//
// The handshake: connect the SOCK_SEQPACKET control socket, send a
// HelloRequest, receive the HelloReply with the segment's fd as SCM_RIGHTS,
// map the segment, check its header (state ready, layout, epoch equal to the
// reply's) and answer with a MappedAck (ok, or bad_segment and give up). A
// refusing daemon answers with a status and closes. Every failure path closes
// what it opened (the socket, the passed fd, the mapping).
#include "connection.hpp"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "shm_protocol/fd_passing.hpp"

namespace sigverify::detail {

void Connection::close() {
    if (base != nullptr) munmap(base, size);
    if (fd >= 0) ::close(fd);
    *this = Connection{};
}

namespace {
thread_local std::chrono::steady_clock::time_point t_call_deadline = std::chrono::steady_clock::time_point::max();
}  // namespace

CallDeadline::CallDeadline(std::chrono::steady_clock::time_point end) : outer_(t_call_deadline) {
    t_call_deadline = std::min(outer_, end);
}

CallDeadline::~CallDeadline() { t_call_deadline = outer_; }

std::chrono::steady_clock::time_point call_deadline() { return t_call_deadline; }

std::string default_runtime_dir() {
    if (const char* env = std::getenv("SIGVERIFY_RUNTIME_DIR"); env != nullptr && *env != '\0') return env;
    return "/run/sigverifyd";
}

namespace {

// Sets SO_SNDTIMEO and SO_RCVTIMEO to the time left before `deadline`
// (at least 1 ms: 0 would mean no bound). False when none is left.
bool set_timeouts(int fd, std::chrono::steady_clock::time_point deadline) {
    const auto left =
        std::chrono::duration_cast<std::chrono::microseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    const long long us = std::max<long long>(left.count(), 1000);
    timeval tv;
    tv.tv_sec = static_cast<time_t>(us / 1000000);
    tv.tv_usec = static_cast<suseconds_t>(us % 1000000);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    return true;
}

// Polls until fd is readable (or hung up) or the deadline passes; a signal
// does not restart the wait past the deadline. False on the deadline.
bool wait_readable(int fd, std::chrono::steady_clock::time_point deadline) {
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() < 0) return false;
        pollfd p{fd, POLLIN, 0};
        const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count() + 1, 60000)));
        if (r > 0) {
            (void)set_timeouts(fd, deadline);  // the receive then has the time left (at least 1 ms)
            return true;
        }
        if (r < 0 && errno != EINTR) return true;  // let the receive report the error
    }
}

// Connects fd to addr by the deadline. On a unix socket connect never
// answers EINPROGRESS: it completes at once, or (the listen backlog full: a
// stopped or hung daemon, handshakes of clients that gave up) waits for
// room, bounded by SO_SNDTIMEO (socket(7)) and then failing with EAGAIN. So
// the timeouts are set first, from the time left (and again after a signal),
// and reset to what is left for the handshake afterwards.
Status connect_until(int fd, const sockaddr_un& addr, const std::string& path,
                     std::chrono::steady_clock::time_point deadline, std::string& err) {
    if (!set_timeouts(fd, deadline)) {
        err = "no time left to connect to sigverifyd at " + path;
        return Status::timeout;
    }
    while (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int e = errno;
        if (e == EINTR && set_timeouts(fd, deadline)) continue;
        if (e == EACCES || e == EPERM) {
            err = "cannot connect to " + path + ": " + std::strerror(e);
            return Status::permission_denied;
        }
        if (e == EAGAIN || e == EWOULDBLOCK || e == EINTR) {
            err = "sigverifyd at " + path + " accepted no connection in time (backlog full)";
            return Status::timeout;
        }
        err = "no sigverifyd at " + path + ": " + std::strerror(e);
        return Status::unreachable;
    }
    if (!set_timeouts(fd, deadline)) {
        err = "sigverifyd at " + path + " did not answer the handshake in time";
        return Status::timeout;
    }
    return Status::ok;
}

// Sends the hello and receives the reply by the deadline, with the segment's
// descriptor in seg_fd (the caller's to close; a second one a hostile peer
// attached is closed here). ok only for a reply that accepts the session.
Status exchange_hello(int fd, const ClientOptions& opt, const std::string& path,
                      std::chrono::steady_clock::time_point deadline, shm::HelloReply& reply, int& seg_fd,
                      std::string& err) {
    shm::HelloRequest hello{};
    hello.magic = shm::kHelloMagic;
    hello.protocol_version = opt.protocol_version;
    hello.requested_arena_size = opt.arena_size;
    hello.requested_ring_entries = opt.ring_entries;
    shm::copy_text(hello.client_name, opt.name.empty() ? "pid-" + std::to_string(getpid()) : opt.name);
    // A refusing daemon may already have answered and closed: ignore send
    // errors and read the reply that is queued for us.
    (void)send(fd, &hello, sizeof hello, MSG_NOSIGNAL);
    const auto fail = [&](Status s, std::string text) {
        err = std::move(text);
        return s;
    };
    if (!wait_readable(fd, deadline))
        return fail(Status::timeout, "sigverifyd at " + path + " did not answer the handshake in time");
    const shm::ReceivedPacket packet = shm::receive_packet(fd, &reply, sizeof reply, shm::KeepDescriptor::first);
    const ssize_t n = packet.bytes;
    seg_fd = packet.fd;
    if (n < 0) {
        errno = packet.error;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return fail(Status::timeout, "sigverifyd at " + path + " did not answer the handshake in time");
        return fail(Status::unreachable, "handshake with sigverifyd at " + path + " failed: " + std::strerror(errno));
    }
    if (n == 0) return fail(Status::handshake, "sigverifyd at " + path + " closed the connection during the handshake");
    if (n != static_cast<ssize_t>(sizeof reply) || reply.magic != shm::kReplyMagic)
        return fail(Status::handshake, "malformed handshake reply from " + path);
    if (reply.status != 0) {
        const Status st = reply.status < shm::kStatusCount ? static_cast<Status>(reply.status) : Status::handshake;
        return fail(st, "sigverifyd refused the connection: " + std::string(shm::read_text(reply.error)));
    }
    if (seg_fd < 0) return fail(Status::handshake, "sigverifyd did not pass the shared segment");
    return Status::ok;
}

// Maps the segment of the reply into c and checks its header (every byte
// of it untrusted); a segment that fails a check is refused to the daemon
// (a MappedAck of bad_segment). On failure c may hold the mapping: the
// caller's c.close() unmaps it.
Status map_segment(int fd, int seg_fd, const shm::HelloReply& reply, Connection& c, std::string& err) {
    const auto fail = [&](Status s, std::string text) {
        err = std::move(text);
        return s;
    };
    struct stat st;
    if (fstat(seg_fd, &st) != 0) return fail(Status::system_error, std::string("fstat: ") + std::strerror(errno));
    if (reply.segment_size < shm::kHeaderSize || static_cast<std::uint64_t>(st.st_size) < reply.segment_size ||
        reply.segment_size > shm::kMaxArenaSize + (std::uint64_t(1) << 24))
        return fail(Status::bad_segment, "shared segment has the wrong size");
    void* map = mmap(nullptr, reply.segment_size, PROT_READ | PROT_WRITE, MAP_SHARED, seg_fd, 0);
    if (map == MAP_FAILED) return fail(Status::system_error, std::string("mmap: ") + std::strerror(errno));
    c.base = static_cast<std::uint8_t*>(map);  // unmapped by close() from here on
    c.size = reply.segment_size;
    auto* h = static_cast<shm::SegmentHeader*>(map);
    auto nack = [&](const char* why) {
        shm::MappedAck ack{shm::kAckMagic, static_cast<std::uint32_t>(Status::bad_segment)};
        (void)send(fd, &ack, sizeof ack, MSG_NOSIGNAL);
        return fail(Status::bad_segment, std::string("invalid shared segment: ") + why);
    };
    if (shm::word(h->state).load(std::memory_order_acquire) != static_cast<std::uint32_t>(shm::SegmentState::ready))
        return nack("not ready");
    shm::SegmentHeader copy;
    std::memcpy(&copy, h, sizeof copy);
    if (const char* why = shm::check_header(copy, c.size)) return nack(why);
    if (copy.epoch != reply.epoch) return nack("epoch differs from the handshake");
    static_cast<shm::SegmentView&>(c) = shm::view_segment(map, c.size, copy);
    c.epoch = copy.epoch;
    c.abi_minor = copy.abi_minor;
    // The daemon set both to their start before the segment was ready.
    c.sq = shm::submission_producer(c, shm::word(h->sq_tail).load(std::memory_order_acquire));
    c.cq = shm::completion_consumer(c, shm::word(h->cq_head).load(std::memory_order_acquire));
    return Status::ok;
}

}  // namespace

Status open_connection(const ClientOptions& opt, Connection& out, std::string& err) {
    const std::string dir = opt.runtime_dir.empty() ? default_runtime_dir() : opt.runtime_dir;
    const std::string path = dir + "/sigverifyd.sock";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) {
        err = "socket path too long: " + path;
        return Status::invalid_argument;
    }
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        err = std::string("socket: ") + std::strerror(errno);
        return Status::system_error;
    }
    Connection c;
    c.fd = fd;
    int seg_fd = -1;
    struct FdCloser {
        int& f;
        ~FdCloser() {
            if (f >= 0) ::close(f);
        }
    } seg_closer{seg_fd};
    // One deadline bounds the whole handshake: connect, hello, reply, ack.
    // (A bound of 0 or less would mean none: the default 2 s stands in.)
    // A caller's bound on its whole call ends it sooner.
    const auto bound = opt.connect_timeout.count() > 0 ? opt.connect_timeout : std::chrono::milliseconds(2000);
    const auto deadline = within_call(std::chrono::steady_clock::now() + bound);
    shm::HelloReply reply{};
    Status s = connect_until(fd, addr, path, deadline, err);
    if (s == Status::ok) s = exchange_hello(fd, opt, path, deadline, reply, seg_fd, err);
    if (s == Status::ok) s = map_segment(fd, seg_fd, reply, c, err);
    if (s == Status::ok && !set_timeouts(fd, deadline)) {
        s = Status::timeout;
        err = "sigverifyd at " + path + " did not finish the handshake in time";
    }
    const shm::MappedAck ack{shm::kAckMagic, 0};
    if (s == Status::ok && send(fd, &ack, sizeof ack, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof ack)) {
        s = Status::disconnected;
        err = "sigverifyd closed the connection after the handshake";
    }
    if (s != Status::ok) {
        c.close();
        return s;
    }
    // Later control messages (registrations, info) each get the whole bound
    // for a send, not what the handshake left of it.
    (void)set_timeouts(fd, std::chrono::steady_clock::now() + bound);
    out = c;
    return Status::ok;
}

}  // namespace sigverify::detail
