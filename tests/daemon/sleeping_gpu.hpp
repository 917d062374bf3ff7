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
// Verdicts stay true: each is libsecp256k1's. Computing them costs a core
// (~40 us a row), which a GPU does not, so they are remembered: a record seen
// before (bulk clients send the same rows again and again) is answered from a
// table of libsecp256k1's verdicts keyed by its exact bytes (record kind,
// encoding and every record byte: no collision can give a row another row's
// verdict). A lookup costs tens of nanoseconds and is done inside the
// modelled time; a new record is verified by libsecp256k1 first (also inside
// it, or past it when the rows are new, as for the first pass of a test).
//
// It runs only in the test executable sigverifyd_sleeping_gpu
// (sleeping_gpu_daemon.cpp); the product has no way to build or select it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "daemon/backend.hpp"
#include "daemon/launch_coalescer.hpp"
#include "reference/reference_verifier.hpp"

namespace sigverify::test {

struct SleepSpec {
    double latency_s = 3e-3;     // a launch's round trip (H200, 1 row: ~2.7-3 ms)
    double rows_per_s = 25e6;    // the device's rate (H200 kernel v2, ECDSA)
    unsigned slots = 4;          // launches in flight (sigverifyd's --gpu-chunks-in-flight default)
    std::size_t chunk_rows = 65536;  // preferred chunk (sigverifyd's --gpu-chunk-rows default)
};

// Verdicts libsecp256k1 gave, by exact record bytes; shared by the slots.
class VerdictMemo {
public:
    // Rows beyond this many distinct records are verified every time (bounded memory).
    static constexpr std::size_t kMaxEntries = std::size_t(1) << 22;

    // verdicts[i] for rows [0, rows.count): remembered, or libsecp256k1's (then remembered).
    void answer(reference::RowVerifier& cpu, const wire::RowSpan& rows, std::uint8_t* verdicts) {
        const std::size_t record = wire::record_size(rows.kind);
        const std::uint8_t tag = std::uint8_t(std::uint8_t(rows.kind) << 4 | std::uint8_t(rows.encoding));
        std::vector<std::size_t> unknown;
        std::string key(record + 1, '\0');
        {
            std::shared_lock lock(mutex_);
            for (std::size_t i = 0; i < rows.count; ++i) {
                key[0] = char(tag);
                std::copy_n(rows.row(i), record, key.begin() + 1);
                const auto it = known_.find(key);
                if (it != known_.end()) verdicts[i] = it->second;
                else unknown.push_back(i);
            }
        }
        if (unknown.empty()) return;
        for (std::size_t i : unknown) verdicts[i] = cpu.verify_row(rows, i) ? 1 : 0;
        std::unique_lock lock(mutex_);
        for (std::size_t i : unknown) {
            if (known_.size() >= kMaxEntries) break;
            key[0] = char(tag);
            std::copy_n(rows.row(i), record, key.begin() + 1);
            known_.emplace(key, verdicts[i]);
        }
    }

private:
    std::shared_mutex mutex_;
    std::unordered_map<std::string, std::uint8_t> known_;
};

class SleepingGpuBackend final : public daemon::Backend {
public:
    SleepingGpuBackend(int index, unsigned workers, SleepSpec spec, std::shared_ptr<VerdictMemo> memo)
        : index_(index), workers_(workers), spec_(spec), memo_(std::move(memo)) {
        spec_.slots = std::max(1u, spec_.slots);
        for (unsigned s = 0; s < spec_.slots; ++s) {
            auto slot = std::make_unique<Slot>();
            Slot* const own = slot.get();
            slot->coalescer = std::make_unique<daemon::LaunchCoalescer>(
                2 * spec_.chunk_rows,
                [this, own](const wire::RowSpan& rows, std::uint8_t* verdicts) { return launch(*own, rows, verdicts); });
            slots_.push_back(std::move(slot));
        }
    }

    std::string name() const override { return "sleeping-gpu" + std::to_string(index_); }
    unsigned concurrency() const override { return workers_; }
    std::size_t preferred_chunk_rows() const override { return spec_.chunk_rows; }
    // Like a GPU: packed rows are read where the client put them.
    bool verifies_in_place() const override { return true; }

    daemon::ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override {
        daemon::ChunkResult r;
        if (!daemon::chunk_args_ok(worker, workers_, records, verdicts)) {
            r.status = shm::Status::backend_error;
            return r;
        }
        try {
            if (!slots_[worker % slots_.size()]->coalescer->verify(records, verdicts)) {
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
    };

    // One launch: the verdicts, then sleep out the rest of the modelled time.
    bool launch(Slot& slot, const wire::RowSpan& rows, std::uint8_t* verdicts) {
        const auto start = std::chrono::steady_clock::now();
        const double seconds = spec_.latency_s + double(rows.count) * double(spec_.slots) / spec_.rows_per_s;
        memo_->answer(slot.cpu, rows, verdicts);
        std::this_thread::sleep_until(start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                  std::chrono::duration<double>(seconds)));
        note_progress();
        return true;
    }

    int index_;
    unsigned workers_;
    SleepSpec spec_;
    std::shared_ptr<VerdictMemo> memo_;
    std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace sigverify::test
