// SPDX-License-Identifier: MIT
// libsigverify internals: one connection to sigverifyd, the control socket and
// the shared segment mapped from it (connection.cpp).
//
// open_connection() connects to DIR/sigverifyd.sock, sends the hello, receives
// the reply with the segment's fd (SCM_RIGHTS), maps the segment, checks its
// header and acknowledges it. On success the Connection owns the socket and
// the mapping until close(); on failure it owns nothing.
//
// Invariants: the segment view's pointers (header, sqes, cqes, arena;
// shm_protocol/segment_view.hpp) point into the mapping and stay valid until
// close(). sq and cq are the client's ends of the two rings
// (shm_protocol/ring_steps.hpp), each holding the private copy of the index
// the client owns; only the ring code (ring.cpp) moves them, under the
// client's mutex. Nothing here locks: the caller serializes.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "sigverify/shm_protocol/segment_layout.hpp"
#include "shm_protocol/ring_steps.hpp"
#include "shm_protocol/segment_view.hpp"
#include "sigverify/client.hpp"

namespace sigverify::detail {

// The mapped segment (base, size, header, rings, arena) and the connection's own state.
struct Connection : shm::SegmentView {
    int fd = -1;
    std::uint64_t epoch = 0;
    std::uint16_t abi_minor = 0;  // the daemon's; >= kAbiMinorColumns: it accepts verify_columns
    shm::RingProducer<shm::SubmissionEntry> sq;  // this side's ends of the rings
    shm::RingConsumer<shm::CompletionEntry> cq;

    // Unmaps the segment, closes the socket and resets every field.
    void close();
};

// $SIGVERIFY_RUNTIME_DIR, else /run/sigverifyd.
std::string default_runtime_dir();

// A bound on the calling thread's whole call, for callers whose one timeout
// must cover everything a call may wait for (the libbitcoin hook: a connect
// and handshake made on the call's behalf, every reserve and every wait, all
// under one deadline). While a CallDeadline lives, call_deadline() is its
// end; otherwise time_point::max(). Nested ones keep the earlier end.
class CallDeadline {
public:
    explicit CallDeadline(std::chrono::steady_clock::time_point end);
    ~CallDeadline();
    CallDeadline(const CallDeadline&) = delete;
    CallDeadline& operator=(const CallDeadline&) = delete;

private:
    std::chrono::steady_clock::time_point outer_;
};
std::chrono::steady_clock::time_point call_deadline();

// The earlier of `deadline` and call_deadline().
inline std::chrono::steady_clock::time_point within_call(std::chrono::steady_clock::time_point deadline) {
    return std::min(deadline, call_deadline());
}

// Connects and performs the handshake (bounded by options.connect_timeout,
// and by call_deadline()).
// Status::ok with `out` set, or the failure's status with `error` set.
Status open_connection(const ClientOptions& options, Connection& out, std::string& error);

}  // namespace sigverify::detail
