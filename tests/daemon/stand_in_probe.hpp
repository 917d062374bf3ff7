// SPDX-License-Identifier: MIT
// What the tests of the stand-in GPU daemons (sigverifyd_lying,
// sigverifyd_hung_gpu) read of a running daemon: a client session, one
// backend's line of the stats socket's `backends`, one Prometheus sample.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include "client/cli/daemon_process.hpp"
#include "ops/ops_helpers.hpp"
#include "sigverify/client.hpp"

namespace sigverify::test {

inline std::unique_ptr<Client> connect_to(const cli::DaemonProcess& d, const char* name) {
    ClientOptions o;
    o.runtime_dir = d.dir();
    o.name = name;
    return Client::connect(o);
}

// The stats socket's line of backend `name` ("gpu0"), "" when there is none.
inline std::string backend_line(const cli::DaemonProcess& d, const std::string& name) {
    const std::string all = stats_command(d.dir(), "backends");
    const std::size_t at = all.find("backend=" + name + " ");
    if (at == std::string::npos) return "";
    return all.substr(at, all.find('\n', at) - at);
}

// The value of a Prometheus sample line that starts with `prefix` (name and
// labels), or -1.
inline long long metric(const cli::DaemonProcess& d, const std::string& prefix) {
    const std::string text = stats_command(d.dir(), "stats");
    const std::size_t at = text.find("\n" + prefix + " ");
    if (at == std::string::npos) return -1;
    return std::atoll(text.c_str() + at + 1 + prefix.size() + 1);
}

}  // namespace sigverify::test
