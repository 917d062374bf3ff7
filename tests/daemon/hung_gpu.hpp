// SPDX-License-Identifier: MIT
// A "GPU" that stops answering: the test device of the deadline tests
// (issue 40, test_daemon_hung_gpu).
//
// It answers honestly -- libsecp256k1's verdicts, through a CpuBackend of
// its own, so the tests stay fast -- until it has answered `after_rows` rows
// in all; from then on every call stalls, as a launch on a hung GPU waits for
// an event that never comes. A stall lasts for ever (stall_ms 0), or
// stall_ms and then returns "ok" with every verdict VALID: a late answer
// that is wrong, so that a verdict the daemon published from it (a call it
// had given up on) would show as a wrong verdict of an invalid row.
//
// It runs only in the test executable sigverifyd_hung_gpu
// (hung_gpu_daemon.cpp); the product has no way to build or select it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "daemon/backends/backend.hpp"

namespace sigverify::test {

struct HangSpec {
    std::size_t after_rows = 0;  // rows answered before every call stalls
    unsigned stall_ms = 0;       // 0: a stall never ends
};

class HungGpuBackend final : public daemon::Backend {
public:
    HungGpuBackend(int index, unsigned workers, HangSpec spec)
        : index_(index), honest_(std::make_unique<daemon::CpuBackend>(workers)), spec_(spec) {}

    std::string name() const override { return "hung-gpu" + std::to_string(index_); }
    unsigned concurrency() const override { return honest_->concurrency(); }
    std::size_t preferred_chunk_rows() const override { return 4096; }
    // Like a GPU: rows are read where the client put them.
    bool verifies_in_place() const override { return true; }

    daemon::ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override {
        if (answered_.load() < spec_.after_rows) {
            answered_.fetch_add(records.count);
            return honest_->verify(worker, records, verdicts);
        }
        stalls_.fetch_add(1);
        if (spec_.stall_ms == 0) {
            for (;;) std::this_thread::sleep_for(std::chrono::hours(1));  // never finishes
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(spec_.stall_ms));
        if (records.count != 0) std::memset(verdicts, 1, records.count);  // late, and wrong
        daemon::ChunkResult r;
        r.tally.valid = records.count;
        return r;
    }

private:
    int index_;
    std::unique_ptr<daemon::CpuBackend> honest_;
    HangSpec spec_;
    std::atomic<std::size_t> answered_{0};
    std::atomic<std::size_t> stalls_{0};
};

}  // namespace sigverify::test
