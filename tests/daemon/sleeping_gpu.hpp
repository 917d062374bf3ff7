// SPDX-License-Identifier: MIT
// A "GPU" that spends a GPU's time without a CPU core's: the test backend of
// the latency tests and benchmark (issue 29.6).
//
// On a GPU daemon a chunk's launch costs wall time (a round trip of about
// 3 ms, then rows at the device's rate: an H200 verifies ~25 M ECDSA rows/s,
// kernel v2, BENCHMARKS.md) while the worker that waits for it holds no core.
// --backend host-kernel cannot show that: its "GPU" work is CPU work. This
// backend sleeps for the modelled time instead:
//
//   launch of n rows on one slot = latency + n * slots / rows_per_s
//
// A device has `slots` slots (as GpuBackend: --gpu-chunks-in-flight, worker w
// on slot w % slots) that share the device's rate equally, and each slot
// joins the pieces waiting for it into one launch with the daemon's own
// LaunchCoalescer (merged launches of up to two chunks, as GpuBackend).
//
// The lane slot (as GpuBackend's): the scheduler's lane workers
// (Backend::set_lane_workers) launch on a slot of their own, so a lane launch
// never waits behind the bulk launches queued on a shared slot. It does not
// make the device faster, and the model says so:
//   * lane launch of n rows = latency + lane_wait (only while a bulk launch
//     runs) + n * slots / rows_per_s: a slot's share of the rate, after
//     waiting for SMs. On a real H200 the lane stream has the highest
//     priority, and its blocks are scheduled as the running kernel's blocks
//     retire (one row per thread: a block lives about one wave, ~3 ms at
//     25 M rows/s with ~65k rows resident), so it waits at most about one
//     wave; lane_wait is that worst case, not the typical fraction of it;
//   * the rows it verified are the bulk slots' loss: n * slots / rows_per_s
//     of slot time, which the next bulk launch to start sleeps on top of its
//     own, so lane rows plus bulk rows never exceed the device's rate.
//
// Verdicts stay true: each is libsecp256k1's. Computing them costs a core
// (~40 us a row), which a GPU does not, so they are remembered: a record seen
// before (bulk clients send the same rows again and again) is answered from a
// table of libsecp256k1's verdicts keyed by its exact bytes (record kind,
// encoding and every record byte: no collision can give a row another row's
// verdict). A lookup costs tens of nanoseconds and is done inside the
// modelled time; a new record is verified by libsecp256k1 first (each distinct
// one once; past the modelled time when many are new, as in a test's first
// pass, which is why latency_load.hpp warms the table up first).
//
// It runs only in the test executable sigverifyd_sleeping_gpu
// (sleeping_gpu_daemon.cpp); the product has no way to build or select it.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "daemon/backends/backend.hpp"
#include "daemon/backends/launch_coalescer.hpp"
#include "reference/reference_verifier.hpp"

namespace sigverify::test {

struct SleepSpec {
    double latency_s = 3e-3;     // a launch's round trip (H200, 1 row: ~2.7-3 ms)
    double rows_per_s = 25e6;    // the device's rate (H200 kernel v2, ECDSA)
    unsigned slots = 4;          // launches in flight (sigverifyd's --gpu-chunks-in-flight default)
    std::size_t chunk_rows = 65536;  // preferred chunk (sigverifyd's --gpu-chunk-rows default)
    double lane_wait_s = 3e-3;   // a lane launch's wait for SMs while bulk kernels run (<= one wave)
};

// Verdicts libsecp256k1 gave, by exact record bytes; shared by the slots.
// An open-addressing table of (hash, entry) over a store of the records
// themselves: a hit compares every byte, so a hash collision only costs a
// probe. Lookups take a shared lock; new records are verified outside it
// (each distinct one once per call), then inserted under the unique lock.
class VerdictMemo {
public:
    // Records beyond this many distinct ones are verified every time (bounded memory).
    static constexpr std::size_t kMaxEntries = std::size_t(1) << 22;

