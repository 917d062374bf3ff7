// SPDX-License-Identifier: MIT
// What a node's small batches wait for beside bulk verifiers (issue 29.6):
// the load of test_daemon_latency and sigverify_latency_bench.
//
// Every client is a real process (forked) with its own libsigverify Client
// and segment, against a daemon the caller started:
//   * bulk clients: back-to-back batches of bulk_rows ECDSA rows, all valid,
//     and one (bulk_invalid) of invalid_rows rows, all invalid, which on a GPU
//     daemon costs a libsecp256k1 confirmation each;
//   * an honest node sending 1-row batches (a transaction), one after the
//     other with a short pause, and one sending block_rows-row batches (a
//     block).
// Bulk batches repeat the same distinct_rows signed rows (signing is slow;
// the daemon verifies every row whatever its content). Each client checks
// every verdict against what it knows (rows signed valid, or broken on
// purpose): a wrong verdict is counted, whatever the timing.
//
// measure_alone() times the honest batches with no bulk client; run_load()
// times them beside the bulk clients over a window, and counts the bulk rows
// verified in it. Both return milliseconds per batch.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"

namespace sigverify::test::latency {

using Clock = std::chrono::steady_clock;

struct LoadSpec {
    std::string runtime_dir;
    unsigned bulk_valid = 3;        // bulk clients of valid rows
    unsigned bulk_invalid = 1;      // bulk clients of invalid rows
    std::size_t bulk_rows = 131072; // rows per bulk batch of valid rows
    // Rows per batch of the invalid client: eight GPU chunks, so that it can
    // hold every bulk worker of a GPU daemon of eight (a 1M-row batch does
    // that to sixteen).
    std::size_t invalid_rows = 524288;
    std::size_t distinct_rows = 4096;
    std::size_t block_rows = 4096;
    std::chrono::milliseconds warmup{2500};
    std::chrono::milliseconds window{4000};
    std::chrono::milliseconds one_row_pause{2};
    std::chrono::milliseconds block_pause{20};
    // Called when the window opens and when it closes (a benchmark reads the
    // daemon's counters there); may be empty.
    std::function<void()> at_window_start, at_window_end;
};

struct Figures {
    std::vector<double> one_row_ms;
    std::vector<double> block_ms;
    double bulk_rows_per_s = 0;   // bulk rows whose batch completed in the window, per second
    std::uint64_t wrong_verdicts = 0;
    std::uint64_t failed_batches = 0;  // batches that did not come back ok
};

inline double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t i = std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())));
    return v[i];
}

inline double ms_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Rows and the verdicts they must get: n ECDSA rows (tail 3) signed valid
// (seed), or all broken (a message bit flipped after signing).
struct Rows {
    std::vector<std::uint8_t> bytes;
    std::uint8_t expected = 1;
    std::size_t count = 0;
};

inline Rows signed_rows(std::size_t distinct, std::size_t n, std::uint64_t seed, bool invalid) {
    reference::GenOptions g;
    g.table = wire::Table::ecdsa;
    g.count = distinct;
    g.encoding = wire::SigEncoding::opaque;
    g.invalid_rate = 0;
    g.seed = seed;
    g.threads = 1;
    const std::vector<std::uint8_t> base = reference::generate_rows(g);
    const std::size_t stride = wire::stride(wire::RecordKind::ecdsa, 3);
    Rows r;
    r.count = n;
    r.expected = invalid ? 0 : 1;
    r.bytes.resize(n * stride);
    for (std::size_t i = 0; i < n; ++i)
        std::memcpy(r.bytes.data() + i * stride, base.data() + (i % distinct) * stride, stride);
    if (invalid)
        for (std::size_t i = 0; i < n; ++i) r.bytes[i * stride] ^= 0x01;  // message hash changed: no longer signed
    return r;
}

