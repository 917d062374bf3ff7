// SPDX-License-Identifier: MIT
// Backend self-test at start-up: known valid rows (some high-S) and the same
// rows with a corrupted signature, for every table, through the backend's own
// verify(); every verdict must match libsecp256k1's. READY=1 is sent only
// after it passed.
#pragma once

#include <string>

#include "daemon/backends/backend.hpp"

namespace sigverify::daemon {

// true when every verdict matched; detail says what ran or what failed.
bool backend_self_test(Backend& backend, std::string& detail);

}  // namespace sigverify::daemon
