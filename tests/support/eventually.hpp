// SPDX-License-Identifier: MIT
// Waiting for a condition another process or thread makes true: a daemon's
// counter, log line or descriptor count. A bound, never a bare sleep, so a
// slow machine waits longer and a fast one does not wait at all.
#pragma once

#include <chrono>
#include <thread>

namespace sigverify::test {

// True as soon as f() is; false when f() is still false after `limit` (f is
// asked once more after the limit, so a wait that slept past it is not lost).
template <class F>
bool eventually(F&& f, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!f()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return true;
}

}  // namespace sigverify::test
