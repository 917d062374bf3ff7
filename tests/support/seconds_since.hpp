// SPDX-License-Identifier: MIT
// Elapsed wall time for the figures tests and tools print.
#pragma once

#include <chrono>

namespace sigverify::test {

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace sigverify::test
