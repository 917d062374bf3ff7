// SPDX-License-Identifier: MIT
// Who may open a session, and when: the server asks right after accept(),
// before anything is set up for the connection (no thread, no segment).
//
// Four checks, one table (admission.cpp), run cheapest and least revealing
// first: who the peer is (root, the daemon's uid, a member of --group: an
// unpermitted uid learns nothing else), a free --max-clients slot, room for
// the smallest segment in the shared memory budget (daemon/serve/segment_budget.hpp),
// then the connection rate (daemon/serve/connection_rate.hpp; last, so that only
// sessions that start take a token). A refusal is counted, logged (rate
// limited) and returned as the reply's status and reason; no allocation.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

#include "daemon/serve/connection_rate.hpp"
#include "daemon/serve/daemon_context.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"

namespace sigverify::daemon {

// Bytes of the largest segment a session can get under cfg (the one the ring
// and arena flags ask for).
std::uint64_t largest_segment_bytes(const Config& cfg);

class Admission {
public:
    // What a refused peer is told: status, then "prefix reason".
    struct Refusal {
        shm::Status status = shm::Status::ok;
        const char* prefix = "";
        char reason[256] = {};
    };

    explicit Admission(DaemonContext& ctx) : ctx_(ctx) {}

    // Looks up --group (if any). false: no such group (logged).
    bool resolve_group();
    bool have_group() const { return have_group_; }
    unsigned group_gid() const { return group_gid_; }

    // Sets the shared memory budget from the limits in force.
    void set_segment_budget();

    // The access rule alone (the stats socket uses it too); else the reason in why[0, size).
    bool peer_allowed(int fd, const ucred& cred, char* why, std::size_t size) const;

    // All four checks for a connection whose peer is `cred`, with
    // `occupied_slots` sessions holding a slot. true: admitted (a rate token
    // taken); false: refused, counted and logged, `out` says what to reply.
    bool admit(int fd, const ucred& cred, unsigned occupied_slots, Refusal& out);

private:
    struct Peer {
        int fd;
        const ucred& cred;
        unsigned occupied_slots;
    };
    // One check each: true when the peer passes; else the reply's reason and
    // the log line's detail (both NUL-terminated, sizeof Refusal::reason).
    bool permitted(const Peer& p, char* reason, char* detail);
    bool slot_free(const Peer& p, char* reason, char* detail);
    bool budget_left(const Peer& p, char* reason, char* detail);
    bool rate_allows(const Peer& p, char* reason, char* detail);

    DaemonContext& ctx_;
    bool have_group_ = false;
    unsigned group_gid_ = 0;
    std::uint64_t smallest_segment_ = 0;  // bytes of the smallest segment a session can get
    ConnectionRate connection_rate_;      // sessions per process and per uid
};

}  // namespace sigverify::daemon
