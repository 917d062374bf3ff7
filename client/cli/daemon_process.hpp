// SPDX-License-Identifier: MIT
// A sigverifyd child process in a private runtime directory, for
// `sigverify bench --start-daemon` and the tests (tests/daemon/daemon_fixture.hpp).
//
// start() spawns BINARY --foreground --runtime-dir DIR --log-level LEVEL
// --log-file DIR/daemon.log ARGS... and returns once the daemon has logged
// "listening on" (written after listen(); probing with connections would
// occupy client slots), or throws std::runtime_error when it exits first or
// does not get there within start_timeout. stop() signals it and reaps it.
// The destructor stops it (SIGTERM) and removes the runtime directory when
// remove_dir is set.
//
// Not thread-safe; a forked child must not let the destructor run (_exit).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

namespace sigverify::cli {

struct DaemonProcessOptions {
    std::string binary;                 // the sigverifyd executable
    std::vector<std::string> args;      // extra arguments (after the ones above)
    std::string runtime_dir;            // empty: a new directory from temp_template
    std::string temp_template = "/tmp/sigverifyd-XXXXXX";  // mkdtemp template
    bool remove_dir = true;             // remove the runtime directory (given or made) in the destructor
    std::string log_level = "info";     // "info" or "debug": start() waits for an info line
    // A session of its own (setsid), so that the kernel weighs it as one CPU
    // group (its autogroup), as systemd's unit does: the daemon then runs its
    // bulk workers SCHED_IDLE (daemon/ops/cpu_group.hpp). Off: it shares this
    // process's group, and a terminal's Ctrl-C reaches it.
    bool own_session = false;
    std::chrono::milliseconds start_timeout{10000};
    std::chrono::milliseconds stop_timeout{20000};  // the destructor's SIGTERM, then SIGKILL
};

class DaemonProcess {
public:
    DaemonProcess() = default;  // nothing started; start(options) later
    explicit DaemonProcess(DaemonProcessOptions options) { start(std::move(options)); }
    ~DaemonProcess();
    DaemonProcess(const DaemonProcess&) = delete;
    DaemonProcess& operator=(const DaemonProcess&) = delete;

    // Creates the runtime directory if needed and starts the daemon.
    void start(DaemonProcessOptions options);
    // Starts it again with the same options and directory (after stop()).
    void start();

    // Sends sig and waits at most limit: the wait status, -1 when not
    // running, -2 when it did not stop in time (then it is SIGKILLed).
    int stop(int sig, std::chrono::milliseconds limit);
    int stop(int sig);  // limit: stop_timeout
    int stop();         // SIGTERM

    const std::string& dir() const { return dir_; }
    std::string socket_path() const { return dir_ + "/sigverifyd.sock"; }
    std::string log_path() const { return dir_ + "/daemon.log"; }
    pid_t pid() const { return pid_; }
    // Every daemon process this object spawned, running or not (the names of
    // the shared segments a daemon creates carry its pid).
    const std::vector<pid_t>& started() const { return started_; }
    // The daemon's log so far.
    std::string log() const;
    // Whether the control socket accepts a connection now.
    bool connectable() const;
    // Occurrences of what in text.
    static std::size_t count(const std::string& text, const std::string& what);

private:
    DaemonProcessOptions options_;
    std::string dir_;
    pid_t pid_ = -1;
    std::vector<pid_t> started_;
};

}  // namespace sigverify::cli
