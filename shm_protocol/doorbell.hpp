// SPDX-License-Identifier: MIT
// Cross-process wakeups on a Doorbell word of the shared segment.
//
// Shared futexes only (no FUTEX_PRIVATE_FLAG: private futexes are keyed by the
// address space and never wake another process), and not C++20
// std::atomic::wait (libstdc++ implements it with private futexes). Every wait
// is bounded by a timeout, so a dead or lying peer can delay a waiter by at
// most that timeout, never hang it.
//
// Protocol:
//   notifier: publish the change (release store of a ring index), then
//             ring(): seq.fetch_add (seq_cst) and FUTEX_WAKE all if waiters != 0
//   waiter:   s = begin_wait(); if condition already true: end_wait(); done
//             else wait(s, timeout); end_wait()
// begin_wait() increments waiters and loads seq with seq_cst, so either the
// notifier sees waiters != 0 and wakes, or the waiter's re-check sees the
// change, or FUTEX_WAIT returns at once because seq moved.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdint>

#include "sigverify/shm_protocol/segment_access.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"

namespace sigverify::shm {

inline long futex_wait_shared(std::uint32_t* addr, std::uint32_t expected,
                              std::chrono::nanoseconds timeout) {
    if (timeout.count() < 0) timeout = std::chrono::nanoseconds(0);
    timespec ts;
    ts.tv_sec = static_cast<time_t>(timeout.count() / 1000000000);
    ts.tv_nsec = static_cast<long>(timeout.count() % 1000000000);
    return syscall(SYS_futex, addr, FUTEX_WAIT, expected, &ts, nullptr, 0);
}

inline long futex_wake_shared(std::uint32_t* addr, int count = INT_MAX) {
    return syscall(SYS_futex, addr, FUTEX_WAKE, count, nullptr, nullptr, 0);
}

// Rings a doorbell: always bumps seq; issues the wake syscall only when a
// waiter announced itself.
inline void ring(Doorbell& bell) {
    std::atomic_ref<std::uint32_t>(bell.seq).fetch_add(1, std::memory_order_seq_cst);
    if (std::atomic_ref<std::uint32_t>(bell.waiters).load(std::memory_order_seq_cst) != 0)
        futex_wake_shared(&bell.seq);
}

// Unconditional wake (used by the daemon when ending a session or stopping).
inline void ring_force(Doorbell& bell) {
    std::atomic_ref<std::uint32_t>(bell.seq).fetch_add(1, std::memory_order_seq_cst);
    futex_wake_shared(&bell.seq);
}

inline std::uint32_t begin_wait(Doorbell& bell) {
    std::atomic_ref<std::uint32_t>(bell.waiters).fetch_add(1, std::memory_order_seq_cst);
    return std::atomic_ref<std::uint32_t>(bell.seq).load(std::memory_order_seq_cst);
}

inline void wait(Doorbell& bell, std::uint32_t observed, std::chrono::nanoseconds timeout) {
    futex_wait_shared(&bell.seq, observed, timeout);
}

inline void end_wait(Doorbell& bell) {
    std::atomic_ref<std::uint32_t>(bell.waiters).fetch_sub(1, std::memory_order_seq_cst);
}

}  // namespace sigverify::shm
