// SPDX-License-Identifier: MIT
// Who runs ahead of whom inside the daemon (issue 29.6): the worker threads'
// names and scheduling, read from /proc of a real daemon.
//
// On a GPU daemon in a CPU group of its own (daemon/ops/cpu_group.hpp: here a
// session of its own, its autogroup) the bulk workers run SCHED_IDLE
// (daemon/schedule/scheduler.hpp "Lane workers"): a waking thread of normal policy — a
// session thread reading a node's batch, a lane worker taking it — preempts
// them at once,
// where with nice 10 it waited for the running bulk worker's slice (1-row
// p99 4.4-5.1 ms beside four bulk clients, 3.3-3.9 ms with SCHED_IDLE:
// docs/benchmarks-history.md §13). Lane workers and session threads keep the daemon's
// policy. Sharing its group (this test's session) it takes nice 10 instead:
// there SCHED_IDLE workers starved behind a parallel test (a 1.3 s repair
// took 54 s). Without lane workers (the CPU backend) every worker keeps it too,
// with --worker-nice on top. The names ("sv-lane-N", "sv-worker-N",
// "sv-session") are what an operator sees in `top -H`.
#include <catch2/catch.hpp>

#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/cli/daemon_process.hpp"
#include "sigverify/client.hpp"

using namespace sigverify;

