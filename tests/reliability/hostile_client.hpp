// SPDX-License-Identifier: MIT
// Hand-written protocol clients and probes for the hostile-client tests
// (test_hostile.cpp, test_admission.cpp): the raw session of raw_session.hpp
// (it can stop at any step of the handshake), the daemon's descriptors, log
// lines and counters.
#pragma once

#include <dirent.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "batch_check.hpp"
#include "daemon_fixture.hpp"
#include "ops/ops_helpers.hpp"
#include "raw_session.hpp"
#include "shm_protocol/doorbell.hpp"
#include "shm_protocol/fd_passing.hpp"
#include "sigverify/shm_protocol/segment_access.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"

namespace sigverify::test {

inline std::size_t count_entries(const std::string& dir) {
    std::size_t n = 0;
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') ++n;
        closedir(d);
    }
    return n;
}

inline std::size_t daemon_fds(const DaemonProcess& d) { return count_entries("/proc/" + std::to_string(d.pid()) + "/fd"); }

inline std::size_t log_lines(const DaemonProcess& d) { return DaemonProcess::count(d.log(), "\n"); }

inline std::uint64_t counter(const DaemonProcess& d, const std::string& name) {
    return nlohmann::json::parse(stats_command(d.dir(), "stats json"))["counters"][name].get<std::uint64_t>();
}

template <class F>
inline bool eventually(F&& f, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!f()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

}  // namespace sigverify::test
