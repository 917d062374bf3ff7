// SPDX-License-Identifier: MIT
// Names of the daemon's threads, as `top -H`, `ps -L` and /proc/PID/task/TID/comm
// show them: "sv-worker-N" (bulk workers), "sv-lane-N" (lane workers,
// daemon/schedule/scheduler.hpp), "sv-session" (a client session's ring reader,
// daemon/serve/session.hpp). Linux keeps at most 15 bytes of a name.
#pragma once

#include <pthread.h>

#include <string>

namespace sigverify::daemon {

// Names the calling thread; a name past 15 bytes is cut. Best effort.
inline void name_this_thread(std::string name) {
    if (name.size() > 15) name.resize(15);
    (void)pthread_setname_np(pthread_self(), name.c_str());
}

}  // namespace sigverify::daemon
