// SPDX-License-Identifier: MIT
// `sigverify info` (info_command.cpp).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "client/cli/cli_common.hpp"

namespace sigverify::cli {

struct InfoArgs {
    std::string runtime_dir;
    bool json = false;
};

CLI::App* add_info_subcommand(CLI::App& app, InfoArgs& args);
int run_info(const InfoArgs& args);

}  // namespace sigverify::cli
