// SPDX-License-Identifier: MIT
// The GPU host API without a GPU: device selection parsing, and that
// discovery/open fail cleanly (build without CUDA: "built without CUDA"; CUDA build on
// a machine without a device: no device) so callers can fall back to the CPU.
#include <catch2/catch.hpp>

#include "kernels/gpu_verifier.hpp"

using namespace sigverify;

TEST_CASE("select_devices parses --gpus lists", "[kernels][gpu][unit]") {
    std::vector<gpu::DeviceInfo> devs(3);
    for (int i = 0; i < 3; ++i) devs[std::size_t(i)].index = i;
    std::vector<int> chosen;
    std::string err;
    CHECK(gpu::select_devices("all", devs, chosen, err));
    CHECK(chosen == std::vector<int>{0, 1, 2});
    CHECK(gpu::select_devices("", devs, chosen, err));
    CHECK(chosen.size() == 3);
    CHECK(gpu::select_devices("2,0,2", devs, chosen, err));
    CHECK(chosen == std::vector<int>{2, 0});
    CHECK(gpu::select_devices("1", devs, chosen, err));
    CHECK(chosen == std::vector<int>{1});
    for (const char* bad : {"3", "0,", ",1", "a", "-1", "0,,1", "1 ", "0x1"}) {
        INFO(bad);
        CHECK_FALSE(gpu::select_devices(bad, devs, chosen, err));
        CHECK(chosen.empty());
        CHECK_FALSE(err.empty());
    }
    CHECK_FALSE(gpu::select_devices("all", {}, chosen, err));
    CHECK_FALSE(err.empty());
}

TEST_CASE("without a usable GPU, discovery and open report why", "[kernels][gpu][unit]") {
    const auto disc = gpu::discover();
    if (!disc.devices.empty()) {
        SUCCEED("a GPU is present: covered by gpu_check");
        return;
    }
    CHECK_FALSE(disc.error.empty());
    if (!gpu::built_with_cuda()) CHECK(disc.error == "no GPU (built without CUDA)");
    gpu::Status st;
    gpu::Options o;
    auto dev = gpu::DeviceVerifier::open(o, st);
    CHECK(dev == nullptr);
    CHECK_FALSE(st.ok());
    CHECK(st.code == (gpu::built_with_cuda() ? gpu::Code::no_device : gpu::Code::not_built));
    CHECK_FALSE(st.message.empty());
    CHECK(gpu::to_string(st.code) != "?");
}

TEST_CASE("small launches spread over every SM, large ones keep the configured block size", "[kernels][gpu][unit]") {
    using sigverify::gpu::spread_threads_per_block;
    // H200: 132 SMs, 128 threads a block, one row a thread.
    CHECK(spread_threads_per_block(1, 128, 132, 1) == 32);
    CHECK(spread_threads_per_block(4096, 128, 132, 1) == 32);     // 128 blocks, not 32
    CHECK(spread_threads_per_block(10000, 128, 132, 1) == 96);    // 105 blocks of 96, not 79 of 128
    CHECK(spread_threads_per_block(16896, 128, 132, 1) == 128);   // 132 full blocks already
    CHECK(spread_threads_per_block(1 << 20, 128, 132, 1) == 128);
    CHECK(spread_threads_per_block(4096, 256, 132, 4) == 32);     // several rows a thread
    for (std::size_t n : {std::size_t(1), std::size_t(33), std::size_t(4096), std::size_t(12000)}) {
        const int tpb = spread_threads_per_block(n, 128, 132, 1);
        CHECK(tpb % 32 == 0);
        CHECK(tpb >= 32);
        CHECK(tpb <= 128);
        // Never fewer blocks than the configured size gives.
        CHECK((n + std::size_t(tpb) - 1) / std::size_t(tpb) >= (n + 127) / 128);
    }
    CHECK(spread_threads_per_block(100, 128, 0, 1) == 128);  // unknown SM count: unchanged
}
