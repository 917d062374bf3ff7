// SPDX-License-Identifier: MIT
// sigverifyd: bulk secp256k1 signature verification for node processes on the
// same host, through per-client shared-memory rings.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "daemon/ops/config.hpp"
#include "daemon/ops/exit_codes.hpp"
#include "daemon/serve/server.hpp"

namespace {

// Classic double fork (without --foreground). systemd units use --foreground.
bool daemonize() {
    pid_t pid = fork();
    if (pid < 0) return false;
    if (pid > 0) _exit(0);
    if (setsid() < 0) return false;
    pid = fork();
    if (pid < 0) return false;
    if (pid > 0) _exit(0);
    if (chdir("/") != 0) return false;
    const int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0) return false;
    dup2(null, STDIN_FILENO);
    dup2(null, STDOUT_FILENO);
    dup2(null, STDERR_FILENO);
    if (null > STDERR_FILENO) close(null);
    return true;
}

}  // namespace

// Exit statuses: daemon/ops/exit_codes.hpp (usage_error for the command line,
// config_error for the --config file, runtime_failure otherwise).
int main(int argc, char** argv) {
    namespace status = sigverify::daemon::exit_status;
    int exit_code = status::clean_stop;
    auto cfg = sigverify::daemon::parse_config(argc, argv, exit_code);
    if (!cfg) return exit_code;
    if (!cfg->foreground) {
        if (cfg->log_file.empty()) {
            std::cerr << "sigverifyd: without --foreground a --log-file is required (stderr is closed)\n";
            return status::usage_error;
        }
        if (!daemonize()) {
            std::perror("sigverifyd: daemonize");
            return status::runtime_failure;
        }
    }
    try {
        sigverify::daemon::Server server(*cfg);
        return server.run();
    } catch (const std::exception& e) {
        std::cerr << "sigverifyd: " << e.what() << "\n";
        return status::runtime_failure;
    }
}
