// SPDX-License-Identifier: MIT
// Column tables and group verdicts in the sigverify CLI (docs/columns.md):
//
//   sigverify columns --from-rows FILE ...   split a row file into a column directory
//   sigverify columns --to-rows DIR ...      pack a column directory into rows
//   sigverify groups ...                     m-of-n group verdicts and per-block pass/fail
//
// (`sigverify verify --columns DIR`, in verify_command.cpp, reads a column
// directory with load_column_dir.)
// A column directory holds columns.json (the manifest) and the raw columns
// message, key, signature and, when tail_size > 0, correlate.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "client/cli/cli_common.hpp"
#include "reference/columns.hpp"

namespace sigverify::cli {

// A column directory read into memory.
struct ColumnDir {
    reference::ColumnTable table;
    reference::CorrelateLayout correlate = reference::CorrelateLayout::none;
    std::optional<wire::Table> row_table;  // the manifest's "table", when given
};

// Throws InputError on a missing or malformed manifest or columns whose sizes
// disagree with it.
ColumnDir load_column_dir(const std::string& dir);
// Writes the manifest and the columns (each file written atomically).
void write_column_dir(const std::string& dir, ColumnDir& columns);

// Adds the `columns` and `groups` subcommands.
void add_column_subcommands(CLI::App& app);
// Runs one of them when it was chosen; returns -1 when neither was.
int run_column_subcommand(const CLI::App& app);

}  // namespace sigverify::cli
