// Subcommands that talk to sigverifyd. Until the client library is linked in,
// the CLI says plainly that only --local is available.
#include "client/cli/cli_common.hpp"

#include <cstdio>

namespace sigverify::cli {

void add_daemon_options(CLI::App& verify_cmd, VerifyArgs& args) {
    verify_cmd.add_option("--runtime-dir", args.runtime_dir, "sigverifyd runtime directory (daemon mode)");
}

int run_verify_daemon(const VerifyArgs&) {
    std::fprintf(stderr, "sigverify verify: this build has no daemon client; use --local\n");
    return int(ExitCode::daemon);
}

void add_extra_subcommands(CLI::App&) {}

int run_extra_subcommand(CLI::App&) { return int(ExitCode::usage); }

}  // namespace sigverify::cli
