// SPDX-License-Identifier: MIT
// Spin-then-sleep: the one busy-poll used before a thread goes to sleep.
//
// A futex or condition-variable wakeup costs ~100 us on a loaded VM, longer
// than verifying one row, so a thread that expects work soon (the daemon's
// ring reader, the scheduler's workers, a client waiting for its completion)
// first polls its condition for a short, bounded time. The poll pauses the CPU
// between loads and yields every 64 polls so that it never keeps the thread it
// waits for off this CPU (2-core machines). Callers sleep on their own
// mechanism (doorbell, condition variable) when this returns false.
#pragma once

#include <sched.h>

#include <chrono>

namespace sigverify::shm {

// How long a thread busy-polls before it sleeps (every caller uses this one).
inline constexpr std::chrono::microseconds kSpinBeforeSleep{100};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Polls ready() until it returns true or `until` has passed; returns whether
// it became true. ready() is called at least once.
template <class Ready>
bool spin_until(Ready&& ready, std::chrono::steady_clock::time_point until) {
    for (unsigned i = 1;; ++i) {
        if (ready()) return true;
        cpu_relax();
        if (i % 64 == 0) {
            if (std::chrono::steady_clock::now() >= until) return false;
            sched_yield();
        }
    }
}

// The common case: poll for at most kSpinBeforeSleep from now.
template <class Ready>
bool spin_before_sleep(Ready&& ready) {
    return spin_until(ready, std::chrono::steady_clock::now() + kSpinBeforeSleep);
}

}  // namespace sigverify::shm
