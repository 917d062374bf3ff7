// SPDX-License-Identifier: MIT
// Replaces the global operator new of the sigverify program with one that
// counts, so `sigverify bench` can report allocations per operation on the
// client side. Kept in its own translation unit so no caller inlines it.
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {
std::atomic<std::uint64_t> g_allocations{0};

void* counted_alloc(std::size_t n) {
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    if (void* p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
}  // namespace

std::uint64_t sigverify_allocation_count() { return g_allocations.load(std::memory_order_relaxed); }

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return n ? std::malloc(n) : std::malloc(1); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return n ? std::malloc(n) : std::malloc(1); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
