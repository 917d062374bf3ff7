// SPDX-License-Identifier: MIT
// SIGBUS guard for the client memory the daemon maps: the session segments.
//
// A client holds a read-write descriptor of its segment: it could ftruncate
// it smaller, and the daemon would then take SIGBUS on its next access to the
// lost pages. Every segment mapping is registered here; the SIGBUS handler checks whether the
// faulting address lies in a registered mapping and, if so, replaces that
// whole mapping (MAP_FIXED) and marks the slot poisoned, so the faulting
// access is retried harmlessly and the owner notices at its next check. A
// fault anywhere else keeps the default action (crash), as it should.
//
// Registered buffers (ABI 1.4) are not mapped at all: the daemon reads them
// with pread (daemon/memory/registered_buffers.hpp), where a shrunk file is a short
// read, not a fault, so they need no slot here.
//
// Invariants:
// - No mapping the daemon reads is unguarded: register_segment finds no
//   free slot only when every one is taken, returns -1, and its caller
//   refuses the session instead (counted in refusals()).
// - The table is sized once by install() from the limits in force.
// - The replacement cannot fail for lack of memory, whatever its size: a
//   segment, which the daemon also writes, becomes a shared mapping of the
//   guard's own sparse memfd (shared mappings are not committed; only pages
//   the daemon writes after the cut get memory, at most one segment's
//   worth, reused by every later cut), else private anonymous memory with
//   MAP_NORESERVE.
// - The handler takes no lock and allocates nothing: the table is
//   allocated before the handler is installed and never moves.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sigverify::daemon::guard {

struct Capacity {
    std::size_t segments = 0;          // session segments mapped at once
    std::uint64_t largest_segment = 0; // bytes of the largest segment
};

// The capacity for these limits (daemon/ops/config.hpp): every session a client
// slot may hold, the ending ones whose last chunk still runs, and the parked
// ones (daemon/serve/server.cpp keeps at most max_parked), each with its segment.
Capacity capacity_for(unsigned max_clients, std::size_t max_parked, std::uint64_t largest_segment);

// Sizes the table and installs the handler, once (later calls change
// nothing and return the first outcome). False, with the reason in `error`
// (a static string), when the table could not be allocated.
bool install(const Capacity& capacity, const char** error = nullptr);
// With a small default capacity (tests, fuzz harnesses).
bool install();

// Registers a mapping of a client's segment (the daemon reads and writes
// it); returns a slot, or -1 when the table is full (the caller refuses;
// refusals() counts it).
int register_segment(void* base, std::size_t length);
void unregister_mapping(int slot);
// True when the handler had to replace this mapping.
bool poisoned(int slot);

struct Usage {
    std::size_t segments = 0, segment_slots = 0;
    std::uint64_t refusals = 0;  // register_segment calls that found the table full
};
Usage usage();

}  // namespace sigverify::daemon::guard
