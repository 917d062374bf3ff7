// SPDX-License-Identifier: MIT
// A lying "GPU" for the daemon-level tests of the confirmation rule: the
// host-kernel backend (the GPU kernels' math on the CPU) with a wrapper that
// turns some of its true verdicts into lies, in each way the rule of
// daemon/backends/checked_backend.hpp and daemon/confirm/confirmation.hpp defends against:
//
//   false-invalid  a VALID row called INVALID. On a canonical multisig table
//                  whose every valid attempt is needed this fails the group
//                  (the groups rule confirms it); where the group has another
//                  usable pair the lie decides nothing and only the INVALID
//                  sample sees it; on the other tables every INVALID verdict
//                  is confirmed.
//   false-valid    an INVALID row called VALID: only the VALID sample sees it
//                  (1 in --cross-check-sample; docs/security.md states the
//                  trade-off).
//   in-place-only  either lie, told only on rows read in place from a
//                  client's segment (never on a private copy): a disagreement
//                  there looks like a client rewriting its rows.
//
// Which rows: those whose record bytes hash to 0 mod `every` (lie_target;
// every == 1: every row), and only when the true verdict is the one the lie
// turns around. So a lie depends on the row's content, like a kernel bug: the
// same row gets the same lie on a private copy (CheckedBackend's re-check of
// a disagreement on rows read in place), and a test can compute which rows
// are targets. The first `honest_calls` calls tell the truth: the daemon's
// start-up self-test (4 calls of 8 rows, daemon/backends/self_test.cpp) must pass, as
// it does for a GPU whose bug start-up does not meet.
//
// The liar runs only in the test executable sigverifyd_lying
// (lying_gpu_daemon.cpp; test_daemon_lying includes this header for
// lie_target); the product has no way to build or select it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "daemon/backends/backend.hpp"
#include "kernels/host_ranges.hpp"

namespace sigverify::test {

enum class Lie : std::uint8_t { false_invalid, false_valid };

struct LieSpec {
    Lie lie = Lie::false_invalid;
    unsigned every = 1;          // >= 1
    bool in_place_only = false;  // lie only on rows inside an announced client segment
    unsigned honest_calls = 4;   // the first calls tell the truth (the start-up self-test)
};

// "false-invalid" / "false-valid"; false for anything else.
inline bool parse_lie(std::string_view text, Lie& out) {
    if (text == "false-invalid") out = Lie::false_invalid;
    else if (text == "false-valid") out = Lie::false_valid;
    else return false;
    return true;
}

// Whether the record (record_size bytes) is one the liar lies on: FNV-1a of
// its bytes is 0 mod every.
inline bool lie_target(const std::uint8_t* record, std::size_t record_size, unsigned every) {
    if (every <= 1) return true;
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::size_t i = 0; i < record_size; ++i) h = (h ^ record[i]) * 0x100000001b3ull;
    return h % every == 0;
}

class LyingBackend final : public daemon::Backend {
public:
    LyingBackend(std::unique_ptr<daemon::Backend> honest, LieSpec spec) : honest_(std::move(honest)), spec_(spec) {}

    std::string name() const override { return honest_->name(); }
    unsigned concurrency() const override { return honest_->concurrency(); }
    std::size_t preferred_chunk_rows() const override { return honest_->preferred_chunk_rows(); }
    bool verifies_in_place() const override { return honest_->verifies_in_place(); }
    bool map_client_memory(const void* base, std::size_t bytes) noexcept override {
        try {
            client_memory_.add(base, bytes);
        } catch (...) {
            return false;
        }
        if (honest_->map_client_memory(base, bytes)) return true;
        client_memory_.remove(base);
        return false;
    }
    void unmap_client_memory(const void* base) noexcept override {
        honest_->unmap_client_memory(base);
        client_memory_.remove(base);
    }

    daemon::ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override {
        daemon::ChunkResult r = honest_->verify(worker, records, verdicts);
        if (r.status != shm::Status::ok || records.count == 0) return r;
        if (calls_.fetch_add(1, std::memory_order_relaxed) < spec_.honest_calls) return r;
        if (spec_.in_place_only && !client_memory_.contains(records.data, records.count * records.row_stride()))
            return r;  // a private copy: the truth
        const std::uint8_t from = spec_.lie == Lie::false_invalid ? 1 : 0;
        const std::size_t record = wire::record_size(records.kind);
        for (std::size_t p = 0; p < records.count; ++p) {
            if (verdicts[p] != from || !lie_target(records.row(p), record, spec_.every)) continue;
            verdicts[p] = std::uint8_t(1 - from);
            if (from == 1) {
                --r.tally.valid;
                ++r.tally.invalid;
            } else {
                --r.tally.invalid;
                ++r.tally.valid;
            }
            lies_.fetch_add(1, std::memory_order_relaxed);
        }
        return r;
    }

    std::uint64_t lies() const { return lies_.load(std::memory_order_relaxed); }

private:
    std::unique_ptr<daemon::Backend> honest_;
    LieSpec spec_;
    gpu::HostRanges client_memory_;
    std::atomic<std::uint64_t> lies_{0};
    std::atomic<std::uint64_t> calls_{0};
};

}  // namespace sigverify::test
