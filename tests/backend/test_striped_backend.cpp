// SPDX-License-Identifier: MIT
// StripedBackend: chunks striped over several checked GPUs, driven with two
// fake GPUs (CPU verifiers that count their rows and can lie) through the
// real scheduler (no GPU needed).
//   * both GPUs get work, and the verdicts are libsecp256k1's;
//   * a GPU that lies is switched off alone and the other takes its share;
//   * with every GPU off, the CPU fallback verifies everything;
//   * the scheduler's lane workers reach every GPU through the checked and
//     striped layers (Backend::set_lane_workers: a GPU's lane slot).
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <vector>

#include "daemon/ops/metrics.hpp"
#include "daemon/schedule/scheduler.hpp"
#include "daemon/backends/striped_backend.hpp"
#include "reference/row_generator.hpp"
#include "scheduler_harness.hpp"

using namespace sigverify;
using daemon::ChunkResult;
using wire::Mode;

namespace {

constexpr unsigned kWorkers = 4;

class FakeGpu final : public daemon::Backend {
public:
    std::atomic<std::uint64_t> rows{0};
    std::atomic<bool> lie{false};  // call every row valid
    std::atomic<unsigned> lane_first{~0u};  // what set_lane_workers said (~0u: never called)

    std::string name() const override { return "fake"; }
    unsigned concurrency() const override { return kWorkers; }
    std::size_t preferred_chunk_rows() const override { return 50; }
    void set_lane_workers(unsigned first) override { lane_first = first; }
    ChunkResult verify(unsigned worker, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override {
        ChunkResult r;
        std::lock_guard lock(mutex_[worker]);
        r.tally = cpu_[worker].run(records, 0, records.count, Mode::results, verdicts);
        if (lie) std::fill_n(verdicts, records.count, std::uint8_t(1));
        rows += records.count;
        return r;
    }

private:
    reference::RowVerifier cpu_[kWorkers];
    std::mutex mutex_[kWorkers];  // a worker index is never used by two threads at once; the lock would show it
};

using Data = test::SignedRows;
Data make(std::size_t n) { return test::signed_rows(wire::Table::ecdsa, n, 0.3, 31); }

struct Rig {
    FakeGpu* gpu[2];
    std::unique_ptr<daemon::StripedBackend> striped;
    daemon::CpuBackend cpu{kWorkers};
    Rig() {
        std::vector<std::unique_ptr<daemon::CheckedBackend>> devices;
        for (auto*& g : gpu) {
            auto fake = std::make_unique<FakeGpu>();
            g = fake.get();
            devices.push_back(std::make_unique<daemon::CheckedBackend>(std::move(fake), 50,
                                                                       daemon::CrossCheckPolicy{1, 0, 1}));
        }
        striped = std::make_unique<daemon::StripedBackend>(std::move(devices));
    }
    // One results job through a scheduler over the striped GPUs.
    std::vector<std::uint8_t> run(Data& d) {
        daemon::Scheduler scheduler(*striped, &cpu, 50);
        daemon::Metrics metrics;
        scheduler.set_metrics(&metrics);
        scheduler.start();
        std::vector<std::uint8_t> results = test::run_results_job_and_stop(scheduler, d.span);
        return results;
    }
};

}  // namespace

TEST_CASE("chunks are striped over both GPUs", "[striped]") {
    Data d = make(2000);
    Rig rig;
    REQUIRE(rig.striped->devices() == 2);
    REQUIRE(rig.striped->concurrency() == kWorkers);
    CHECK(rig.striped->name() == "fake+crosscheck,fake+crosscheck");
    CHECK(rig.run(d) == d.truth);
    CHECK(rig.gpu[0]->rows + rig.gpu[1]->rows == 2000);
    // Worker w starts on GPU w % 2: both GPUs carry a real share.
    CHECK(rig.gpu[0]->rows >= 200);
    CHECK(rig.gpu[1]->rows >= 200);
}

TEST_CASE("a GPU that lies is switched off alone; the other takes its share", "[striped]") {
    Data d = make(2000);
    Rig rig;
    rig.gpu[1]->lie = true;
    CHECK(rig.run(d) == d.truth);  // its chunk fell back to the CPU
    CHECK(rig.striped->device(0).primary_enabled());
    CHECK_FALSE(rig.striped->device(1).primary_enabled());
    CHECK(rig.striped->device(1).counters().mismatches >= 1);  // workers running on it at the time may each find one
    CHECK(rig.striped->any_enabled());

    const std::uint64_t before = rig.gpu[1]->rows;
    const std::uint64_t healthy_before = rig.gpu[0]->rows;
    CHECK(rig.run(d) == d.truth);
    CHECK(rig.gpu[1]->rows == before);  // nothing more for the switched-off GPU
    CHECK(rig.gpu[0]->rows - healthy_before == 2000);
}

TEST_CASE("with every GPU switched off the CPU fallback verifies everything", "[striped]") {
    Data d = make(600);
    Rig rig;
    rig.gpu[0]->lie = true;
    rig.gpu[1]->lie = true;
    CHECK(rig.run(d) == d.truth);
    CHECK_FALSE(rig.striped->any_enabled());
    const std::uint64_t rows = rig.gpu[0]->rows + rig.gpu[1]->rows;
    CHECK(rig.run(d) == d.truth);
    CHECK(rig.gpu[0]->rows + rig.gpu[1]->rows == rows);
}

TEST_CASE("the scheduler's lane workers reach every GPU behind the checked and striped layers", "[striped][lane]") {
    Rig rig;
    SECTION("with lane workers: the first of them, before the workers start") {
        daemon::Scheduler scheduler(*rig.striped, &rig.cpu, 50);
        scheduler.set_lane_workers(2);
        scheduler.start();
        for (FakeGpu* g : rig.gpu) CHECK(g->lane_first.load() == kWorkers - 2);
        scheduler.stop();
    }
    SECTION("without lane workers (the CPU backend's scheduler): never called") {
        daemon::Scheduler scheduler(*rig.striped, &rig.cpu, 50);
        scheduler.start();
        for (FakeGpu* g : rig.gpu) CHECK(g->lane_first.load() == ~0u);
        scheduler.stop();
    }
}
