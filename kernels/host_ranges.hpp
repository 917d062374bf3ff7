// SPDX-License-Identifier: MIT
// A set of host memory ranges, looked up by address: the client segments a
// GPU may read rows from in place (daemon CheckedBackend), and those pinned
// with the CUDA driver (gpu_verifier.cu). Adding a range that is already
// there nests (a count); it leaves the set when removed as often as added.
// Thread-safe; a handful of ranges (one per client session).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace sigverify::gpu {

class HostRanges {
public:
    // True when base was not in the set before (the caller registers it).
    bool add(const void* base, std::size_t bytes) {
        std::lock_guard lock(mutex_);
        auto [it, inserted] = ranges_.try_emplace(address(base), Range{bytes, 0});
        ++it->second.count;
        return inserted;
    }
    // True when this removed base's last count (the caller unregisters it);
    // false also for a base that is not in the set.
    bool remove(const void* base) {
        std::lock_guard lock(mutex_);
        auto it = ranges_.find(address(base));
        if (it == ranges_.end() || --it->second.count != 0) return false;
        ranges_.erase(it);
        return true;
    }
    // True when [p, p + bytes) lies inside one range of the set.
    bool contains(const void* p, std::size_t bytes) const {
        const std::uintptr_t a = address(p);
        std::lock_guard lock(mutex_);
        auto it = ranges_.upper_bound(a);  // first range starting after a
        if (it == ranges_.begin()) return false;
        --it;
        return bytes <= it->second.bytes && a - it->first <= it->second.bytes - bytes;
    }

private:
    struct Range {
        std::size_t bytes;
        std::size_t count;
    };
    static std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
    mutable std::mutex mutex_;
    std::map<std::uintptr_t, Range> ranges_;
};

}  // namespace sigverify::gpu
