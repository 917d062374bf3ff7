// SPDX-License-Identifier: MIT
// No GPU can hang the daemon, and a GPU the build has no image for is said to
// be exactly that (issue 40). Real daemons (sigverifyd_hung_gpu: host-kernel
// "GPUs" that stop answering, hung_gpu.hpp), real clients, real shared
// memory. A GPU that never finishes -- at start-up, in the middle of a
// batch, or one that answers wrong after its deadline -- is left out within
// its deadline (--gpu-wait-floor plus a bound), every verdict is
// libsecp256k1's, and the daemon keeps serving; the stats socket, the
// metrics and the log say which GPU and why. Without the deadline
// (DeadlineBackend) each of these hangs until ctest's TIMEOUT.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "ops/ops_helpers.hpp"
#include "stand_in_probe.hpp"
#include "support/first_differences.hpp"
#include "support/seconds_since.hpp"

using namespace sigverify;
using namespace sigverify::test;

namespace {

using Clock = std::chrono::steady_clock;
constexpr const char* kFloor = "1";  // --gpu-wait-floor, seconds
// What a left-out GPU may cost on top of its deadline: the CPU re-verifying
// the batch, on a loaded 2-core machine (measured: ~2-6 s).
constexpr double kBoundS = 30;

cli::DaemonProcessOptions options(std::vector<std::string> own) {
    cli::DaemonProcessOptions o;
    o.binary = SIGVERIFYD_HUNG_BIN;
    o.args = std::move(own);
    for (const char* a : {"--backend", "host-kernel", "--cpu-threads", "2", "--gpu-min-rows", "1", "--gpu-split",
                          "off", "--gpu-chunk-rows", "4096", "--gpu-wait-floor", kFloor, "--arena-size", "8M"})
        o.args.push_back(a);
    o.temp_template = "/tmp/sigverifyd-test-XXXXXX";
    o.start_timeout = std::chrono::milliseconds(60000);
    return o;
}

// One batch of `rows` known rows of `table` through the daemon, timed; its
// verdicts must be the known ones row by row.
double check_batch(Client& c, wire::Table table, std::size_t rows, unsigned seed) {
    const KnownRows k = make_known_rows(table, rows, wire::SigEncoding::opaque, seed);
    std::vector<std::uint8_t> data = k.rows, got(k.expected.size(), 0xAA);
    const auto t0 = Clock::now();
    const BatchResult r = send(c, table, wire::Mode::results, wire::SigEncoding::opaque, data, got.size(), got.data());
    const double took = seconds_since(t0);
    REQUIRE(r.ok());
    CHECK(r.local_rows == 0);
    CHECK(first_differences(got, k.expected) == "");
    return took;
}

// The GPU left out as hung, as everything an operator reads says it.
void check_left_out(const cli::DaemonProcess& d, const char* gpu) {
    const std::string line = backend_line(d, gpu);
    INFO(line);
    CHECK(line.find("switched off") != std::string::npos);
    CHECK(line.find("did not finish a call") != std::string::npos);
    CHECK(metric(d, std::string("sigverifyd_backend_enabled{backend=\"") + gpu + "\",kind=\"gpu\"}") == 0);
    CHECK(metric(d, std::string("sigverifyd_backend_timeouts_total{backend=\"") + gpu + "\"}") >= 1);
    CHECK(metric(d, "sigverifyd_gpu_timeouts_total") >= 1);
    CHECK(d.log().find("taken for hung, left out") != std::string::npos);
}

}  // namespace

TEST_CASE("a GPU that never finishes at start-up: the self-test leaves it out, the daemon serves on the CPU",
          "[daemon][hung][startup]") {
    const auto t0 = Clock::now();
    cli::DaemonProcess d(options({"--hang-after-rows", "0", "--gpus", "0"}));
    const double started = seconds_since(t0);
    INFO("started in " << started << " s");
    CHECK(started < std::atof(kFloor) + kBoundS);
    check_left_out(d, "gpu0");
    CHECK(d.log().find("every GPU was switched off during the self-test") != std::string::npos);
    auto c = connect_to(d, "startup");
    REQUIRE(c);
    for (wire::Table t : {wire::Table::ecdsa, wire::Table::schnorr, wire::Table::multisig, wire::Table::threshold}) {
        INFO(wire::to_string(t));
        const double took = check_batch(*c, t, 3000, 7 + unsigned(t));
        INFO("batch took " << took << " s");
        CHECK(took < kBoundS);  // no wait on the hung GPU any more
    }
}

