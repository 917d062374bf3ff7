// SPDX-License-Identifier: MIT
// A sigverifyd child process (see daemon_process.hpp).
#include "client/cli/daemon_process.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace sigverify::cli {

DaemonProcess::~DaemonProcess() {
    stop(SIGTERM, options_.stop_timeout);
    if (options_.remove_dir && !dir_.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
}

void DaemonProcess::start(DaemonProcessOptions options) {
    if (pid_ > 0) throw std::runtime_error("sigverifyd is already running");
    options_ = std::move(options);
    dir_ = options_.runtime_dir;
    if (dir_.empty()) {
        std::vector<char> tmpl(options_.temp_template.begin(), options_.temp_template.end());
        tmpl.push_back('\0');
        if (mkdtemp(tmpl.data()) == nullptr)
            throw std::runtime_error(std::string("mkdtemp: ") + std::strerror(errno));
        dir_ = tmpl.data();
    }
    start();
}

void DaemonProcess::start() {
    if (pid_ > 0) throw std::runtime_error("sigverifyd is already running");
    const std::string& binary = options_.binary;
    const std::size_t started_before = count(log(), "listening on");
    std::vector<std::string> args = {binary,        "--foreground", "--runtime-dir", dir_, "--log-level",
                                     options_.log_level, "--log-file", log_path()};
    args.insert(args.end(), options_.args.begin(), options_.args.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    // posix_spawnp: a bare name is looked up in PATH.
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    if (options_.own_session) posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
    const int e = posix_spawnp(&pid_, binary.c_str(), nullptr, &attr, argv.data(), environ);
    posix_spawnattr_destroy(&attr);
    if (e != 0) {
        pid_ = -1;
        throw std::runtime_error("cannot spawn " + binary + ": " + std::strerror(e));
    }
    started_.push_back(pid_);
    const auto deadline = std::chrono::steady_clock::now() + options_.start_timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (count(log(), "listening on") > started_before) return;
        int status;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            throw std::runtime_error(binary + " exited during startup; log " + log_path() + ":\n" + log());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    throw std::runtime_error(binary + " did not start listening within " +
                             std::to_string(options_.start_timeout.count()) + " ms; log: " + log_path());
}

int DaemonProcess::stop(int sig, std::chrono::milliseconds limit) {
    if (pid_ <= 0) return -1;
    kill(pid_, sig);
    const auto deadline = std::chrono::steady_clock::now() + limit;
    int status = 0;
    for (;;) {
        const pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_) break;
        if (std::chrono::steady_clock::now() > deadline) {
            kill(pid_, SIGKILL);
            waitpid(pid_, &status, 0);
            pid_ = -1;
            return -2;  // did not stop in time
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pid_ = -1;
    return status;
}

int DaemonProcess::stop(int sig) { return stop(sig, options_.stop_timeout); }

int DaemonProcess::stop() { return stop(SIGTERM); }

std::string DaemonProcess::log() const {
    std::string out;
    if (dir_.empty()) return out;
    if (FILE* f = std::fopen(log_path().c_str(), "r")) {
        char buf[4096];
        std::size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
        std::fclose(f);
    }
    return out;
}

bool DaemonProcess::connectable() const {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string p = socket_path();
    if (p.size() >= sizeof addr.sun_path) return false;
    std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
    // Non-blocking: a full listen backlog (a stopped daemon) answers EAGAIN
    // at once (not connectable) instead of waiting for room without a bound.
    const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return false;
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    close(fd);
    return ok;
}

std::size_t DaemonProcess::count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
    return n;
}

}  // namespace sigverify::cli
