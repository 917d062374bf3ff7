// Test fixture: a real sigverifyd process in a temporary runtime directory.
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

// Entries of /dev/shm created by sigverifyd (must always be none).
inline std::vector<std::string> leftover_segments() {
    std::vector<std::string> out;
    if (DIR* d = opendir("/dev/shm")) {
        while (dirent* e = readdir(d)) {
            const std::string n = e->d_name;
            if (n.rfind("sigverifyd.", 0) == 0) out.push_back(n);
        }
        closedir(d);
    }
    return out;
}

class DaemonProcess {
public:
    explicit DaemonProcess(std::vector<std::string> extra = {}, std::string dir = {})
        : dir_(dir.empty() ? make_temp_dir() : std::move(dir)), own_dir_(true), extra_(std::move(extra)) {
        start();
    }
    ~DaemonProcess() {
        stop(SIGTERM);
        if (own_dir_) remove_tree(dir_);
    }
    DaemonProcess(const DaemonProcess&) = delete;
    DaemonProcess& operator=(const DaemonProcess&) = delete;

    const std::string& dir() const { return dir_; }
    std::string socket_path() const { return dir_ + "/sigverifyd.sock"; }
    pid_t pid() const { return pid_; }
    std::string log_path() const { return dir_ + "/daemon.log"; }

    void start() {
        const std::size_t started_before = count(log(), "listening on");
        std::vector<std::string> args = {SIGVERIFYD_BIN, "--foreground", "--runtime-dir", dir_,
                                         "--log-level", "info", "--log-file", log_path()};
        args.insert(args.end(), extra_.begin(), extra_.end());
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        if (posix_spawn(&pid_, SIGVERIFYD_BIN, nullptr, nullptr, argv.data(), environ) != 0)
            throw std::runtime_error("cannot spawn sigverifyd");
        // Wait for the "listening" log line (written after listen()); probing
        // with connections would occupy client slots.
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (std::chrono::steady_clock::now() < deadline) {
            if (count(log(), "listening on") > started_before) return;
            int status;
            if (waitpid(pid_, &status, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error("sigverifyd exited during startup: " + log());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        throw std::runtime_error("sigverifyd did not start listening");
    }

    static std::size_t count(const std::string& text, const std::string& what) {
        std::size_t n = 0;
        for (std::size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
        return n;
    }

    bool connectable() const {
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        const std::string p = socket_path();
        std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
        const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
        close(fd);
        return ok;
    }

    // Sends sig and waits; returns the wait status (or -1 if not running).
    int stop(int sig, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
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

    std::string log() const {
        std::string out;
        if (FILE* f = std::fopen(log_path().c_str(), "r")) {
            char buf[4096];
            std::size_t n;
            while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
            std::fclose(f);
        }
        return out;
    }

private:
    std::string dir_;
    bool own_dir_;
    std::vector<std::string> extra_;
    pid_t pid_ = -1;
};

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
