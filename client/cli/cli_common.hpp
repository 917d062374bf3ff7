// SPDX-License-Identifier: MIT
// Pieces shared by the sigverify subcommands: row files, argument structs,
// exit codes, and the hooks through which daemon_commands.cpp adds the
// subcommands that talk to sigverifyd.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sigverify/shm_protocol/segment_layout.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify {
class Client;
}

namespace sigverify::cli {

enum class ExitCode : int { ok = 0, invalid_rows = 1, usage = 2, input = 3, daemon = 4 };

// A problem with the user's files or data (exit code 3).
struct InputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A problem reaching or using sigverifyd (exit code 4).
struct DaemonError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A row file read into memory with the layout the user named.
struct RowFile {
    wire::RecordKind kind{};
    std::size_t tail_size = 0;
    wire::SigEncoding encoding{};
    std::size_t count = 0;
    std::vector<std::uint8_t> bytes;

    wire::RowSpan span(std::vector<std::uint8_t>& storage) const {
        return wire::RowSpan{kind, tail_size, encoding, storage.data(), count};
    }
};

// Throws InputError when the file cannot be read or its size is not a
// multiple of the row stride.
RowFile load_row_file(const std::string& path, const std::string& table, std::optional<std::size_t> tail_size,
                      const std::string& sig_format);

// Writes to PATH.tmp then renames, so a failure never leaves a partial file.
void write_file_atomically(const std::string& path, const std::uint8_t* data, std::size_t size);

// Why a command could not use sigverifyd (for --json output).
struct DaemonFailure {
    shm::Status status = shm::Status::ok;
    std::string message;
};

// Provided by daemon_commands.cpp.
// Connects to sigverifyd in runtime_dir (empty: the default), or prints why
// not as "sigverify WHAT: cannot use sigverifyd: ..." and returns null (and,
// when failure is given, fills it in). timeout_ms bounds each wait for an
// answer of the daemon (ClientOptions::batch_timeout): a stopped or hung
// daemon ends the command with timeout instead of holding it.
std::unique_ptr<Client> connect_daemon(const std::string& runtime_dir, const char* name, const char* what,
                                       unsigned timeout_ms, DaemonFailure* failure = nullptr);
void add_extra_subcommands(CLI::App& app);
int run_extra_subcommand(CLI::App& app);

}  // namespace sigverify::cli