    // verdicts[i] for rows [0, rows.count): remembered, or libsecp256k1's (then remembered).
    void answer(reference::RowVerifier& cpu, const wire::RowSpan& rows, std::uint8_t* verdicts) {
        const std::size_t record = wire::record_size(rows.kind);
        const std::uint8_t tag = std::uint8_t(std::uint8_t(rows.kind) << 4 | std::uint8_t(rows.encoding));
        std::vector<std::size_t> unknown;
        {
            std::shared_lock lock(mutex_);
            for (std::size_t i = 0; i < rows.count; ++i) {
                const int v = find(tag, rows.row(i), record, hash(tag, rows.row(i), record));
                if (v >= 0) verdicts[i] = std::uint8_t(v);
                else unknown.push_back(i);
            }
        }
        if (unknown.empty()) return;
        std::unique_lock lock(mutex_);
        for (std::size_t i : unknown) {
            const std::uint64_t h = hash(tag, rows.row(i), record);
            const int v = find(tag, rows.row(i), record, h);  // an earlier row of this call, or another slot
            if (v >= 0) {
                verdicts[i] = std::uint8_t(v);
                continue;
            }
            verdicts[i] = cpu.verify_row(rows, i) ? 1 : 0;
            insert(tag, rows.row(i), record, h, verdicts[i]);
        }
    }

private:
    struct Slot {
        std::uint64_t hash = 0;
        std::uint32_t entry = 0;  // 1 + index into entries_; 0: empty
    };
    struct Entry {
        std::size_t offset;  // into store_: tag, then the record
        std::uint8_t verdict;
    };

    static std::uint64_t hash(std::uint8_t tag, const std::uint8_t* p, std::size_t n) {
        std::uint64_t h = 0x9E3779B97F4A7C15ull ^ tag;
        std::size_t i = 0;
        for (; i + 8 <= n; i += 8) {
            std::uint64_t w;
            std::memcpy(&w, p + i, 8);
            h = (h ^ w) * 0xff51afd7ed558ccdull;
            h ^= h >> 32;
        }
        for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
        return h ^ (h >> 29);
    }
    // The remembered verdict, or -1.
    int find(std::uint8_t tag, const std::uint8_t* p, std::size_t n, std::uint64_t h) const {
        if (slots_.empty()) return -1;
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t k = h & mask;; k = (k + 1) & mask) {
            const Slot& s = slots_[k];
            if (s.entry == 0) return -1;
            if (s.hash != h) continue;
            const Entry& e = entries_[s.entry - 1];
            if (store_[e.offset] == tag && std::memcmp(store_.data() + e.offset + 1, p, n) == 0) return e.verdict;
        }
    }
    void insert(std::uint8_t tag, const std::uint8_t* p, std::size_t n, std::uint64_t h, std::uint8_t verdict) {
        if (entries_.size() >= kMaxEntries) return;
        if ((entries_.size() + 1) * 2 > slots_.size()) grow();
        entries_.push_back(Entry{store_.size(), verdict});
        store_.push_back(tag);
        store_.insert(store_.end(), p, p + n);
        place(h, std::uint32_t(entries_.size()));
    }
    void place(std::uint64_t h, std::uint32_t entry) {
        const std::size_t mask = slots_.size() - 1;
        std::size_t k = h & mask;
        while (slots_[k].entry != 0) k = (k + 1) & mask;
        slots_[k] = Slot{h, entry};
    }
    void grow() {
        std::vector<Slot> old = std::move(slots_);
        slots_.assign(std::max<std::size_t>(1024, old.size() * 2), Slot{});
        for (const Slot& s : old)
            if (s.entry != 0) place(s.hash, s.entry);
    }

    std::shared_mutex mutex_;
    std::vector<Slot> slots_;  // a power of two, at most half full
    std::vector<Entry> entries_;
    std::vector<std::uint8_t> store_;
};

