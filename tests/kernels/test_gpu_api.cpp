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

TEST_CASE("which GPUs a build's architecture list runs on", "[kernels][gpu][unit]") {
    using gpu::ImageFit;
    using gpu::kernel_image_for;
    // The default (every architecture) list: machine code for every GPU from sm_75 to sm_120.
    const std::string_view all = "75-real,80-real,86-real,89-real,90-real,100-real,120-real,120-virtual";
    for (const auto& [major, minor] : {std::pair{7, 5}, {8, 0}, {8, 6}, {8, 7}, {8, 9}, {9, 0}, {10, 0}, {10, 3},
                                        {12, 0}, {12, 1}}) {
        INFO(major << "." << minor);
        CHECK(kernel_image_for(major, minor, all) == ImageFit::machine_code);
    }
    CHECK(kernel_image_for(13, 0, all) == ImageFit::ptx_jit);  // a later GPU: the driver compiles compute_120
    CHECK(kernel_image_for(6, 1, all) == ImageFit::none);      // Pascal: CUDA 13 builds nothing older than Turing
    CHECK(kernel_image_for(11, 0, all) == ImageFit::none);     // sm_100 code is another major; compute_120 is newer

    // CI's one-architecture build (sm_90 + compute_90 PTX): what issue 40 found.
    const std::string_view one = "90-real,90-virtual";
    CHECK(kernel_image_for(9, 0, one) == ImageFit::machine_code);
    for (const auto& [major, minor] : {std::pair{7, 5}, {8, 0}, {8, 6}, {8, 9}})
        CHECK(kernel_image_for(major, minor, one) == ImageFit::none);  // RTX 20/30/40, A100: no kernel image
    CHECK(kernel_image_for(12, 0, one) == ImageFit::ptx_jit);          // RTX 50: JIT from compute_90
    CHECK(kernel_image_for(10, 0, one) == ImageFit::ptx_jit);

    // Plain numbers are machine code and PTX; 'a' images run on that GPU only.
    CHECK(kernel_image_for(8, 6, "80") == ImageFit::machine_code);
    CHECK(kernel_image_for(9, 0, "80") == ImageFit::ptx_jit);
    CHECK(kernel_image_for(9, 0, "90a-real") == ImageFit::machine_code);
    CHECK(kernel_image_for(10, 0, "90a-real,90a-virtual") == ImageFit::none);
    // What it cannot read, the runtime decides; an empty list (no CUDA) runs nothing.
    CHECK(kernel_image_for(8, 6, "native") == ImageFit::unknown);
    CHECK(kernel_image_for(8, 6, "90-real,all-major") == ImageFit::unknown);
    CHECK(kernel_image_for(8, 6, "") == ImageFit::none);
    CHECK(kernel_image_for(8, 6, ",,86-real,") == ImageFit::machine_code);
}

TEST_CASE("a GPU without an image is reported as exactly that, with the rebuild command", "[kernels][gpu][unit]") {
    gpu::DeviceInfo d;
    d.index = 1;
    d.name = "NVIDIA GeForce RTX 3090";
    d.cc_major = 8;
    d.cc_minor = 6;
    const std::string m = gpu::no_kernel_image_message(d, "90-real,90-virtual");
    INFO(m);
    // its first 47 bytes are what `sigverify info` shows
    CHECK(m.rfind("no kernel image for sm_86 in this build", 0) == 0);
    CHECK(m.find("sm_90 compute_90 (PTX)") != std::string::npos);
    CHECK(m.find("NVIDIA GeForce RTX 3090") != std::string::npos);
    CHECK(m.find("-DSIGVERIFY_CUDA_ALL_ARCHITECTURES=ON") != std::string::npos);
    CHECK(m.find("-DCMAKE_CUDA_ARCHITECTURES=86-real") != std::string::npos);
    CHECK(m.find("./scripts/run.sh") != std::string::npos);
    d.cc_major = 6;
    d.cc_minor = 1;
    const std::string old = gpu::no_kernel_image_message(d, "90-real,90-virtual");
    CHECK(old.rfind("no kernel image for sm_61", 0) == 0);
    CHECK(old.find("sm_75 (Turing) and later only") != std::string::npos);

    CHECK(gpu::architectures_text("75-real,90,120-virtual") == "sm_75 sm_90 compute_90 (PTX) compute_120 (PTX)");
    CHECK(gpu::architectures_text("") == "nothing (built without CUDA)");
    CHECK(gpu::architectures_text("native") == "native");
    // The build knows its own list (empty without CUDA).
    CHECK(gpu::built_with_cuda() == !gpu::built_architectures().empty());
}

TEST_CASE("the runtime's no-image errors are classified as no_kernel_image", "[kernels][gpu][unit]") {
    CHECK(gpu::classify_cuda_error(gpu::kCudaErrorNoKernelImageForDevice) == gpu::Code::no_kernel_image);
    CHECK(gpu::classify_cuda_error(gpu::kCudaErrorInvalidDeviceFunction) == gpu::Code::no_kernel_image);
    CHECK(gpu::classify_cuda_error(2) == gpu::Code::cuda_error);    // cudaErrorMemoryAllocation
    CHECK(gpu::classify_cuda_error(700) == gpu::Code::cuda_error);  // cudaErrorIllegalAddress
    CHECK(gpu::to_string(gpu::Code::no_kernel_image) == "no_kernel_image");
    CHECK(gpu::to_string(gpu::Code::timeout) == "timeout");
}

TEST_CASE("a wait's deadline: the floor, plus slack for its rows at the slowest measured rate", "[kernels][gpu][unit]") {
    CHECK(gpu::wait_deadline_s(0, 0, 10) == 10);
    CHECK(gpu::wait_deadline_s(1000, 1e6, 10) == Approx(10 + gpu::kWaitSlack * 1e-3));
    // before any measurement, a rate slower than any supported GPU
    CHECK(gpu::wait_deadline_s(100000, 0, 2) == Approx(2 + gpu::kWaitSlack * 100000 / gpu::kWaitPriorRowsPerS));
    CHECK(gpu::wait_deadline_s(1 << 20, 1e6, 10) > gpu::wait_deadline_s(1 << 20, 2e7, 10));
}
