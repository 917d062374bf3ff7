// SPDX-License-Identifier: MIT
// sigverifyd_lying: a TEST executable, never installed. It is sigverifyd
// (the same sigverifyd_core, the same Server) whose host-kernel "GPUs" lie
// (lying_gpu.hpp), so that tests can run a real daemon with its default
// confirmation rule and sample rates against a GPU that is wrong on purpose.
//
//   sigverifyd_lying --lie false-invalid|false-valid [--lie-every N]
//                    [--lie-in-place-only] [--lie-honest-calls N]
//                    [--lie-gpus 0,2]  SIGVERIFYD-ARGS...
//
// Its own options come first and are removed before sigverifyd's parser sees
// the rest; SIGVERIFYD-ARGS must include --backend host-kernel and
// --foreground. --lie-gpus names the devices that lie (default: all).
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "daemon/ops/config.hpp"
#include "daemon/ops/exit_codes.hpp"
#include "daemon/backends/host_kernel_backend.hpp"
#include "daemon/serve/server.hpp"
#include "lying_gpu.hpp"
#include "stand_in_daemon.hpp"

namespace {

int usage(const std::string& why) {
    std::cerr << "sigverifyd_lying: " << why
              << "\nusage: sigverifyd_lying --lie false-invalid|false-valid [--lie-every N] [--lie-in-place-only] "
                 "[--lie-honest-calls N] [--lie-gpus LIST] --backend host-kernel --foreground SIGVERIFYD-ARGS...\n";
    return sigverify::daemon::exit_status::usage_error;
}

}  // namespace

int main(int argc, char** argv) {
    using namespace sigverify;
    test::LieSpec spec;
    bool have_lie = false;
    std::set<int> liars;  // empty: every device lies
    std::vector<char*> rest{argv[0]};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--lie" && has_value) {
            if (!test::parse_lie(argv[++i], spec.lie)) return usage("--lie: unknown lie");
            have_lie = true;
        } else if (a == "--lie-every" && has_value) {
            const long n = std::strtol(argv[++i], nullptr, 10);
            if (n < 1 || n > 1000000) return usage("--lie-every: 1..1000000");
            spec.every = unsigned(n);
        } else if (a == "--lie-honest-calls" && has_value) {
            spec.honest_calls = unsigned(std::strtoul(argv[++i], nullptr, 10));
        } else if (a == "--lie-in-place-only") {
            spec.in_place_only = true;
        } else if (a == "--lie-gpus" && has_value) {
            std::stringstream list(argv[++i]);
            for (std::string item; std::getline(list, item, ',');) liars.insert(std::atoi(item.c_str()));
        } else {
            rest.push_back(argv[i]);
        }
    }
    if (!have_lie) return usage("--lie is required");
    return test::run_stand_in_daemon("sigverifyd_lying", rest, usage, [&spec, &liars](const daemon::Config&) {
        return daemon::HostKernelFactory([spec, liars](int index, unsigned workers, gpu::Status&) -> std::unique_ptr<daemon::Backend> {
            auto honest = std::make_unique<daemon::HostKernelBackend>(index, workers);
            if (!liars.empty() && liars.count(index) == 0) return honest;
            return std::make_unique<test::LyingBackend>(std::move(honest), spec);
        });
    });
}