// Shared with the children (MAP_SHARED before fork).
struct Board {
    static constexpr std::size_t kMaxOne = 200000, kMaxBlock = 20000;
    std::atomic<int> phase{0};  // 0 warm-up, 1 measuring, 2 stop
    std::atomic<std::int64_t> window_start{0};  // steady clock, ns
    // Bulk rows verified in the window: a batch that ends in it counts with
    // the share of its time inside it (batches in flight at its end do not count).
    std::atomic<std::uint64_t> bulk_rows{0}, wrong{0}, failed{0};
    std::atomic<std::uint32_t> one_count{0}, block_count{0};
    // Start of the honest batch in flight (steady clock, ns; 0: none): a batch
    // still waiting when the window ends counts with the time it waited so far
    // (a lower bound of its latency), also one that started before the window.
    std::atomic<std::int64_t> one_inflight{0}, block_inflight{0};
    float one_ms[kMaxOne];
    float block_ms[kMaxBlock];
};

inline ClientOptions client_options(const std::string& dir, const char* name) {
    ClientOptions o;
    o.runtime_dir = dir;
    o.name = name;
    o.fallback = Fallback::none;
    return o;
}

// One batch of r through c; counts verdicts that differ from r.expected.
inline bool send(Client& c, const Rows& r, std::vector<std::uint8_t>& out, std::uint64_t& wrong) {
    out.assign(r.count, 2);
    const BatchResult b = c.verify_ecdsa(r.bytes.data(), r.count, 3, out.data());
    if (!b.ok()) return false;
    for (std::uint8_t v : out) wrong += v != r.expected;
    return true;
}

// Times `batches` batches of r alone (milliseconds each); wrong verdicts counted.
inline std::vector<double> time_alone(const std::string& dir, const Rows& r, std::size_t batches, Figures& f) {
    auto c = Client::connect(client_options(dir, "alone"));
    std::vector<std::uint8_t> out;
    std::vector<double> ms;
    for (std::size_t k = 0; k < batches + 2; ++k) {  // the first two warm up
        std::uint64_t wrong = 0;
        const auto t0 = Clock::now();
        const bool ok = send(*c, r, out, wrong);
        const double t = ms_since(t0);
        f.wrong_verdicts += wrong;
        f.failed_batches += !ok;
        if (k >= 2) ms.push_back(t);
    }
    return ms;
}

class Load {
public:
    explicit Load(LoadSpec spec) : spec_(std::move(spec)) {
        bulk_ = signed_rows(spec_.distinct_rows, spec_.bulk_rows, 11, false);
        bad_ = signed_rows(spec_.distinct_rows, spec_.invalid_rows, 12, true);
        one_ = signed_rows(1, 1, 13, false);
        block_ = signed_rows(spec_.block_rows, spec_.block_rows, 14, false);
    }

    const Rows& one_row() const { return one_; }
    const Rows& block() const { return block_; }

    // The honest batches alone: 1-row and block batches, milliseconds each.
    Figures measure_alone(std::size_t one_batches, std::size_t block_batches) {
        Figures f;
        f.one_row_ms = time_alone(spec_.runtime_dir, one_, one_batches, f);
        f.block_ms = time_alone(spec_.runtime_dir, block_, block_batches, f);
        return f;
    }

