// SPDX-License-Identifier: MIT
// The common end of the test-only daemons that put a stand-in GPU in the
// host kernel's place (sigverifyd_lying, sigverifyd_sleeping_gpu): the real
// daemon's config from the arguments left after their own, the two options
// they need, and the real Server with the stand-in's factory. Never installed.
#pragma once

#include <exception>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "daemon/ops/config.hpp"
#include "daemon/ops/exit_codes.hpp"
#include "daemon/serve/server.hpp"

namespace sigverify::test {

// rest: argv[0] and the sigverifyd arguments (no terminating null yet);
// factory_for: the stand-in's factory, given the parsed config.
inline int run_stand_in_daemon(const char* name, std::vector<char*> rest, int (*usage)(const std::string&),
                               const std::function<daemon::HostKernelFactory(const daemon::Config&)>& factory_for) {
    rest.push_back(nullptr);
    int exit_code = daemon::exit_status::clean_stop;
    auto cfg = daemon::parse_config(int(rest.size()) - 1, rest.data(), exit_code);
    if (!cfg) return exit_code;
    if (cfg->backend != daemon::BackendChoice::host_kernel) return usage("needs --backend host-kernel");
    if (!cfg->foreground) return usage("needs --foreground");
    try {
        daemon::Server server(*cfg, factory_for(*cfg));
        return server.run();
    } catch (const std::exception& e) {
        std::cerr << name << ": " << e.what() << "\n";
        return daemon::exit_status::runtime_failure;
    }
}

}  // namespace sigverify::test