class SleepingGpuBackend final : public daemon::Backend {
public:
    SleepingGpuBackend(int index, unsigned workers, SleepSpec spec, std::shared_ptr<VerdictMemo> memo)
        : index_(index), workers_(workers), spec_(spec), memo_(std::move(memo)) {
        spec_.slots = std::max(1u, spec_.slots);
        for (unsigned s = 0; s < spec_.slots; ++s) slots_.push_back(make_slot(false));
        lane_slot_ = make_slot(true);
    }

    std::string name() const override { return "sleeping-gpu" + std::to_string(index_); }
    unsigned concurrency() const override { return workers_; }
    std::size_t preferred_chunk_rows() const override { return spec_.chunk_rows; }
    // Like a GPU: packed rows are read where the client put them.
    bool verifies_in_place() const override { return true; }
    void set_lane_workers(unsigned first) override { lane_first_ = first; }

    daemon::ChunkResult verify(unsigned worker, const wire::RowSpan& records,
                               std::uint8_t* verdicts) noexcept override {
        daemon::ChunkResult r;
        if (!daemon::chunk_args_ok(worker, workers_, records, verdicts)) {
            r.status = shm::Status::backend_error;
            return r;
        }
        try {
            Slot& slot = worker >= lane_first_ ? *lane_slot_ : *slots_[worker % slots_.size()];
            if (!slot.coalescer->verify(records, verdicts)) {
                r.status = shm::Status::backend_error;
                return r;
            }
        } catch (...) {
            r.status = shm::Status::backend_error;
            return r;
        }
        for (std::size_t i = 0; i < records.count; ++i) {
            if (verdicts[i] == 1) ++r.tally.valid;
            else ++r.tally.invalid;
        }
        return r;
    }

private:
    struct Slot {
        std::unique_ptr<daemon::LaunchCoalescer> coalescer;
        reference::RowVerifier cpu;  // used by the slot's launch only (one at a time)
        bool lane = false;
    };

    std::unique_ptr<Slot> make_slot(bool lane) {
        auto slot = std::make_unique<Slot>();
        slot->lane = lane;
        Slot* const own = slot.get();
        auto run = [this, own](const wire::RowSpan& rows, std::uint8_t* verdicts) {
            return launch(*own, rows, verdicts);
        };
        slot->coalescer = std::make_unique<daemon::LaunchCoalescer>(2 * spec_.chunk_rows, run);
        return slot;
    }

    // One launch: the verdicts, then sleep out the rest of the modelled time
    // (see the top of this file for the lane slot's).
    bool launch(Slot& slot, const wire::RowSpan& rows, std::uint8_t* verdicts) {
        const auto start = std::chrono::steady_clock::now();
        const double share = double(rows.count) * double(spec_.slots) / spec_.rows_per_s;
        double seconds = spec_.latency_s + share;
        if (slot.lane) {
            if (bulk_running_.load(std::memory_order_acquire) != 0) seconds += spec_.lane_wait_s;
            lane_debt_ns_.fetch_add(std::int64_t(share * 1e9), std::memory_order_relaxed);
        } else {
            bulk_running_.fetch_add(1, std::memory_order_acq_rel);
            seconds += double(lane_debt_ns_.exchange(0, std::memory_order_relaxed)) * 1e-9;
        }
        memo_->answer(slot.cpu, rows, verdicts);
        std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                  std::chrono::duration<double>(seconds)));
        if (!slot.lane) bulk_running_.fetch_sub(1, std::memory_order_acq_rel);
        note_progress();
        return true;
    }

    int index_;
    unsigned workers_;
    SleepSpec spec_;
    std::shared_ptr<VerdictMemo> memo_;
    std::vector<std::unique_ptr<Slot>> slots_;  // the bulk slots
    std::unique_ptr<Slot> lane_slot_;           // the lane workers'
    unsigned lane_first_ = ~0u;                 // first lane worker (set_lane_workers; none before)
    std::atomic<unsigned> bulk_running_{0};     // bulk launches in progress
    std::atomic<std::int64_t> lane_debt_ns_{0};  // slot time the lane took from the bulk slots
};

}  // namespace sigverify::test
