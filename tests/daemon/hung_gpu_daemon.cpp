// SPDX-License-Identifier: MIT
// sigverifyd_hung_gpu: a TEST executable, never installed. It is sigverifyd
// (the same sigverifyd_core, the same Server) whose host-kernel "GPUs" stop
// answering (hung_gpu.hpp), or have no kernel image in the build, so that
// tests can run a real daemon against a GPU that hangs at start-up or in the
// middle of a batch, and against a GPU the build cannot run.
//
//   sigverifyd_hung_gpu [--hang-after-rows N] [--hang-stall-ms MS]
//                       [--hang-gpus 0,2] [--no-image-gpus 1]  SIGVERIFYD-ARGS...
//
// Its own options come first and are removed before sigverifyd's parser sees
// the rest; SIGVERIFYD-ARGS must include --backend host-kernel and
// --foreground. --hang-gpus names the devices that hang (default: all the
// others); --no-image-gpus those that do not open, with the report a GPU of
// compute capability 8.6 gets from a build for sm_90 alone
// (gpu::no_kernel_image_message).
#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/backends/backend.hpp"
#include "daemon/ops/exit_codes.hpp"
#include "hung_gpu.hpp"
#include "kernels/gpu_verifier.hpp"
#include "stand_in_daemon.hpp"

namespace {

int usage(const std::string& why) {
    std::cerr << "sigverifyd_hung_gpu: " << why
              << "\nusage: sigverifyd_hung_gpu [--hang-after-rows N] [--hang-stall-ms MS] [--hang-gpus LIST] "
                 "[--no-image-gpus LIST] --backend host-kernel --foreground SIGVERIFYD-ARGS...\n";
    return sigverify::daemon::exit_status::usage_error;
}

std::set<int> parse_list(const char* text) {
    std::set<int> out;
    std::stringstream list(text);
    for (std::string item; std::getline(list, item, ',');) out.insert(std::atoi(item.c_str()));
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace sigverify;
    test::HangSpec spec;
    std::set<int> hang, no_image;  // hang empty: every device that opens hangs
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--hang-after-rows" && has_value) {
            spec.after_rows = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--hang-stall-ms" && has_value) {
            spec.stall_ms = unsigned(std::strtoul(argv[++i], nullptr, 10));
        } else if (a == "--hang-gpus" && has_value) {
            hang = parse_list(argv[++i]);
        } else if (a == "--no-image-gpus" && has_value) {
            no_image = parse_list(argv[++i]);
        } else {
            rest.push_back(argv[i]);
        }
    }
    return test::run_stand_in_daemon("sigverifyd_hung_gpu", rest, usage, [&](const daemon::Config&) {
        return daemon::HostKernelFactory([spec, hang, no_image](int index, unsigned workers,
                                                                 gpu::Status& failure) -> std::unique_ptr<daemon::Backend> {
            if (no_image.count(index) != 0) {
                gpu::DeviceInfo info;
                info.index = index;
                info.name = "stand-in GeForce RTX 3090";
                info.cc_major = 8;
                info.cc_minor = 6;
                failure = gpu::Status{gpu::Code::no_kernel_image,
                                      gpu::no_kernel_image_message(info, "90-real,90-virtual")};
                return nullptr;
            }
            if (!hang.empty() && hang.count(index) == 0) return std::make_unique<daemon::CpuBackend>(workers);
            return std::make_unique<test::HungGpuBackend>(index, workers, spec);
        });
    });
}
