// SPDX-License-Identifier: MIT
#include "client/cli/json_output.hpp"

#include <cstdio>
#include <string>

namespace sigverify::cli {

std::string_view status_key(shm::Status s) {
    using shm::Status;
    switch (s) {
    case Status::ok: return "ok";
    case Status::invalid_argument: return "invalid_argument";
    case Status::bad_entry: return "bad_entry";
    case Status::bad_range: return "bad_range";
    case Status::protocol_version: return "protocol_version";
    case Status::permission_denied: return "permission_denied";
    case Status::busy: return "busy";
    case Status::shutting_down: return "shutting_down";
    case Status::cancelled: return "cancelled";
    case Status::backend_error: return "backend_error";
    case Status::unreachable: return "unreachable";
    case Status::disconnected: return "disconnected";
    case Status::timeout: return "timeout";
    case Status::ring_full: return "ring_full";
    case Status::stale_epoch: return "stale_epoch";
    case Status::too_large: return "too_large";
    case Status::handshake: return "handshake";
    case Status::bad_segment: return "bad_segment";
    case Status::system_error: return "system_error";
    case Status::pending: return "pending";
    case Status::not_found: return "not_found";
    case Status::buffer_lost: return "buffer_lost";
    }
    return "unknown";  // a status from a newer protocol than this tool knows
}

nlohmann::ordered_json daemon_failure_json(std::string_view command, shm::Status status, std::string_view error) {
    return nlohmann::ordered_json{{"command", command}, {"status", status_key(status)}, {"error", error}};
}

void print_json_line(const nlohmann::ordered_json& j) {
    // Invalid UTF-8 in a message (a path, a daemon's error text) is replaced, never a throw.
    const std::string text = j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    std::printf("%s\n", text.c_str());
    std::fflush(stdout);
}

}  // namespace sigverify::cli