TEST_CASE("a GPU that hangs in the middle of a batch: left out within its deadline, its rows verified on the CPU",
          "[daemon][hung][mid-batch]") {
    // The self-test's 32 rows and two 4,096-row chunks answered, then every call stalls.
    cli::DaemonProcess d(options({"--hang-after-rows", "8300", "--gpus", "0"}));
    auto c = connect_to(d, "mid-batch");
    REQUIRE(c);
    CHECK(metric(d, "sigverifyd_gpu_timeouts_total") == 0);
    const double took = check_batch(*c, wire::Table::ecdsa, 40000, 11);
    INFO("the batch took " << took << " s");
    CHECK(took < std::atof(kFloor) + kBoundS);
    check_left_out(d, "gpu0");
    // the daemon keeps serving, without waiting on the hung GPU
    const double next = check_batch(*c, wire::Table::schnorr, 2000, 12);
    CHECK(next < kBoundS);
}

TEST_CASE("a GPU that answers wrong after its deadline: the late verdicts are never published",
          "[daemon][hung][late]") {
    // every call past the self-test stalls 4 s, then says VALID for every row
    cli::DaemonProcess d(options({"--hang-after-rows", "32", "--hang-stall-ms", "4000", "--gpus", "0"}));
    auto c = connect_to(d, "late");
    REQUIRE(c);
    check_batch(*c, wire::Table::ecdsa, 12000, 13);  // a quarter of the rows invalid: a late "valid" would show
    check_left_out(d, "gpu0");
    std::this_thread::sleep_for(std::chrono::milliseconds(4500));  // the late answers have come back by now
    check_batch(*c, wire::Table::threshold, 4000, 14);
    CHECK(metric(d, "sigverifyd_backend_crosscheck_mismatches_total{backend=\"gpu0\"}") == 0);
}

TEST_CASE("of two GPUs one hangs: the other takes its share", "[daemon][hung][two]") {
    cli::DaemonProcess d(options({"--hang-after-rows", "8300", "--hang-gpus", "1", "--gpus", "0,1"}));
    auto c = connect_to(d, "two");
    REQUIRE(c);
    check_batch(*c, wire::Table::ecdsa, 40000, 15);
    check_left_out(d, "gpu1");
    CHECK(metric(d, "sigverifyd_backend_enabled{backend=\"gpu0\",kind=\"gpu\"}") == 1);
    CHECK(d.log().find("the other GPUs take its share") != std::string::npos);
}

TEST_CASE("a GPU the build has no kernel image for is reported as exactly that, and the CPU serves",
          "[daemon][hung][no-image]") {
    cli::DaemonProcess d(options({"--no-image-gpus", "0", "--gpus", "0"}));
    const std::string log = d.log();
    INFO(log);
    CHECK(log.find("no kernel image for sm_86 in this build") != std::string::npos);
    CHECK(log.find("-DSIGVERIFY_CUDA_ALL_ARCHITECTURES=ON") != std::string::npos);
    CHECK(log.find("using the cpu") != std::string::npos);
    const std::string line = backend_line(d, "gpu0");
    INFO(line);
    CHECK(line.find("no kernel image for sm_86 in this build") != std::string::npos);
    CHECK(line.find("./scripts/run.sh") != std::string::npos);
    CHECK(line.find("failed:") == std::string::npos);  // not a failed self-test
    CHECK(metric(d, "sigverifyd_backend_no_kernel_image{backend=\"gpu0\"}") == 1);
    CHECK(metric(d, "sigverifyd_backend_enabled{backend=\"gpu0\",kind=\"gpu\"}") == 0);
    auto c = connect_to(d, "no-image");
    REQUIRE(c);
    DaemonInfo info;
    REQUIRE(c->info(info) == Status::ok);
    CHECK(info.backend == "cpu");
    REQUIRE(info.gpus.size() == 1);
    CHECK_FALSE(info.gpus[0].enabled);
    CHECK(info.gpus[0].self_test.rfind("no kernel image for sm_86 in this build", 0) == 0);
    // `sigverify info` prints the rebuild command beside it
    const std::string cmd = std::string(SIGVERIFY_CLI_BIN) + " info --runtime-dir " + d.dir();
    std::string out;
    if (FILE* p = popen(cmd.c_str(), "r")) {
        char buf[4096];
        for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
        pclose(p);
    }
    INFO(out);
    CHECK(out.find("no kernel image for sm_86") != std::string::npos);
    CHECK(out.find("-DSIGVERIFY_CUDA_ALL_ARCHITECTURES=ON") != std::string::npos);
    check_batch(*c, wire::Table::multisig, 3000, 16);
}