    // The honest batches beside the bulk clients (see the top of this file).
    // First each bulk client's distinct rows once, so that a GPU that
    // remembers verdicts (sleeping_gpu.hpp) has met them all.
    Figures run_load() {
        {
            Figures warm;
            for (const Rows* r : {&bulk_, &bad_}) {
                Rows distinct = *r;
                distinct.count = std::min(spec_.distinct_rows, r->count);
                distinct.bytes.resize(distinct.count * wire::stride(wire::RecordKind::ecdsa, 3));
                (void)time_alone(spec_.runtime_dir, distinct, 0, warm);
            }
        }
        void* mem = mmap(nullptr, sizeof(Board), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) throw std::runtime_error("mmap failed");
        Board* board = new (mem) Board();
        std::vector<pid_t> children;
        const std::string dir = spec_.runtime_dir;
        for (unsigned k = 0; k < spec_.bulk_valid + spec_.bulk_invalid; ++k) {
            const Rows& rows = k < spec_.bulk_valid ? bulk_ : bad_;
            children.push_back(run_in_child([&, board] {
                prctl(PR_SET_NAME, "lat-bulk");  // named for perf sched / top: which process waited
                auto c = Client::connect(client_options(dir, "bulk"));
                std::vector<std::uint8_t> out;
                while (board->phase.load() != 2) {
                    std::uint64_t wrong = 0;
                    const std::int64_t t0 = Clock::now().time_since_epoch().count();
                    const bool ok = send(*c, rows, out, wrong);
                    const std::int64_t t1 = Clock::now().time_since_epoch().count();
                    board->wrong += wrong;
                    board->failed += !ok;
                    if (ok && board->phase.load() == 1 && t1 > t0) {
                        const std::int64_t inside = t1 - std::max(t0, board->window_start.load());
                        board->bulk_rows += std::uint64_t(double(rows.count) * double(inside) / double(t1 - t0));
                    }
                }
                return true;
            }));
        }
        const auto honest = [&, board](const char* name, const Rows& rows, std::chrono::milliseconds pause,
                                       float* slots, std::atomic<std::uint32_t>& count, std::size_t max,
                                       std::atomic<std::int64_t>& inflight) {
            return run_in_child([&, board, name, slots, max, pause] {
                prctl(PR_SET_NAME, name);
                auto c = Client::connect(client_options(dir, "honest"));
                std::vector<std::uint8_t> out;
                while (board->phase.load() != 2) {
                    std::uint64_t wrong = 0;
                    const auto t0 = Clock::now();
                    inflight = t0.time_since_epoch().count();
                    const bool ok = send(*c, rows, out, wrong);
                    const double t = ms_since(t0);
                    inflight = 0;
                    board->wrong += wrong;
                    board->failed += !ok;
                    if (board->phase.load() == 1) {
                        const std::uint32_t i = count.fetch_add(1);
                        if (i < max) slots[i] = float(t);
                    }
                    std::this_thread::sleep_for(pause);
                }
                return true;
            });
        };
        children.push_back(honest("lat-node-1row", one_, spec_.one_row_pause, board->one_ms, board->one_count, Board::kMaxOne,
                                  board->one_inflight));
        children.push_back(honest("lat-node-block", block_, spec_.block_pause, board->block_ms, board->block_count, Board::kMaxBlock,
                                  board->block_inflight));
        std::this_thread::sleep_for(spec_.warmup);
        const auto t0 = Clock::now();
        board->window_start = t0.time_since_epoch().count();
        board->phase = 1;
        if (spec_.at_window_start) spec_.at_window_start();
        std::this_thread::sleep_for(spec_.window);
        const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
        board->phase = 2;
        if (spec_.at_window_end) spec_.at_window_end();
        const std::int64_t end_ns = Clock::now().time_since_epoch().count();
        const std::int64_t one_waiting = board->one_inflight.load(), block_waiting = board->block_inflight.load();
        // A bulk batch of invalid rows may take seconds more: its verdicts
        // were checked for every batch that completed; stop now.
        for (pid_t p : children) kill(p, SIGKILL);
        for (pid_t p : children) wait_child(p);
        Figures f;
        const std::uint32_t ones = std::min<std::uint32_t>(board->one_count.load(), Board::kMaxOne);
        const std::uint32_t blocks = std::min<std::uint32_t>(board->block_count.load(), Board::kMaxBlock);
        f.one_row_ms.assign(board->one_ms, board->one_ms + ones);
        f.block_ms.assign(board->block_ms, board->block_ms + blocks);
        if (one_waiting != 0) f.one_row_ms.push_back(double(end_ns - one_waiting) * 1e-6);
        if (block_waiting != 0) f.block_ms.push_back(double(end_ns - block_waiting) * 1e-6);
        f.bulk_rows_per_s = double(board->bulk_rows.load()) / seconds;
        f.wrong_verdicts = board->wrong.load();
        f.failed_batches = board->failed.load();
        board->~Board();
        munmap(mem, sizeof(Board));
        return f;
    }

private:
    LoadSpec spec_;
    Rows bulk_, bad_, one_, block_;
};

}  // namespace sigverify::test::latency
