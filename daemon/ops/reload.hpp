// SPDX-License-Identifier: MIT
// What SIGHUP does with a re-read configuration: which changed keys the
// daemon applies while it runs, and which only a restart can apply (the
// sockets, the backend, the rings and arenas of connected clients).
#pragma once

#include <string>
#include <vector>

#include "daemon/ops/config.hpp"

namespace sigverify::daemon {

struct ReloadPlan {
    // "key old -> new" for each changed key applied at run time.
    std::vector<std::string> applied;
    // Names of the changed keys that need a restart.
    std::vector<std::string> need_restart;
};

// Compares the running configuration with a re-read one.
ReloadPlan plan_reload(const Config& running, const Config& reread);

// Copies the keys that apply at run time from `reread` into `running`
// (log-level, log-format, log-file, cross-check-sample,
// cross-check-invalid-sample, metrics-textfile, metrics-interval).
void apply_runtime_keys(Config& running, const Config& reread);

// One log line: "reloaded FILE: log-level info -> debug, ...; changes that
// need a restart: max-clients" (or "no changes").
std::string describe_reload(const std::string& file, const ReloadPlan& plan);

}  // namespace sigverify::daemon
