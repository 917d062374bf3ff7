// SPDX-License-Identifier: MIT
// Packets with a passed descriptor over the control socket (SCM_RIGHTS).
//
// The one home of descriptor passing for the daemon, the client library, the
// tests and the fuzz harnesses. It is security code: a peer may attach any
// number of descriptors to any packet, so the receiver keeps at most the one
// it asked for and closes every other one before returning; a descriptor is
// never leaked and never silently kept.
//
// Not part of the ring ABI (segment_layout.hpp) and not installed: plain
// POSIX, header-only so that every target can use it without a link
// dependency.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace sigverify::shm {

// Sends one packet of `size` bytes, with descriptor `pass_fd` attached when it
// is >= 0. Retries on EINTR; never raises SIGPIPE. True when the whole packet
// was sent (errno is set otherwise).
inline bool send_packet(int socket, const void* data, std::size_t size, int pass_fd = -1) {
    iovec iov{const_cast<void*>(data), size};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (pass_fd >= 0) {
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    ssize_t n;
    do {
        n = sendmsg(socket, &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(size);
}

// Which passed descriptor receive_packet keeps.
enum class KeepDescriptor { none, first };

struct ReceivedPacket {
    ssize_t bytes = -1;          // recvmsg's result: payload bytes, 0 = peer closed, -1 = error
    int error = 0;               // errno when bytes < 0
    int fd = -1;                 // the kept descriptor (KeepDescriptor::first), -1 when none; the caller owns it
    unsigned fds_closed = 0;     // passed descriptors closed here (every one not kept)
    bool truncated = false;      // payload or control data did not fit (MSG_TRUNC / MSG_CTRUNC)
};

// Receives one packet into buf (at most size bytes). Retries on EINTR. Every
// passed descriptor is received close-on-exec and closed here, except the
// first one when keep == KeepDescriptor::first. Room for 8 descriptors is
// offered; more make the kernel drop the rest (and set truncated).
inline ReceivedPacket receive_packet(int socket, void* buf, std::size_t size, KeepDescriptor keep) {
    constexpr std::size_t kMaxDescriptors = 8;
    iovec iov{buf, size};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxDescriptors)];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ReceivedPacket r;
    do {
        r.bytes = recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
    } while (r.bytes < 0 && errno == EINTR);
    if (r.bytes < 0) {
        r.error = errno;
        return r;
    }
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int passed;
            std::memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof passed);
            if (keep == KeepDescriptor::first && r.fd < 0) {
                r.fd = passed;
            } else {
                ::close(passed);
                ++r.fds_closed;
            }
        }
    }
    r.truncated = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
    return r;
}

}  // namespace sigverify::shm
