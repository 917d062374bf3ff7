// SPDX-License-Identifier: MIT
#include "daemon/ops/cpu_group.hpp"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>

#include <fstream>
#include <sstream>

namespace sigverify::daemon {

namespace {

std::string read_file(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// Whether dir/cgroup.procs lists this process and nothing else.
bool procs_only_self(const std::string& dir) {
    std::ifstream f(dir + "/cgroup.procs");
    if (!f) return false;
    const std::string self = std::to_string(getpid());
    bool seen = false;
    for (std::string line; std::getline(f, line);) {
        if (line.empty()) continue;
        if (line != self) return false;
        seen = true;
    }
    return seen;
}

// Whether no other process we can see is in this process's session (whose
// autogroup it is in): it leads a session of its own, or its session's leader
// is gone (it daemonized: setsid, then fork).
bool session_only_self() {
    const pid_t session = getsid(0), self = getpid();
    if (session < 0) return false;
    DIR* proc = opendir("/proc");
    if (proc == nullptr) return false;
    bool alone = true;
    while (dirent* e = readdir(proc)) {
        char* end = nullptr;
        const long pid = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end != '\0' || pid == self) continue;
        // stat: "pid (comm) state ppid pgrp session ...": comm may hold anything but ')'.
        const std::string stat = read_file(std::string("/proc/") + e->d_name + "/stat");
        const auto close = stat.rfind(')');
        if (close == std::string::npos) continue;  // it just ended
        std::istringstream rest(stat.substr(close + 1));
        std::string state, ppid, pgrp;
        long sid = -1;
        // A zombie runs nothing (the session's leader that daemonize() left behind).
        if (rest >> state >> ppid >> pgrp >> sid && sid == session && state != "Z" && state != "X") {
            alone = false;
            break;
        }
    }
    closedir(proc);
    return alone;
}

}  // namespace

CpuGroup own_cpu_group() {
    // /proc/self/cgroup: "0::/path" (v2) and "N:controllers:/path" (v1).
    std::string v2_path, v1_cpu_path, v1_controllers;
    {
        std::istringstream lines(read_file("/proc/self/cgroup"));
        for (std::string line; std::getline(lines, line);) {
            const auto a = line.find(':'), b = line.find(':', a + 1);
            if (a == std::string::npos || b == std::string::npos) continue;
            const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
            if (line.compare(0, a, "0") == 0 && controllers.empty()) v2_path = path;
            std::istringstream names(controllers);
            for (std::string n; std::getline(names, n, ',');)
                if (n == "cpu") {
                    v1_cpu_path = path;
                    v1_controllers = controllers;
                }
        }
    }
    if (!v1_controllers.empty() && v1_cpu_path != "/") {
        const std::string dir = "/sys/fs/cgroup/" + v1_controllers + v1_cpu_path;
        if (procs_only_self(dir)) return {true, "cpu cgroup " + v1_cpu_path + " (v1)"};
        return {false, "cpu cgroup " + v1_cpu_path + " (v1) holds other processes"};
    }
    if (v1_controllers.empty() && !v2_path.empty()) {
        // cpu.weight exists in every cgroup with the cpu controller but the
        // root: also in a container's, whose path reads "/" from inside its
        // cgroup namespace. Without it the process is in the root CPU group,
        // where autogroups apply.
        const std::string dir = "/sys/fs/cgroup" + (v2_path == "/" ? std::string() : v2_path);
        if (access((dir + "/cpu.weight").c_str(), F_OK) == 0) {
            if (procs_only_self(dir)) return {true, "cgroup " + v2_path};
            return {false, "cgroup " + v2_path + " holds other processes"};
        }
    }
    if (read_file("/proc/sys/kernel/sched_autogroup_enabled").rfind('1', 0) != 0)
        return {false, "the root CPU group without autogroups"};
    if (!session_only_self()) return {false, "the autogroup of a session other processes share"};
    return {true, "the autogroup of its own session"};
}

}  // namespace sigverify::daemon
