// SPDX-License-Identifier: MIT
// Test fixture: a real sigverifyd process in a temporary runtime directory,
// and helpers for tests that run processes.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "client/cli/daemon_process.hpp"
#include "sigverify/client.hpp"

extern char** environ;

namespace sigverify::test {

#ifndef SIGVERIFYD_BIN
#error "SIGVERIFYD_BIN must name the sigverifyd binary"
#endif

inline std::string make_temp_dir() {
    char tmpl[] = "/tmp/sigverifyd-test-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    return tmpl;
}

inline void remove_tree(const std::string& dir) {
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
            const std::string n = e->d_name;
            if (n == "." || n == "..") continue;
            unlink((dir + "/" + n).c_str());
        }
        closedir(d);
    }
    rmdir(dir.c_str());
}

// sigverifyd with extra arguments in a new temporary runtime directory (or
// `dir`), removed with it; the shared implementation is
// client/cli/daemon_process.hpp (also `sigverify bench --start-daemon`).
// Without a --backend (or --config) among them the daemon runs `--backend cpu`:
// AUTO's pick depends on the machine (the lanes on an IFMA CPU, a GPU where
// one is usable), and the cases that time a batch against a kill or a cancel
// assume libsecp256k1's speed. AUTO is tested where it is named.
class DaemonProcess : public cli::DaemonProcess {
public:
    explicit DaemonProcess(std::vector<std::string> extra = {}, std::string dir = {})
        : cli::DaemonProcess(options(std::move(extra), std::move(dir))) {}

private:
    static bool names_backend(const std::vector<std::string>& args) {
        for (const std::string& a : args)
            if (a == "--backend" || a.rfind("--backend=", 0) == 0 || a == "--config" || a.rfind("--config=", 0) == 0)
                return true;
        return false;
    }
    static cli::DaemonProcessOptions options(std::vector<std::string> extra, std::string dir) {
        if (!names_backend(extra)) extra.insert(extra.end(), {"--backend", "cpu"});
        cli::DaemonProcessOptions o;
        o.binary = SIGVERIFYD_BIN;
        o.args = std::move(extra);
        o.runtime_dir = std::move(dir);
        o.temp_template = "/tmp/sigverifyd-test-XXXXXX";
        return o;
    }
};

// Options of a client of d called `name` (the name its log lines and stats
// give the client); the other options keep the library's defaults.
inline ClientOptions options_for(const DaemonProcess& d, const std::string& name) {
    ClientOptions o;
    o.runtime_dir = d.dir();
    o.name = name;
    return o;
}

// The backend of the suites' GPU-path cases: host-kernel with the given
// --gpus, or (SIGVERIFY_TEST_BACKEND=lanes, the *_lanes ctest entries) the
// CPU lanes in the GPU's place, behind the same checks (issue 42).
inline bool test_on_lanes() {
    const char* b = std::getenv("SIGVERIFY_TEST_BACKEND");
    return b != nullptr && std::string(b) == "lanes";
}
inline std::vector<std::string> gpu_path_args(const std::string& gpus) {
    if (test_on_lanes()) return {"--backend", "lanes"};
    return {"--backend", "host-kernel", "--gpus", gpus};
}
// The metrics' name of the one device of such a daemon: "gpu0" or the lanes' ("lanes-ifma8").
inline std::string gpu_path_device(const std::string& stats_backends) {
    if (!test_on_lanes()) return "gpu0";
    const std::size_t at = stats_backends.find("backend=lanes-");
    return at == std::string::npos ? "lanes?" : stats_backends.substr(at + 8, stats_backends.find(' ', at) - at - 8);
}

// Entries of /dev/shm created by the daemons d started (must always be none).
// Only theirs: other tests, fuzzers or daemons on the host create segments of
// their own at the same time (the names carry the creating daemon's pid).
inline std::vector<std::string> leftover_segments(const DaemonProcess& d) {
    std::vector<std::string> out;
    if (DIR* dir = opendir("/dev/shm")) {
        while (dirent* e = readdir(dir)) {
            const std::string n = e->d_name;
            for (pid_t pid : d.started())
                if (n.rfind("sigverifyd." + std::to_string(pid) + ".", 0) == 0) out.push_back(n);
        }
        closedir(dir);
    }
    return out;
}

// Runs fn in a forked child; returns its exit status (0 = fn returned true).
template <class F>
int run_in_child(F&& fn) {
    const pid_t pid = fork();
    if (pid == 0) {
        bool ok = false;
        try {
            ok = fn();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "child exception: %s\n", e.what());
        }
        std::fflush(stderr);
        _exit(ok ? 0 : 1);
    }
    return pid;
}

inline int wait_child(pid_t pid) {
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

}  // namespace sigverify::test
