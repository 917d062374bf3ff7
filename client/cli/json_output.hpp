// SPDX-License-Identifier: MIT
// The --json output of `sigverify verify` and `sigverify ping`: the summary
// line as one JSON object on one line of stdout, so scripts and probes read
// fields instead of parsing prose. Numbers stay numbers; "status" is a word
// from status_key (the exit code is the same as without --json).
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

#include "sigverify/shm_protocol/segment_layout.hpp"

namespace sigverify::cli {

// A protocol status as a stable lower-case key: "ok", "unreachable", "busy",
// "cancelled", ... (the enumerator's name in sigverify/shm_protocol/segment_layout.hpp).
std::string_view status_key(shm::Status s);

// The object for a command that could not use sigverifyd: command, status
// (status_key) and error (the message also written to stderr).
nlohmann::ordered_json daemon_failure_json(std::string_view command, shm::Status status, std::string_view error);

// Writes j as one line to stdout.
void print_json_line(const nlohmann::ordered_json& j);

}  // namespace sigverify::cli