namespace {

struct ThreadInfo {
    std::string name;
    int nice = 0;
    int policy = -1;
};

// Every thread of pid: its comm, nice (stat field 19) and policy (field 41).
std::vector<ThreadInfo> threads_of(pid_t pid) {
    std::vector<ThreadInfo> out;
    const std::string dir = "/proc/" + std::to_string(pid) + "/task";
    DIR* d = opendir(dir.c_str());
    REQUIRE(d != nullptr);
    while (dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream f(dir + "/" + e->d_name + "/stat");
        std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
        const auto open = stat.find('('), close = stat.rfind(')');
        if (open == std::string::npos || close == std::string::npos) continue;  // the thread just ended
        ThreadInfo t;
        t.name = stat.substr(open + 1, close - open - 1);
        std::istringstream rest(stat.substr(close + 2));
        std::vector<std::string> fields;  // fields 3 on
        for (std::string w; rest >> w;) fields.push_back(w);
        REQUIRE(fields.size() >= 39);
        t.nice = std::stoi(fields[19 - 3]);
        t.policy = std::stoi(fields[41 - 3]);
        out.push_back(t);
    }
    closedir(d);
    return out;
}

// The threads of pid once `workers` of them are named "sv-worker-N" or
// "sv-lane-N" and settled(thread) holds for each (workers name themselves,
// then set their policy and nice value, as they start: on a loaded machine
// that may be after the daemon logged "listening on"), or after 10 s.
template <class Settled>
std::vector<ThreadInfo> settled_threads_of(pid_t pid, int workers, Settled settled) {
    std::vector<ThreadInfo> all;
    for (int i = 0; i < 1000; ++i) {
        all = threads_of(pid);
        int ready = 0;
        for (const ThreadInfo& t : all)
            if ((t.name.rfind("sv-lane-", 0) == 0 || t.name.rfind("sv-worker-", 0) == 0) && settled(t)) ++ready;
        if (ready >= workers) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return all;
}

bool is_bulk(const ThreadInfo& t) { return t.name.rfind("sv-worker-", 0) == 0; }

// Threads whose name starts with prefix, by policy.
std::map<int, int> policies(const std::vector<ThreadInfo>& all, const std::string& prefix) {
    std::map<int, int> by_policy;
    for (const ThreadInfo& t : all)
        if (t.name.rfind(prefix, 0) == 0) ++by_policy[t.policy];
    return by_policy;
}

cli::DaemonProcessOptions daemon_options(std::string binary, std::vector<std::string> args, bool own_session) {
    cli::DaemonProcessOptions o;
    o.binary = std::move(binary);
    o.args = std::move(args);
    o.temp_template = "/tmp/sigverifyd-test-XXXXXX";
    o.own_session = own_session;
    return o;
}

const std::vector<std::string> kGpuArgs = {"--backend", "host-kernel", "--gpus",     "0",
                                           "--cpu-threads", "8",       "--gpu-split", "off"};

// Whether the kernel would give a session of its own a CPU group of its own
// here (daemon/ops/cpu_group.hpp): autogroups on, and this process in the root
// CPU cgroup (as in CI's container and on this VM).
bool autogroups_apply() {
    std::ifstream f("/proc/sys/kernel/sched_autogroup_enabled");
    std::string on;
    f >> on;
    if (on != "1") return false;
    std::ifstream cg("/proc/self/cgroup");
    bool v1_cpu = false;
    std::string v2_path;
    for (std::string line; std::getline(cg, line);) {
        const auto a = line.find(':'), b = line.find(':', a + 1);
        const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
        if (controllers.empty()) v2_path = path;
        if (("," + controllers + ",").find(",cpu,") != std::string::npos) {
            v1_cpu = true;
            if (path != "/") return false;
        }
    }
    // cgroup v2: a cgroup with the cpu controller (a container's too) has cpu.weight.
    if (!v1_cpu && !v2_path.empty())
        return !std::ifstream("/sys/fs/cgroup" + (v2_path == "/" ? std::string() : v2_path) + "/cpu.weight");
    return true;
}

}  // namespace

TEST_CASE("GPU daemon in a CPU group of its own: bulk workers run SCHED_IDLE, lane workers and session threads do not",
          "[daemon][priority]") {
    if (!autogroups_apply()) {
        WARN("skipped: a session of its own is no CPU group of its own here");
        return;
    }
    cli::DaemonProcess d(daemon_options(SIGVERIFYD_SLEEPING_BIN, kGpuArgs, true));
    // A connected client has its session thread.
    ClientOptions o;
    o.runtime_dir = d.dir();
    auto c = Client::connect(o);
    REQUIRE(c->connected());
    const auto all =
        settled_threads_of(d.pid(), 10, [](const ThreadInfo& t) { return !is_bulk(t) || t.policy == SCHED_IDLE; });
    std::string names;  // shown when a check fails
    for (const ThreadInfo& t : all) names += t.name + ":" + std::to_string(t.policy) + " ";
    INFO(names);
    // The eight workers of --cpu-threads 8 and two lane workers (Scheduler::kLaneWorkers).
    CHECK(policies(all, "sv-lane-") == std::map<int, int>{{SCHED_OTHER, 2}});
    CHECK(policies(all, "sv-worker-") == std::map<int, int>{{SCHED_IDLE, 8}});
    CHECK(policies(all, "sv-session") == std::map<int, int>{{SCHED_OTHER, 1}});
    CHECK(d.log().find("bulk workers: SCHED_IDLE beside the lane workers (alone in the autogroup") != std::string::npos);
}

TEST_CASE("host-kernel daemon in a CPU group of its own: the call threads of bulk workers run SCHED_IDLE too",
          "[daemon][priority]") {
    // The host twin verifies in the deadline's call threads (deadline_backend.hpp).
    // Before they took their worker's scheduling they did the bulk work at
    // ordinary priority, beside the lane workers: a quiet 1-row batch's p50
    // beside one bulk client was 1.9 ms instead of 0.3 ms (BENCHMARKS §28).
    if (!autogroups_apply()) {
        WARN("skipped: a session of its own is no CPU group of its own here");
        return;
    }
    cli::DaemonProcess d(daemon_options(SIGVERIFYD_BIN,
                                        {"--backend", "host-kernel", "--gpus", "0", "--cpu-threads", "4",
                                         "--gpu-split", "off", "--gpu-min-rows", "1"},
                                        true));
    ClientOptions o;
    o.runtime_dir = d.dir();
    auto c = Client::connect(o);
    REQUIRE(c->connected());
    // Rows of zeros (r = 0: invalid at once) in batches the bulk workers take.
    std::vector<std::uint8_t> rows(20000 * wire::stride(wire::RecordKind::ecdsa, 0), 0), out(20000);
    const wire::RowSpan span{wire::RecordKind::ecdsa, 0, wire::SigEncoding::compact, rows.data(), 20000};
    for (int i = 0; i < 3; ++i) {
        const BatchResult r = c->run(span, wire::Mode::results, out.data());
        REQUIRE(r.ok());
        CHECK(r.invalid == 20000);
    }
    const auto all =
        settled_threads_of(d.pid(), 6, [](const ThreadInfo& t) { return !is_bulk(t) || t.policy == SCHED_IDLE; });
    std::string names;  // shown when a check fails
    for (const ThreadInfo& t : all) names += t.name + ":" + std::to_string(t.policy) + " ";
    INFO(names);
    const auto calls = policies(all, "sv-gpu-call");
    CHECK(calls.count(SCHED_IDLE) != 0);  // those that served bulk workers
    CHECK(policies(all, "sv-worker-") == std::map<int, int>{{SCHED_IDLE, 4}});
    CHECK(policies(all, "sv-lane-") == std::map<int, int>{{SCHED_OTHER, 2}});
}

TEST_CASE("GPU daemon sharing its CPU group: bulk workers take nice 10, not SCHED_IDLE", "[daemon][priority]") {
    // In this process's session (and CPU group) SCHED_IDLE bulk workers would
    // starve behind this process's and its other children's busy threads.
    cli::DaemonProcess d(daemon_options(SIGVERIFYD_SLEEPING_BIN, kGpuArgs, false));
    const int daemon_nice = getpriority(PRIO_PROCESS, 0);  // the daemon inherits this process's
    const auto all = settled_threads_of(d.pid(), 10, [&](const ThreadInfo& t) {
        return !is_bulk(t) || t.nice == std::min(19, daemon_nice + 10);
    });
    std::string names;  // shown when a check fails
    for (const ThreadInfo& t : all) names += t.name + ":" + std::to_string(t.policy) + "/" + std::to_string(t.nice) + " ";
    INFO(names);
    CHECK(policies(all, "sv-worker-") == std::map<int, int>{{SCHED_OTHER, 8}});
    CHECK(policies(all, "sv-lane-") == std::map<int, int>{{SCHED_OTHER, 2}});
    for (const ThreadInfo& t : all) {
        if (t.name.rfind("sv-worker-", 0) == 0) CHECK(t.nice == std::min(19, daemon_nice + 10));
        if (t.name.rfind("sv-lane-", 0) == 0) CHECK(t.nice == daemon_nice);
    }
    CHECK(d.log().find("bulk workers: nice +10") != std::string::npos);
}

TEST_CASE("CPU daemon: workers keep the daemon's policy, --worker-nice raises their nice value", "[daemon][priority]") {
    cli::DaemonProcess d(
        daemon_options(SIGVERIFYD_BIN, {"--backend", "cpu", "--cpu-threads", "3", "--worker-nice", "5"}, true));
    const int daemon_nice = getpriority(PRIO_PROCESS, 0);  // the daemon inherits this process's
    const auto all = settled_threads_of(d.pid(), 3, [&](const ThreadInfo& t) { return t.nice == std::min(19, daemon_nice + 5); });
    CHECK(policies(all, "sv-lane-").empty());
    CHECK(policies(all, "sv-worker-") == std::map<int, int>{{SCHED_OTHER, 3}});
    for (const ThreadInfo& t : all)
        if (t.name.rfind("sv-worker-", 0) == 0) CHECK(t.nice == std::min(19, daemon_nice + 5));
}

TEST_CASE("GPU daemon started without --foreground: its session's autogroup is its own", "[daemon][priority]") {
    // daemonize(): fork, setsid, fork: the daemon is alone in a session whose
    // leader has exited (a zombie until reaped, which runs nothing: counting
    // it, the daemon took nice 10 here).
    if (!autogroups_apply()) {
        WARN("skipped: a session of its own is no CPU group of its own here");
        return;
    }
    char tmpl[] = "/tmp/sigverifyd-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    const std::string dir = tmpl, log = dir + "/daemon.log";
    // sigverifyd itself (the sleeping GPU's test daemon runs in the foreground only).
    std::vector<std::string> args = {SIGVERIFYD_BIN, "--runtime-dir", dir, "--log-file", log};
    args.insert(args.end(), kGpuArgs.begin(), kGpuArgs.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t launcher = -1;
    REQUIRE(posix_spawn(&launcher, argv[0], nullptr, nullptr, argv.data(), environ) == 0);
    int status = 0;
    REQUIRE(waitpid(launcher, &status, 0) == launcher);
    CHECK(WIFEXITED(status));
    // The daemon: the process whose command line names this runtime directory.
    auto find_daemon = [&]() -> pid_t {
        DIR* proc = opendir("/proc");
        pid_t found = -1;
        while (dirent* e = proc != nullptr ? readdir(proc) : nullptr) {
            char* end = nullptr;
            const long pid = std::strtol(e->d_name, &end, 10);
            if (end == e->d_name || *end != '\0') continue;
            std::ifstream f(std::string("/proc/") + e->d_name + "/cmdline");
            std::string cmdline((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            if (cmdline.find(dir) != std::string::npos && cmdline.find("--foreground") == std::string::npos) found = pid;
        }
        if (proc != nullptr) closedir(proc);
        return found;
    };
    std::string text;
    for (int i = 0; i < 1000 && text.find("listening on") == std::string::npos; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        std::ifstream f(log);
        text.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
    }
    INFO(text);
    const pid_t daemon = find_daemon();
    REQUIRE(daemon > 0);
    CHECK(text.find("bulk workers: SCHED_IDLE beside the lane workers (alone in the autogroup") != std::string::npos);
    const auto all =
        settled_threads_of(daemon, 10, [](const ThreadInfo& t) { return !is_bulk(t) || t.policy == SCHED_IDLE; });
    CHECK(policies(all, "sv-worker-") == std::map<int, int>{{SCHED_IDLE, 8}});
    kill(daemon, SIGTERM);
    for (int i = 0; i < 2000 && kill(daemon, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(kill(daemon, 0) != 0);
    std::filesystem::remove_all(dir);
}
