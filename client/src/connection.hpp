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

// Connects and performs the handshake (bounded by options.connect_timeout).
// Status::ok with `out` set, or the failure's status with `error` set.
Status open_connection(const ClientOptions& options, Connection& out, std::string& error);

}  // namespace sigverify::detail
