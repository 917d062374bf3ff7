// SPDX-License-Identifier: MIT
// The CPU side of the GPU path: how many rows per second the daemon's
// scheduler and CheckedBackend can hand back when the GPU itself costs
// nothing. The primary here is an oracle (libsecp256k1's verdicts computed
// beforehand, looked up per row), so what is measured is staging, the
// libsecp256k1 confirmations the confirmation rule asks for
// (daemon/confirm/confirmation.hpp), the samples and publishing: the ceiling the host
// puts on a GPU daemon. Each table runs with the rows staged (a private copy
// per chunk, as before) and read in place (Backend::verifies_in_place, as a
// GPU reads a pinned client segment), so the cost of the staging copy shows.
// Not a test; figures go to BENCHMARKS.md.
//   build/tests/bench/sigverify_confirmbench [rows]
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "daemon/backends/checked_backend.hpp"
#include "daemon/ops/metrics.hpp"
#include "daemon/schedule/scheduler.hpp"
#include "reference/row_generator.hpp"

using namespace sigverify;

namespace {

// Multisig attempts share their message and signature: the whole record names a row.
std::uint64_t id_of(const std::uint8_t* record) {
    return std::hash<std::string_view>{}(
        std::string_view(reinterpret_cast<const char*>(record), wire::kEcdsaRecordSize));
}

class OraclePrimary final : public daemon::Backend {
public:
    OraclePrimary(const wire::RowSpan& rows, const std::vector<std::uint8_t>& truth, unsigned workers, bool in_place)
        : workers_(workers), in_place_(in_place) {
        for (std::size_t i = 0; i < rows.count; ++i) verdict_[id_of(rows.row(i))] = truth[i];
    }
    std::string name() const override { return "oracle"; }
    unsigned concurrency() const override { return workers_; }
    std::size_t preferred_chunk_rows() const override { return 65536; }
    bool verifies_in_place() const override { return in_place_; }
    daemon::ChunkResult verify(unsigned, const wire::RowSpan& records, std::uint8_t* verdicts) noexcept override {
        for (std::size_t i = 0; i < records.count; ++i) {
            const auto it = verdict_.find(id_of(records.row(i)));
            verdicts[i] = it != verdict_.end() ? it->second : 0;
        }
        return {};
    }

private:
    unsigned workers_;
    bool in_place_;
    std::unordered_map<std::uint64_t, std::uint8_t> verdict_;
};

struct Sink final : daemon::JobSink {
    std::mutex mutex;
    std::condition_variable cv;
    bool done = false;
    void finish_job(std::uint32_t, shm::Status, const reference::Tally&) override {
        std::lock_guard lock(mutex);
        done = true;
        cv.notify_all();
    }
};

void run(const char* label, wire::Table table, std::size_t n, double invalid_rate, daemon::ConfirmRule rule,
         bool in_place) {
    reference::GenOptions g;
    g.table = table;
    g.count = n;
    g.invalid_rate = invalid_rate;
    g.seed = 99;
    const std::vector<std::uint8_t> rows = reference::generate_rows(g);
    const wire::RowSpan span{wire::record_kind(table), wire::canonical_tail_size(table), wire::SigEncoding::opaque,
                             const_cast<std::uint8_t*>(rows.data()), n};
    std::vector<std::uint8_t> truth(n);
    reference::Verifier(0).verify(span, truth.data());
    std::size_t invalid = 0;
    for (auto v : truth) invalid += v == 0;

    const unsigned workers = std::max(1u, std::thread::hardware_concurrency());
    daemon::CheckedBackend checked(std::make_unique<OraclePrimary>(span, truth, workers, in_place), 65536,
                                   daemon::CrossCheckPolicy{1024, 0, 64});
    daemon::CpuBackend cpu(workers);
    daemon::Scheduler scheduler(checked, &cpu, 0);
    daemon::Metrics metrics;
    scheduler.set_metrics(&metrics);
    if (in_place) scheduler.map_client_memory(rows.data(), rows.size());  // as a session announces its segment
    scheduler.start();
    Sink sink;
    std::shared_ptr<daemon::JobQueue> q = scheduler.make_queue(sink, 1);
    std::vector<std::uint8_t> results(n);
    daemon::Job& j = q->job(0);
    j.rows = span;
    j.mode = wire::Mode::results;
    j.results = results.data();
    j.table = static_cast<std::uint8_t>(table);
    j.confirm = rule;
    const auto t0 = std::chrono::steady_clock::now();
    scheduler.submit(q, 0);
    {
        std::unique_lock lock(sink.mutex);
        sink.cv.wait(lock, [&] { return sink.done; });
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    scheduler.stop();
    if (in_place) scheduler.unmap_client_memory(rows.data());
    const bool exact = results == truth;
    std::printf("%-24s %-8s rule %-6s %8zu rows  %5.1f%% invalid  %9.0f rows/s  re-verified %7llu (%5.2f%% of rows)  %s\n",
                label, in_place ? "in place" : "staged", std::string(daemon::to_string(rule)).c_str(), n, 100.0 * double(invalid) / double(n),
                double(n) / s, static_cast<unsigned long long>(checked.counters().rows_rechecked.load()),
                100.0 * double(checked.counters().rows_rechecked.load()) / double(n),
                exact ? "verdicts exact" : "row verdicts differ (unconfirmed attempts)");
    if (!checked.primary_enabled()) std::printf("  the oracle was switched off: %s\n", checked.disable_reason().c_str());
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t n = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 200000;
    if (n == 0) return 2;
    std::printf("oracle primary (a GPU that costs nothing), %u worker(s), chunks of 65536 rows, "
                "valid sample 1/1024, invalid sample 1/64\n",
                std::max(1u, std::thread::hardware_concurrency()));
    for (bool in_place : {false, true}) {
        run("ecdsa (5% invalid)", wire::Table::ecdsa, n, 0.05, daemon::ConfirmRule::groups, in_place);
        run("ecdsa (valid)", wire::Table::ecdsa, n, 0.0, daemon::ConfirmRule::groups, in_place);
        run("multisig (attempts)", wire::Table::multisig, n, 0.0, daemon::ConfirmRule::strict, in_place);
        run("multisig (attempts)", wire::Table::multisig, n, 0.0, daemon::ConfirmRule::groups, in_place);
        run("multisig (+5% mutated)", wire::Table::multisig, n, 0.05, daemon::ConfirmRule::groups, in_place);
    }
    return 0;
}
