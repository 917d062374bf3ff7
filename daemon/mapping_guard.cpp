// SPDX-License-Identifier: MIT
#include "daemon/mapping_guard.hpp"

#include <signal.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>

namespace sigverify::daemon::guard {
namespace {

constexpr int kSlots = 4096;

struct Slot {
    std::atomic<std::uintptr_t> base{0};
    std::atomic<std::size_t> length{0};
    std::atomic<bool> poisoned{false};
};

Slot g_slots[kSlots];
std::mutex g_register_mutex;
std::once_flag g_install_once;
struct sigaction g_previous;

void on_sigbus(int sig, siginfo_t* info, void* uctx) {
    const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
    for (Slot& s : g_slots) {
        const std::uintptr_t base = s.base.load(std::memory_order_acquire);
        const std::size_t length = s.length.load(std::memory_order_acquire);
        if (base != 0 && addr >= base && addr - base < length) {
            void* p = mmap(reinterpret_cast<void*>(base), length, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
            if (p != MAP_FAILED) {
                s.poisoned.store(true, std::memory_order_release);
                return;  // the faulting access is retried on anonymous memory
            }
            break;
        }
    }
    // Not ours: behave as before the handler was installed.
    if (g_previous.sa_flags & SA_SIGINFO) {
        if (g_previous.sa_sigaction != nullptr) {
            g_previous.sa_sigaction(sig, info, uctx);
            return;
        }
    } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
        g_previous.sa_handler(sig);
        return;
    }
    signal(SIGBUS, SIG_DFL);
    raise(SIGBUS);
}

}  // namespace

void install() {
    std::call_once(g_install_once, [] {
        struct sigaction sa;
        std::memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, &g_previous);
    });
}

int register_mapping(void* base, std::size_t length) {
    std::lock_guard lock(g_register_mutex);
    for (int i = 0; i < kSlots; ++i) {
        if (g_slots[i].base.load(std::memory_order_relaxed) == 0) {
            g_slots[i].poisoned.store(false, std::memory_order_relaxed);
            g_slots[i].length.store(length, std::memory_order_release);
            g_slots[i].base.store(reinterpret_cast<std::uintptr_t>(base), std::memory_order_release);
            return i;
        }
    }
    return -1;
}

void unregister_mapping(int slot) {
    if (slot < 0 || slot >= kSlots) return;
    std::lock_guard lock(g_register_mutex);
    g_slots[slot].base.store(0, std::memory_order_release);
    g_slots[slot].length.store(0, std::memory_order_release);
}

bool poisoned(int slot) {
    if (slot < 0 || slot >= kSlots) return false;
    return g_slots[slot].poisoned.load(std::memory_order_acquire);
}

}  // namespace sigverify::daemon::guard
