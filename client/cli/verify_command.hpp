// SPDX-License-Identifier: MIT
// `sigverify verify`: one command for every way of verifying a batch.
//
//   input   --in FILE --table T   a row file        (key-size, sig-format apply)
//           --columns DIR         a column directory (its manifest describes it)
//   where   --local               in this process (libsecp256k1, --threads, --baseline for rows)
//           (default)             through sigverifyd (--runtime-dir)
//   mode    (default)             results: --out gets one byte per row
//           --collect             rows: --out gets the rows with valid tails zeroed;
//                                 columns: --out gets the correlate column, valid entries zeroed
//   output  (default)             one summary line;  --json: the same as one JSON object
//
// Exit codes: 0 ok, 1 --strict and some rows invalid, 2 usage, 3 input/output,
// 4 the daemon could not be used (ExitCode in cli_common.hpp).
#pragma once

#include <CLI/CLI.hpp>

namespace sigverify::cli {

// Adds the subcommand; returns it so main can tell whether it was chosen.
CLI::App* add_verify_subcommand(CLI::App& app);
// Runs it (after parsing); may throw InputError / DaemonError.
int run_verify();

}  // namespace sigverify::cli
