// SPDX-License-Identifier: MIT
// The daemon's control socket, DIR/sigverifyd.sock: the runtime directory
// created, a live daemon already listening there left alone, the socket bound
// mode 0600 (0660 and chowned to --group when there is one), listening,
// non-blocking. And the descriptor limit the daemon needs to serve
// --max-clients clients.
#pragma once

#include <cstddef>
#include <string>

#include <spdlog/logger.h>

#include "daemon/ops/config.hpp"

namespace sigverify::daemon {

struct ListenSocket {
    int fd = -1;
    std::string path;
};

// gid: --group's, or -1 for none. false: logged (critical); `out` may hold a
// descriptor to close.
bool open_listen_socket(const Config& cfg, int gid, spdlog::logger& log, ListenSocket& out);

// Raises the soft RLIMIT_NOFILE towards what --max-clients needs; false
// (logged) when even the hard limit is too low. `lingering` is set to how
// many refused connections may linger with what is left.
bool check_descriptor_limit(const Config& cfg, spdlog::logger& log, std::size_t& lingering);

}  // namespace sigverify::daemon
