// SPDX-License-Identifier: MIT
// SIGBUS guard for client segments.
//
// A client holds a read-write descriptor of its segment and could ftruncate it
// smaller; the daemon would then take SIGBUS on its next access to the lost
// pages. Every session mapping is registered here; the SIGBUS handler checks
// whether the faulting address lies in a registered mapping and, if so,
// replaces that whole mapping with private anonymous memory (MAP_FIXED) and
// marks the slot poisoned, so the faulting access is retried harmlessly and
// the session ends at its next check. A fault anywhere else keeps the default
// action (crash), as it should.
#pragma once

#include <cstddef>

namespace sigverify::daemon::guard {

// Installs the handler once (idempotent).
void install();
// Registers [base, base + length); returns a slot or -1 when the table is full.
int register_mapping(void* base, std::size_t length);
void unregister_mapping(int slot);
// True when the handler had to replace this mapping.
bool poisoned(int slot);

}  // namespace sigverify::daemon::guard
