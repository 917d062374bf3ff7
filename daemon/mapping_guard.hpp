// SPDX-License-Identifier: MIT
// SIGBUS guard for the client memory the daemon maps.
//
// A client holds a read-write descriptor of its segment, and a registered
// buffer is the client's own file: it could ftruncate either smaller, and the
// daemon would then take SIGBUS on its next access to the lost pages. Every
// such mapping is registered here; the SIGBUS handler checks whether the
// faulting address lies in a registered mapping and, if so, replaces that
// whole mapping (MAP_FIXED) and marks the slot poisoned, so the faulting
// access is retried harmlessly and the owner notices at its next check. A
// fault anywhere else keeps the default action (crash), as it should.
//
// Invariants:
// - No mapping the daemon reads is unguarded: a register_* call that finds
//   no free slot returns -1 and its caller refuses the session or the
//   registration instead (counted in refusals()).
// - Segments and registered buffers have pools of their own, sized once by
//   install() from the limits in force: registrations cannot take the slots
//   segments need, and the other way round.
// - The replacement cannot fail for lack of memory, whatever its size:
//   a read-only mapping becomes PROT_READ private anonymous memory with
//   MAP_NORESERVE (never committed: the zero page backs every read); a
//   segment, which the daemon also writes, becomes a shared mapping of the
//   guard's own sparse memfd (shared mappings are not committed either;
//   only pages the daemon writes after the cut get memory, at most one
//   segment's worth, reused by every later cut).
// - The handler takes no lock and allocates nothing: the table is
//   allocated before the handler is installed and never moves.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sigverify::daemon::guard {

struct Capacity {
    std::size_t segments = 0;          // session segments mapped at once
    std::size_t registrations = 0;     // registered buffers mapped at once
    std::uint64_t largest_segment = 0; // bytes of the largest segment
};

// The capacity for these limits (daemon/config.hpp): every session a client
// slot may hold, the ending ones whose last chunk still runs, and the parked
// ones (daemon/server.cpp keeps at most max_parked), each with its segment;
// and the registrations all the slots may hold, plus one session's worth for
// the mappings of ended sessions that a running chunk still holds.
Capacity capacity_for(unsigned max_clients, unsigned max_registered_buffers, std::size_t max_parked,
                      std::uint64_t largest_segment);

// Sizes the table and installs the handler, once (later calls change
// nothing and return the first outcome). False, with the reason in `error`
// (a static string), when the table could not be allocated.
bool install(const Capacity& capacity, const char** error = nullptr);
// With a small default capacity (tests, fuzz harnesses).
bool install();

// Registers a mapping of a client's segment (the daemon reads and writes it)
// or of a registered buffer (read only); returns a slot, or -1 when that
// pool is full (the caller refuses; refusals() counts it).
int register_segment(void* base, std::size_t length);
int register_buffer(const void* base, std::size_t length);
void unregister_mapping(int slot);
// True when the handler had to replace this mapping.
bool poisoned(int slot);

struct Usage {
    std::size_t segments = 0, segment_slots = 0;
    std::size_t registrations = 0, registration_slots = 0;
    std::uint64_t refusals = 0;  // register_* calls that found their pool full
};
Usage usage();

}  // namespace sigverify::daemon::guard
