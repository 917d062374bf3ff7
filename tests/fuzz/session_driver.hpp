// SPDX-License-Identifier: MIT
// The friend seam between the session fuzz harness (fuzz_session.cpp) and
// daemon::Session: SessionDriver runs a Session's own steps in the calling
// thread, in the order Session::run and its reader loop run them.
#pragma once

#include <exception>

#include "daemon/serve/session.hpp"

namespace sigverify::daemon {

// Runs a Session's steps in the calling thread, in the order Session::run and
// its reader loop run them (the friend seam of daemon/serve/session.hpp): what is
// copied here is only that order, every step is the daemon's own function.
class SessionDriver {
public:
    explicit SessionDriver(Session& s) : s_(s) {}

    // Session::run's first step: reads the hello, sends the reply and the
    // segment, reads the ack (the client sent both messages before: the
    // receives do not block). A failed handshake ends the session as run() does.
    bool handshake() {
        bool ok = false;
        try {
            ok = s_.handshake();
        } catch (const std::exception& e) {
            s_.ctx_.log->error("client {}: session error: {}", s_.id_, e.what());
            if (s_.seg_.header != nullptr) s_.end_session();
        }
        if (!ok) leave();
        return ok;
    }

    // One wake-up of the reader loop: stop requested? then the submission
    // ring until nothing is left to take, then the control socket. Returns
    // false once the session ended (here or before).
    bool wake() {
        if (ended_) return false;
        bool go_on = !s_.stop_.load(std::memory_order_relaxed);
        if (go_on) {
            int n;
            while ((n = s_.pump()) > 0) {
            }
            if (n < 0) {
                s_.violated_.store(true);
                go_on = false;
            } else {
                go_on = s_.socket_alive();
            }
        }
        if (!go_on) end();
        return go_on;
    }

    // The reader loop returned: the end of Session::run.
    void end() {
        if (ended_) return;
        s_.end_session();
        leave();
    }
    bool ended() const { return ended_; }
    // The server began to shut down (SIGTERM): Server::stop's first call.
    void server_closing() { s_.set_closing(); }
    // The daemon's mapping of the segment and the descriptor it keeps (the
    // client uses that mapping: the same shared pages as a mapping of the
    // passed descriptor, without an mmap and a munmap per input).
    std::uint8_t* segment() const { return s_.seg_.base; }
    int segment_fd() const { return s_.seg_fd_; }

private:
    void leave() {
        s_.leave();
        ended_ = true;
    }

    Session& s_;
    bool ended_ = false;
};

}  // namespace sigverify::daemon
