// SPDX-License-Identifier: MIT
#include "daemon/memory/mapping_guard.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <new>

namespace sigverify::daemon::guard {
namespace {

struct Slot {
    std::atomic<std::uintptr_t> base{0};
    std::atomic<std::size_t> length{0};
    std::atomic<bool> poisoned{false};
};

// Written once by install(), before the handler exists; never changed after.
// The table holds g_segment_slots segments. Anonymous memory without a
// reservation: only the pages of slots ever used cost memory (the handler
// reads no further than the high-water mark).
Slot* g_table = nullptr;
std::size_t g_segment_slots = 0;
int g_sink_fd = -1;             // the guard's own sparse memfd, for writable replacements
std::uint64_t g_sink_size = 0;
// One past the highest slot ever used (release after the slot is written).
std::atomic<std::size_t> g_segment_high{0};
std::atomic<std::uint64_t> g_refusals{0};

std::mutex g_register_mutex;  // registrations only: the handler never takes it
std::size_t g_used_segments = 0;
std::size_t g_segment_hint = 0;  // lowest slot that may be free

std::once_flag g_install_once;
bool g_installed = false;
const char* g_install_error = nullptr;
struct sigaction g_previous;

// Async-signal-safe: mmap and fallocate are system calls; nothing else.
bool replace(std::uintptr_t base, std::size_t length) {
    void* at = reinterpret_cast<void*>(base);
    // The daemon may still write into a segment (a worker publishing a
    // verdict): a shared mapping of the sink takes those writes without
    // committing memory up front, however large the segment.
    if (g_sink_fd >= 0 && length <= g_sink_size &&
        mmap(at, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, g_sink_fd, 0) != MAP_FAILED)
        return true;
    if (mmap(at, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) !=
        MAP_FAILED)
        return true;
    // Read-only private anonymous memory is never committed: this cannot
    // fail for lack of memory at any size (a later write faults again, and
    // is then not ours any more: the default action).
    return mmap(at, length, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) !=
           MAP_FAILED;
}

bool replace_if_ours(std::uintptr_t addr, std::size_t to) {
    for (std::size_t i = 0; i < to; ++i) {
        Slot& s = g_table[i];
        const std::uintptr_t base = s.base.load(std::memory_order_acquire);
        const std::size_t length = s.length.load(std::memory_order_acquire);
        if (base == 0 || addr < base || addr - base >= length) continue;
        if (!replace(base, length)) return false;
        s.poisoned.store(true, std::memory_order_release);
        return true;
    }
    return false;
}

void on_sigbus(int sig, siginfo_t* info, void* uctx) {
    const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
    if (g_table != nullptr) {
        const std::size_t segments = std::min(g_segment_high.load(std::memory_order_acquire), g_segment_slots);
        if (replace_if_ours(addr, segments)) return;  // the faulting access is retried on the replacement
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

void do_install(const Capacity& capacity) {
    const std::size_t segments = std::max<std::size_t>(capacity.segments, 1);
    void* table = mmap(nullptr, segments * sizeof(Slot), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (table == MAP_FAILED) {
        g_install_error = "cannot allocate the SIGBUS guard table";
        return;
    }
    // Slots are constructed at their first use (take): constructing them
    // all here would touch every page of a table sized for 4,096 clients.
    g_table = static_cast<Slot*>(table);
    g_segment_slots = segments;
    // The sink: sparse, so it costs nothing until a cut segment is written.
    // Without it (memfd_create refused) writable replacements fall back to
    // private anonymous memory with MAP_NORESERVE.
    const int sink = memfd_create("sigverifyd-guard-sink", MFD_CLOEXEC);
    if (sink >= 0 && ftruncate(sink, static_cast<off_t>(capacity.largest_segment)) == 0) {
        g_sink_fd = sink;
        g_sink_size = capacity.largest_segment;
    } else if (sink >= 0) {
        close(sink);
    }
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous);
    g_installed = true;
}

int take(std::size_t from, std::size_t to, std::size_t& hint, std::size_t& used, std::atomic<std::size_t>& high,
         std::uintptr_t base, std::size_t length) {
    std::lock_guard lock(g_register_mutex);
    if (g_table != nullptr) {
        for (std::size_t i = std::max(hint, from); i < to; ++i) {
            // [from, high) are constructed; the scan reaches high only when
            // every slot below it is taken, so a fresh slot is exactly high.
            const bool fresh = i >= high.load(std::memory_order_relaxed);
            if (fresh) new (&g_table[i]) Slot();
            Slot& s = g_table[i];
            if (!fresh && s.base.load(std::memory_order_relaxed) != 0) continue;
            s.poisoned.store(false, std::memory_order_relaxed);
            s.length.store(length, std::memory_order_release);
            s.base.store(base, std::memory_order_release);
            if (high.load(std::memory_order_relaxed) <= i) high.store(i + 1, std::memory_order_release);
            hint = i + 1;
            ++used;
            return static_cast<int>(i);
        }
    }
    g_refusals.fetch_add(1, std::memory_order_relaxed);
    return -1;
}

}  // namespace

Capacity capacity_for(unsigned max_clients, std::size_t max_parked, std::uint64_t largest_segment) {
    // Headroom for what the limits bound only loosely (sessions that ended
    // while a chunk of theirs still runs): slots cost nothing until used,
    // and a full table refuses, never crashes.
    constexpr std::size_t kHeadroom = 1024;
    Capacity c;
    c.segments = 2 * std::size_t(max_clients) + max_parked + kHeadroom;
    c.largest_segment = largest_segment;
    return c;
}

bool install(const Capacity& capacity, const char** error) {
    std::call_once(g_install_once, [&] { do_install(capacity); });
    if (!g_installed && error != nullptr) *error = g_install_error;
    return g_installed;
}

bool install() { return install(capacity_for(64, 64, std::uint64_t(1) << 30)); }

int register_segment(void* base, std::size_t length) {
    return take(0, g_segment_slots, g_segment_hint, g_used_segments, g_segment_high,
                reinterpret_cast<std::uintptr_t>(base), length);
}

void unregister_mapping(int slot) {
    if (slot < 0 || static_cast<std::size_t>(slot) >= g_segment_slots) return;
    const std::size_t i = static_cast<std::size_t>(slot);
    std::lock_guard lock(g_register_mutex);
    Slot& s = g_table[i];
    if (s.base.load(std::memory_order_relaxed) == 0) return;
    if (s.poisoned.load(std::memory_order_relaxed) && g_sink_fd >= 0) {
        // Give back what the daemon wrote into the sink after this cut. Other
        // cut segments may share those pages: their contents were never
        // anyone's verdicts, and punching a hole never shortens the sink.
        (void)fallocate(g_sink_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0,
                        static_cast<off_t>(s.length.load(std::memory_order_relaxed)));
    }
    s.base.store(0, std::memory_order_release);
    s.length.store(0, std::memory_order_release);
    --g_used_segments;
    g_segment_hint = std::min(g_segment_hint, i);
}

bool poisoned(int slot) {
    if (slot < 0 || static_cast<std::size_t>(slot) >= g_segment_slots) return false;
    return g_table[slot].poisoned.load(std::memory_order_acquire);
}

Usage usage() {
    std::lock_guard lock(g_register_mutex);
    Usage u;
    u.segments = g_used_segments;
    u.segment_slots = g_segment_slots;
    u.refusals = g_refusals.load(std::memory_order_relaxed);
    return u;
}

}  // namespace sigverify::daemon::guard
