// SPDX-License-Identifier: MIT
// LaunchCoalescer: pieces of several threads merged into one launch, each
// piece getting exactly its own verdicts. The launch here is libsecp256k1 on
// the CPU (the GPU's stand-in): a piece merged with the wrong rows, or handed
// another piece's verdicts, shows up as a wrong verdict.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "daemon/backends/launch_coalescer.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"

using namespace sigverify;
using daemon::LaunchCoalescer;

namespace {

struct Table {
    wire::RecordKind kind;
    wire::SigEncoding encoding;
    std::vector<std::uint8_t> records;  // tail_size 0, as the checked backend hands them over
    std::vector<std::uint8_t> truth;
    std::size_t count = 0;

    wire::RowSpan span(std::size_t first, std::size_t n) const {
        // RowSpan takes a mutable pointer (collect mode writes); these rows are only read
        return wire::RowSpan{kind, 0, encoding, const_cast<std::uint8_t*>(records.data()) + first * wire::record_size(kind), n};
    }
};

Table make(wire::Table t, wire::SigEncoding enc, std::size_t n, std::uint64_t seed) {
    reference::GenOptions o;
    o.table = t;
    o.count = n;
    o.encoding = enc;
    o.invalid_rate = 0.4;
    o.seed = seed;
    o.tail_size = 0;
    Table out{wire::record_kind(t), enc, reference::generate_rows(o), {}, n};
    out.truth.resize(n);
    reference::Verifier(2).verify(out.span(0, n), out.truth.data());
    return out;
}

// A launch on the CPU that records what it was given.
struct CpuLaunch {
    std::atomic<std::size_t> biggest{0};
    std::atomic<int> running{0};
    std::atomic<bool> overlapped{false};
    std::atomic<int> fail_next{0};
    std::chrono::microseconds delay{0};

    LaunchCoalescer::Launch fn() {
        return [this](const wire::RowSpan& rows, std::uint8_t* verdicts) {
            if (running.fetch_add(1) != 0) overlapped = true;
            std::size_t b = biggest.load();
            while (rows.count > b && !biggest.compare_exchange_weak(b, rows.count)) {
            }
            std::this_thread::sleep_for(delay);
            reference::RowVerifier cpu;
            cpu.run(rows, 0, rows.count, wire::Mode::results, verdicts);
            running.fetch_sub(1);
            if (fail_next.load() > 0) {
                fail_next.fetch_sub(1);
                return false;
            }
            return true;
        };
    }
};

}  // namespace

TEST_CASE("one caller: the piece is launched as is", "[coalescer]") {
    const Table t = make(wire::Table::ecdsa, wire::SigEncoding::opaque, 300, 1);
    CpuLaunch launch;
    LaunchCoalescer c(1000, launch.fn());
    std::vector<std::uint8_t> v(300, 0xEE);
    REQUIRE(c.verify(t.span(0, 300), v.data()));
    CHECK(v == t.truth);
    CHECK(c.launches() == 1);
    CHECK(c.merged_pieces() == 0);
    CHECK(c.verify(t.span(0, 0), nullptr));  // empty: nothing launched
    CHECK(c.launches() == 1);
}

TEST_CASE("many threads: pieces are merged into fewer launches, each gets its own verdicts", "[coalescer]") {
    const Table tables[] = {make(wire::Table::ecdsa, wire::SigEncoding::opaque, 3000, 2),
                            make(wire::Table::ecdsa, wire::SigEncoding::compact, 3000, 3),
                            make(wire::Table::schnorr, wire::SigEncoding::opaque, 3000, 4)};
    CpuLaunch launch;
    launch.delay = std::chrono::microseconds(2000);  // a launch long enough for others to queue
    const std::size_t max_rows = 700;
    LaunchCoalescer c(max_rows, launch.fn());
    constexpr int kThreads = 8, kPieces = 40;
    std::atomic<int> wrong{0}, failed{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < kThreads; ++w) {
        threads.emplace_back([&, w] {
            std::mt19937 g(unsigned(w) * 7919u + 1u);
            std::vector<std::uint8_t> v;
            for (int i = 0; i < kPieces; ++i) {
                const Table& t = tables[g() % 3];
                // sizes 1..400, and now and then one too big to merge (runs alone)
                const std::size_t n = (i % 13 == 5) ? max_rows + 50 : 1 + g() % 400;
                const std::size_t first = g() % (t.count - n);
                v.assign(n, 0xEE);
                if (!c.verify(t.span(first, n), v.data())) {
                    ++failed;
                    continue;
                }
                for (std::size_t k = 0; k < n; ++k)
                    if (v[k] != t.truth[first + k]) {
                        ++wrong;
                        break;
                    }
            }
        });
    }
    for (auto& t : threads) t.join();
    CHECK(wrong == 0);
    CHECK(failed == 0);
    CHECK_FALSE(launch.overlapped);  // one launch at a time
    CHECK(c.pieces() == std::uint64_t(kThreads * kPieces));
    CHECK(c.launches() < c.pieces());  // pieces were merged
    CHECK(c.merged_pieces() > 0);
    CHECK(launch.biggest <= max_rows + 50);  // merged launches stay within max_rows; a big piece alone
    INFO("launches " << c.launches() << " for " << c.pieces() << " pieces");
}

TEST_CASE("a failed launch fails every piece in it, and the next launch works", "[coalescer]") {
    const Table t = make(wire::Table::schnorr, wire::SigEncoding::opaque, 2000, 5);
    CpuLaunch launch;
    launch.delay = std::chrono::microseconds(3000);
    LaunchCoalescer c(2000, launch.fn());
    launch.fail_next = 1;
    std::atomic<int> failed{0}, ok_right{0};
    std::vector<std::thread> threads;
    for (int w = 0; w < 4; ++w)
        threads.emplace_back([&, w] {
            std::vector<std::uint8_t> v(100, 0xEE);
            const std::size_t first = std::size_t(w) * 100;
            if (c.verify(t.span(first, 100), v.data())) {
                if (std::equal(v.begin(), v.end(), t.truth.begin() + long(first))) ++ok_right;
            } else {
                ++failed;
            }
        });
    for (auto& th : threads) th.join();
    CHECK(failed >= 1);
    CHECK(failed + ok_right == 4);
    // afterwards: works again
    std::vector<std::uint8_t> v(50, 0xEE);
    REQUIRE(c.verify(t.span(1000, 50), v.data()));
    CHECK(std::equal(v.begin(), v.end(), t.truth.begin() + 1000));
}

TEST_CASE("a throwing launch fails its pieces without wedging the coalescer", "[coalescer]") {
    const Table t = make(wire::Table::ecdsa, wire::SigEncoding::opaque, 100, 6);
    int calls = 0;
    LaunchCoalescer c(100, [&](const wire::RowSpan& rows, std::uint8_t* verdicts) -> bool {
        if (calls++ == 0) throw std::runtime_error("device lost");
        reference::RowVerifier cpu;
        cpu.run(rows, 0, rows.count, wire::Mode::results, verdicts);
        return true;
    });
    std::vector<std::uint8_t> v(100, 0xEE);
    CHECK_FALSE(c.verify(t.span(0, 100), v.data()));
    REQUIRE(c.verify(t.span(0, 100), v.data()));
    CHECK(v == t.truth);
}
