// SPDX-License-Identifier: MIT
// `sigverify stats` and `sigverify top`: sigverifyd's stats socket
// (DIR/stats.sock) from the command line.
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <string>

namespace sigverify::cli {

void add_stats_subcommands(CLI::App& app);
// The exit code when one of these subcommands was given, else -1.
int run_stats_subcommand();

// One command over DIR/stats.sock (empty dir: $SIGVERIFY_RUNTIME_DIR, else
// /run/sigverifyd); the answer, or throws DaemonError. Every wait is bounded
// by `timeout`.
std::string stats_request(const std::string& runtime_dir, const std::string& command,
                          std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));

}  // namespace sigverify::cli
