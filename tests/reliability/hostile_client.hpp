// SPDX-License-Identifier: MIT
// Hand-written protocol clients and probes for the hostile-client tests
// (test_hostile.cpp, test_admission.cpp, test_guard.cpp, test_reliability.cpp):
// the raw session of raw_session.hpp (it can stop at any step of the
// handshake), the daemon's descriptors, log lines and counters.
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
#include "support/eventually.hpp"
#include "support/proc_probes.hpp"

namespace sigverify::test {

inline std::size_t daemon_fds(const DaemonProcess& d) { return count_entries("/proc/" + std::to_string(d.pid()) + "/fd"); }

inline std::size_t log_lines(const DaemonProcess& d) { return DaemonProcess::count(d.log(), "\n"); }

inline std::uint64_t counter(const DaemonProcess& d, const std::string& name) { return stats_counter(d.dir(), name); }

}  // namespace sigverify::test
