// SPDX-License-Identifier: MIT
// Whether a GPU whose slots did not all open at start-up is used
// (daemon::DeviceSlots, daemon/backends/gpu_backend.hpp): the rule GpuBackend::open_all
// applies to each device, and what the start-up log and `backends` say. No
// GPU needed: the rule sees only what each slot's opening returned.
#include <catch2/catch.hpp>

#include "daemon/backends/gpu_backend.hpp"

using sigverify::daemon::DeviceSlots;
namespace gpu = sigverify::gpu;

namespace {

gpu::Status failed(gpu::Code code, const char* message) { return gpu::Status{code, message}; }

}  // namespace

TEST_CASE("a device whose every slot opened is used and reported as passed", "[gpu][unit]") {
    DeviceSlots d;
    d.bulk_wanted = d.bulk_opened = 4;
    d.lane_opened = true;
    CHECK(d.usable());
    CHECK(d.report() == "passed");
}

TEST_CASE("without its lane slot a device still serves, and the report says what was left out", "[gpu][unit]") {
    DeviceSlots d;
    d.bulk_wanted = d.bulk_opened = 4;
    d.failure = failed(gpu::Code::cuda_error, "cudaMalloc: out of memory");
    CHECK(d.usable());
    CHECK(d.report() == "passed; left out the lane slot (cuda_error: cudaMalloc: out of memory)");
}

TEST_CASE("bulk slots that could not be allocated are left out while one opened", "[gpu][unit]") {
    DeviceSlots d;
    d.bulk_wanted = 4;
    d.bulk_opened = 1;
    d.failure = failed(gpu::Code::cuda_error, "cudaHostAlloc: out of memory");
    CHECK(d.usable());
    CHECK(d.report() ==
          "passed; left out 3 of 4 bulk slots and the lane slot (cuda_error: cudaHostAlloc: out of memory)");
}

TEST_CASE("a device with no bulk slot is not used", "[gpu][unit]") {
    DeviceSlots d;
    d.bulk_wanted = 4;
    d.failure = failed(gpu::Code::cuda_error, "cudaStreamCreate: out of memory");
    CHECK_FALSE(d.usable());
    CHECK(d.report() == "cuda_error: cudaStreamCreate: out of memory");
}

TEST_CASE("a wrong verdict on any slot's self-test leaves the whole device out", "[gpu][unit]") {
    DeviceSlots d;
    d.bulk_wanted = d.bulk_opened = 4;  // the bulk slots passed
    d.wrong_verdict = true;             // the lane slot's self-test did not
    d.failure = failed(gpu::Code::self_test_failed, "ecdsa row 3: device said 1, expected 0");
    CHECK_FALSE(d.usable());
    CHECK(d.report().rfind("self_test_failed: ecdsa row 3", 0) == 0);
}
