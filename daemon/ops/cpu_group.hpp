// SPDX-License-Identifier: MIT
// Whether the kernel weighs this process as a CPU group of its own.
//
// The bulk workers of a GPU daemon run SCHED_IDLE (daemon/schedule/scheduler.hpp,
// "Lane workers"): inside their scheduling group every waking thread of normal
// policy preempts them, and while such threads keep the cores busy they get
// almost nothing. That is what the daemon wants of its own threads (a node's
// small batch first), and harmful when other processes share the group: a
// busy neighbour in the same group (another test of a parallel test run, a
// node started from the same script) would starve bulk verification (a watchdog
// test's repair, 1.3 s alone, took 54 s beside a parallel test). So SCHED_IDLE
// is used only when the group holds this process alone:
//   * a cgroup with the cpu controller (cgroup v2: one with a cpu.weight file,
//     a container's too; v1: the cpu hierarchy) whose cgroup.procs is this
//     process only: the systemd unit (CPUWeight= set) gives it one;
//   * or, in the root CPU cgroup, the kernel's autogroup of a session no
//     other process is in (kernel.sched_autogroup_enabled=1; every /proc
//     entry's session read): the daemon after it daemonized, `setsid
//     sigverifyd --foreground`.
// Anything unreadable counts as shared (the bulk workers then take nice 10),
// and so does a container's cgroup that holds other processes. Not told
// apart: a v1 cpu hierarchy seen from inside a cgroup namespace ("/": taken
// as the root, where autogroups apply).
#pragma once

#include <string>

namespace sigverify::daemon {

struct CpuGroup {
    bool own = false;     // this process alone in its CPU scheduling group
    std::string reason;   // which group, or why it is taken as shared (for the log)
};

CpuGroup own_cpu_group();

}  // namespace sigverify::daemon
