// SPDX-License-Identifier: MIT
// `sigverify bench`: the 4-table benchmark, end to end through sigverifyd, side
// by side with in-process libsecp256k1 on the same rows in the same run.
#pragma once

#include <CLI/CLI.hpp>

namespace sigverify::cli {

// Adds the subcommand; returns it so main can tell whether it was chosen.
CLI::App* add_bench_subcommand(CLI::App& app);
int run_bench();

}  // namespace sigverify::cli
