// SPDX-License-Identifier: MIT
// libsigverify internals: one connection to sigverifyd, the control socket and
// the shared segment mapped from it (connection.cpp).
//
// open_connection() connects to DIR/sigverifyd.sock, sends the hello, receives
// the reply with the segment's fd (SCM_RIGHTS), maps the segment, checks its
// header and acknowledges it. On success the Connection owns the socket and
// the mapping until close(); on failure it owns nothing.
//
// Invariants: h, sqes, cqes and arena point into the mapping and stay valid
// until close(). sq_tail and cq_head are this side's private copies of the
// indices the client owns; only the ring code (ring.cpp) moves them, under
// the client's mutex. Nothing here locks: the caller serializes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "shm_protocol/segment_layout.hpp"
#include "sigverify/client.hpp"

namespace sigverify::detail {

struct Connection {
    int fd = -1;
    void* map = nullptr;
    std::size_t map_size = 0;
    shm::SegmentHeader* h = nullptr;
    shm::SubmissionEntry* sqes = nullptr;
    shm::CompletionEntry* cqes = nullptr;
    std::uint8_t* arena = nullptr;
    std::uint64_t arena_size = 0;
    std::uint32_t sq_entries = 0, cq_entries = 0;
    std::uint64_t epoch = 0;
    std::uint16_t abi_minor = 0;  // the daemon's; >= kAbiMinorColumns: it accepts verify_columns
    std::uint32_t sq_tail = 0;    // private copies of the indices this side owns
    std::uint32_t cq_head = 0;

    // Unmaps the segment, closes the socket and resets every field.
    void close();
};

// $SIGVERIFY_RUNTIME_DIR, else /run/sigverifyd.
std::string default_runtime_dir();

// Connects and performs the handshake (bounded by options.connect_timeout).
// Status::ok with `out` set, or the failure's status with `error` set.
Status open_connection(const ClientOptions& options, Connection& out, std::string& error);

}  // namespace sigverify::detail
