// SPDX-License-Identifier: MIT
// sigverify stats [stats|clients|backends|version|help] [--json]
//   one command over sigverifyd's stats socket, answer on stdout
// sigverify top [--interval S] [--iterations N | --once]
//   a live view: rows/s per table, batch latency p50/p99 (from the histogram),
//   clients and backends; q or Ctrl-C quits and restores the terminal.
#include "client/cli/stats_commands.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "client/cli/cli_common.hpp"

namespace sigverify::cli {
namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr std::size_t kMaxAnswer = 64u << 20;

struct StatsArgs {
    std::string runtime_dir;
    std::string what = "stats";
    bool json = false;
};

struct TopArgs {
    std::string runtime_dir;
    double interval = 1.0;
    unsigned iterations = 0;  // 0 = until q / Ctrl-C
    bool once = false;
};

StatsArgs g_stats;
TopArgs g_top;
CLI::App* g_stats_cmd = nullptr;
CLI::App* g_top_cmd = nullptr;

std::string runtime_dir_or_default(const std::string& dir) {
    if (!dir.empty()) return dir;
    if (const char* env = std::getenv("SIGVERIFY_RUNTIME_DIR"); env != nullptr && *env != '\0') return env;
    return "/run/sigverifyd";
}

int run_stats(const StatsArgs& a) {
    std::string command = a.what;
    if (a.json) {
        if (command != "stats") {
            std::fprintf(stderr, "sigverify stats: --json applies to 'stats' only\n");
            return int(ExitCode::usage);
        }
        command = "stats json";
    }
    const std::string answer = stats_request(a.runtime_dir, command);
    if (answer.rfind("error:", 0) == 0) {
        // The daemon's refusal or complaint, as it wrote it.
        std::fprintf(stderr, "sigverify stats: sigverifyd answered: %s", answer.c_str());
        if (answer.back() != '\n') std::fputc('\n', stderr);
        return int(ExitCode::daemon);
    }
    std::fwrite(answer.data(), 1, answer.size(), stdout);
    return int(ExitCode::ok);
}

// ---------------------------------------------------------------------------
// top
// ---------------------------------------------------------------------------
volatile sig_atomic_t g_quit = 0;
void on_signal(int) { g_quit = 1; }

// Raw keyboard input and the alternate screen while top runs on a terminal;
// the destructor (and the signal path, through g_quit) restores everything.
class Terminal {
public:
    Terminal() : tty_(isatty(STDOUT_FILENO) != 0), in_tty_(isatty(STDIN_FILENO) != 0) {
        if (in_tty_ && tcgetattr(STDIN_FILENO, &saved_) == 0) {
            termios raw = saved_;
            raw.c_lflag &= ~tcflag_t(ICANON | ECHO);
            raw.c_cc[VMIN] = 0;
            raw.c_cc[VTIME] = 0;
            raw_ = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
        }
        if (tty_) std::fputs("\033[?1049h\033[?25l", stdout);
    }
    ~Terminal() {
        if (tty_) std::fputs("\033[?25h\033[?1049l", stdout);
        std::fflush(stdout);
        if (raw_) tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
    }
    Terminal(const Terminal&) = delete;
    Terminal& operator=(const Terminal&) = delete;
    bool tty() const { return tty_; }
    // Waits up to `t` for a key; true when q/Q/Ctrl-C arrived (or a signal).
    bool wait_quit(std::chrono::milliseconds t) const {
        const auto deadline = Clock::now() + t;
        while (!g_quit) {
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
            if (left <= 0) return false;
            if (!in_tty_) {
                // Not a terminal (tests, pipes): only signals end the wait.
                poll(nullptr, 0, int(std::min<long long>(left, 100)));
                continue;
            }
            pollfd p{STDIN_FILENO, POLLIN, 0};
            const int r = poll(&p, 1, int(std::min<long long>(left, 100)));
            if (r > 0 && (p.revents & POLLIN)) {
                char c = 0;
                if (read(STDIN_FILENO, &c, 1) == 1 && (c == 'q' || c == 'Q' || c == 3)) return true;
            }
        }
        return true;
    }

private:
    bool tty_;
    bool in_tty_;
    bool raw_ = false;
    termios saved_{};
};

struct Sample {
    Clock::time_point at;
    json j;
};

std::uint64_t u64(const json& j, const char* key) {
    const auto it = j.find(key);
    return it != j.end() && it->is_number() ? it->get<std::uint64_t>() : 0;
}

// Quantile q of the latency histogram difference cur - prev (cumulative
// buckets), interpolated linearly inside the bucket like PromQL's
// histogram_quantile. Negative when there were no batches.
double quantile(const json& cur, const json* prev, double q, bool& overflow) {
    overflow = false;
    const json& cb = cur["batch_latency_seconds"]["buckets"];
    std::vector<double> bounds;
    std::vector<double> counts;
    for (std::size_t i = 0; i < cb.size(); ++i) {
        double c = cb[i]["count"].get<double>();
        if (prev != nullptr) c -= (*prev)["batch_latency_seconds"]["buckets"][i]["count"].get<double>();
        counts.push_back(c);
        bounds.push_back(cb[i]["le"].is_number() ? cb[i]["le"].get<double>() : INFINITY);
    }
    if (counts.empty() || counts.back() <= 0) return -1;
    const double rank = q * counts.back();
    double lower = 0, below = 0;
    for (std::size_t i = 0; i < counts.size(); ++i) {
        if (counts[i] >= rank) {
            if (std::isinf(bounds[i])) {
                overflow = true;
                return lower;
            }
            const double in_bucket = counts[i] - below;
            const double frac = in_bucket > 0 ? (rank - below) / in_bucket : 1.0;
            return lower + (bounds[i] - lower) * std::clamp(frac, 0.0, 1.0);
        }
        lower = bounds[i];
        below = counts[i];
    }
    return lower;
}

std::string fmt_seconds(double s, bool overflow) {
    char buf[32];
    if (s < 0) return "-";
    if (s < 1e-3) std::snprintf(buf, sizeof buf, "%s%.0f us", overflow ? ">" : "", s * 1e6);
    else if (s < 1.0) std::snprintf(buf, sizeof buf, "%s%.2f ms", overflow ? ">" : "", s * 1e3);
    else std::snprintf(buf, sizeof buf, "%s%.2f s", overflow ? ">" : "", s);
    return buf;
}

std::string fmt_count(double v) {
    char buf[32];
    if (v >= 1e9) std::snprintf(buf, sizeof buf, "%.2fG", v / 1e9);
    else if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
    else if (v >= 1e4) std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
    else if (v >= 100 || v == 0) std::snprintf(buf, sizeof buf, "%.0f", v);
    else std::snprintf(buf, sizeof buf, "%.1f", v);  // e.g. 0.5 batches/s
    return buf;
}

std::string fmt_uptime(double s) {
    const long long t = (long long)s;
    char buf[48];
    if (t >= 86400) std::snprintf(buf, sizeof buf, "%lldd%02lldh%02lldm", t / 86400, t / 3600 % 24, t / 60 % 60);
    else std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", t / 3600, t / 60 % 60, t % 60);
    return buf;
}

std::string render_top(const Sample& cur, const Sample* prev, double refresh) {
    const json& j = cur.j;
    const json* pj = prev != nullptr ? &prev->j : nullptr;
    const double dt = prev != nullptr ? std::chrono::duration<double>(cur.at - prev->at).count() : 0.0;
    std::string out;
    char line[512];
    const json& g = j["gauges"];
    const json& c = j["counters"];
    std::snprintf(line, sizeof line, "sigverifyd %s  epoch %s  up %s  refresh %.1fs  (q or Ctrl-C quits)\n",
                  j["version"].get<std::string>().c_str(), j["epoch"].get<std::string>().c_str(),
                  fmt_uptime(j["uptime_seconds"].get<double>()).c_str(), refresh);
    out += line;
    std::snprintf(line, sizeof line,
                  "clients %llu/%llu  queue %llu  ring %llu/%llu  refused %llu  protocol errors %llu  cpu fallbacks "
                  "%llu  gpu errors %llu  gpu mismatches %llu\n",
                  (unsigned long long)u64(g, "clients_connected"), (unsigned long long)u64(g, "clients_max"),
                  (unsigned long long)u64(g, "queue_depth"), (unsigned long long)u64(g, "ring_in_flight"),
                  (unsigned long long)u64(g, "ring_capacity"), (unsigned long long)u64(c, "connections_refused"),
                  (unsigned long long)u64(c, "protocol_errors"), (unsigned long long)u64(c, "cpu_fallback_chunks"),
                  (unsigned long long)u64(c, "gpu_errors"), (unsigned long long)u64(c, "gpu_crosscheck_mismatches"));
    out += line;
    bool o50 = false, o99 = false, a50 = false, a99 = false;
    const double p50 = pj != nullptr ? quantile(j, pj, 0.50, o50) : -1;
    const double p99 = pj != nullptr ? quantile(j, pj, 0.99, o99) : -1;
    const double all50 = quantile(j, nullptr, 0.50, a50);
    const double all99 = quantile(j, nullptr, 0.99, a99);
    std::snprintf(line, sizeof line, "batch latency  last %.1fs: p50 %s  p99 %s    since start: p50 %s  p99 %s\n\n",
                  dt, fmt_seconds(p50, o50).c_str(), fmt_seconds(p99, o99).c_str(), fmt_seconds(all50, a50).c_str(),
                  fmt_seconds(all99, a99).c_str());
    out += line;

    std::snprintf(line, sizeof line, "%-12s %12s %12s %12s %10s %14s %14s\n", "TABLE", "ROWS/S", "VALID/S",
                  "INVALID/S", "BATCHES/S", "ROWS", "INVALID");
    out += line;
    double sum_rate = 0, sum_valid = 0, sum_invalid = 0, sum_batches = 0;
    std::uint64_t sum_rows = 0, sum_inv_total = 0;
    for (auto it = j["tables"].begin(); it != j["tables"].end(); ++it) {
        const json& t = it.value();
        const std::uint64_t valid = u64(t, "valid"), invalid = u64(t, "invalid");
        const std::uint64_t batches = u64(t, "batches") + u64(t, "batches_failed");
        double rv = 0, ri = 0, rb = 0;
        if (pj != nullptr && dt > 0) {
            const json& pt = (*pj)["tables"][it.key()];
            rv = double(valid - u64(pt, "valid")) / dt;
            ri = double(invalid - u64(pt, "invalid")) / dt;
            rb = double(batches - u64(pt, "batches") - u64(pt, "batches_failed")) / dt;
        }
        if (it.key() == "unspecified" && valid + invalid == 0) continue;
        std::snprintf(line, sizeof line, "%-12s %12s %12s %12s %10s %14llu %14llu\n", it.key().c_str(),
                      fmt_count(rv + ri).c_str(), fmt_count(rv).c_str(), fmt_count(ri).c_str(), fmt_count(rb).c_str(),
                      (unsigned long long)(valid + invalid), (unsigned long long)invalid);
        out += line;
        sum_rate += rv + ri;
        sum_valid += rv;
        sum_invalid += ri;
        sum_batches += rb;
        sum_rows += valid + invalid;
        sum_inv_total += invalid;
    }
    std::snprintf(line, sizeof line, "%-12s %12s %12s %12s %10s %14llu %14llu\n\n", "total", fmt_count(sum_rate).c_str(),
                  fmt_count(sum_valid).c_str(), fmt_count(sum_invalid).c_str(), fmt_count(sum_batches).c_str(),
                  (unsigned long long)sum_rows, (unsigned long long)sum_inv_total);
    out += line;

    std::snprintf(line, sizeof line, "%-6s %-8s %-6s %-22s %10s %14s %9s\n", "CLIENT", "PID", "UID", "NAME", "BATCHES",
                  "ROWS", "IN-FLIGHT");
    out += line;
    for (const json& cl : j["clients"]) {
        std::snprintf(line, sizeof line, "%-6llu %-8lld %-6llu %-22.22s %10llu %14llu %9llu\n",
                      (unsigned long long)u64(cl, "id"), (long long)cl["pid"].get<std::int64_t>(),
                      (unsigned long long)u64(cl, "uid"), cl["name"].get<std::string>().c_str(),
                      (unsigned long long)u64(cl, "batches"), (unsigned long long)u64(cl, "rows"),
                      (unsigned long long)u64(cl, "in_flight"));
        out += line;
    }
    if (j["clients"].empty()) out += "(no clients connected)\n";
    out += "\n";
    std::snprintf(line, sizeof line, "%-8s %-5s %7s %-16s %10s %11s %7s  %s\n", "BACKEND", "KIND", "WORKERS", "DEVICE",
                  "MEMORY", "MISMATCHES", "ERRORS", "SELF-TEST");
    out += line;
    for (const json& b : j["backends"]) {
        std::snprintf(line, sizeof line, "%-8s %-5s %7llu %-16.16s %10s %11llu %7llu  %s\n",
                      b["name"].get<std::string>().c_str(), b["kind"].get<std::string>().c_str(),
                      (unsigned long long)u64(b, "workers"), b["device"].get<std::string>().c_str(),
                      u64(b, "memory_bytes") ? fmt_count(double(u64(b, "memory_bytes"))).c_str() : "-",
                      (unsigned long long)u64(b, "crosscheck_mismatches"), (unsigned long long)u64(b, "errors"),
                      b["self_test"].get<std::string>().c_str());
        out += line;
    }
    return out;
}

Sample take_sample(const std::string& dir) {
    Sample s;
    const std::string answer = stats_request(dir, "stats json");
    s.at = Clock::now();
    if (answer.rfind("error:", 0) == 0) throw DaemonError("stats socket: " + answer.substr(0, answer.find('\n')));
    try {
        s.j = json::parse(answer);
    } catch (const json::exception& e) {
        throw DaemonError(std::string("stats socket: unreadable JSON: ") + e.what());
    }
    return s;
}

int run_top(const TopArgs& a) {
    const unsigned frames = a.once ? 1 : a.iterations;  // 0 = until quit
    struct sigaction sa{};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;  // no SA_RESTART: poll returns at once
    struct sigaction old_int{}, old_term{};
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int rc = int(ExitCode::ok);
    {
        Sample prev = take_sample(a.runtime_dir);  // before the screen switch: errors print plainly
        Terminal term;
        const auto period = std::chrono::milliseconds(static_cast<long long>(a.interval * 1000));
        for (unsigned n = 0; frames == 0 || n < frames; ++n) {
            if (term.wait_quit(period)) break;
            Sample cur;
            try {
                cur = take_sample(a.runtime_dir);
            } catch (const DaemonError& e) {
                if (term.tty()) std::fputs("\033[H\033[2J", stdout);
                std::printf("%s\n", e.what());
                std::fflush(stdout);
                rc = int(ExitCode::daemon);
                break;
            }
            const std::string frame = render_top(cur, &prev, a.interval);
            if (term.tty()) std::fputs("\033[H\033[2J", stdout);
            else if (n > 0) std::fputs("\n", stdout);
            std::fwrite(frame.data(), 1, frame.size(), stdout);
            std::fflush(stdout);
            prev = std::move(cur);
        }
    }
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    return rc;
}

}  // namespace

std::string stats_request(const std::string& runtime_dir, const std::string& command,
                          std::chrono::milliseconds timeout) {
    const std::string path = runtime_dir_or_default(runtime_dir) + "/stats.sock";
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) throw DaemonError("stats socket path too long: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw DaemonError(std::string("socket: ") + std::strerror(errno));
    timeval tv{};
    tv.tv_sec = time_t(timeout.count() / 1000);
    tv.tv_usec = suseconds_t(timeout.count() % 1000 * 1000);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        close(fd);
        throw DaemonError("cannot connect to " + path + ": " + std::strerror(err) +
                          (err == EACCES ? " (are you in sigverifyd's group?)"
                           : err == ENOENT || err == ECONNREFUSED ? " (is sigverifyd running?)"
                                                                  : ""));
    }
    const std::string line = command + "\n";
    // A refusing daemon writes its reason and closes at once, so the send may
    // fail (EPIPE): the reason is still waiting to be read, and is what the
    // user needs to see, so read it before reporting the send error.
    int send_error = 0;
    if (send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size()))
        send_error = errno == 0 ? EPIPE : errno;
    shutdown(fd, SHUT_WR);
    if (send_error != 0) {
        std::string reason;
        char buf[4096];
        for (;;) {
            const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n > 0 && reason.size() < 65536) {
                reason.append(buf, std::size_t(n));
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            break;
        }
        close(fd);
        if (reason.rfind("error:", 0) == 0) return reason;
        throw DaemonError("stats socket: cannot send the command: " + std::string(std::strerror(send_error)));
    }
    std::string out;
    const auto deadline = Clock::now() + timeout;
    char buf[65536];
    for (;;) {
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n > 0) {
            out.append(buf, std::size_t(n));
            if (out.size() > kMaxAnswer) break;
        } else if (n == 0 || (errno == ECONNRESET && !out.empty())) {
            break;
        } else if (errno != EINTR || Clock::now() >= deadline) {
            const int err = errno;
            close(fd);
            throw DaemonError("stats socket: " + std::string(err == EAGAIN || err == EWOULDBLOCK
                                                                 ? "no answer within the timeout"
                                                                 : std::strerror(err)));
        }
        if (Clock::now() >= deadline) {
            close(fd);
            throw DaemonError("stats socket: no complete answer within the timeout");
        }
    }
    close(fd);
    return out;
}

void add_stats_subcommands(CLI::App& app) {
    g_stats_cmd = app.add_subcommand("stats", "Print sigverifyd's metrics (Prometheus text, or JSON) or a listing");
    g_stats_cmd->add_option("what", g_stats.what, "stats (default), clients, backends, version or help")
        ->check(CLI::IsMember({"stats", "clients", "backends", "version", "help"}));
    g_stats_cmd->add_flag("--json", g_stats.json, "The metrics, clients and backends as one JSON object");
    g_stats_cmd->add_option("--runtime-dir", g_stats.runtime_dir,
                            "sigverifyd runtime directory (default $SIGVERIFY_RUNTIME_DIR or /run/sigverifyd)");

    g_top_cmd = app.add_subcommand("top", "Live view of sigverifyd: rows/s per table, latency p50/p99, clients, "
                                          "backends (q or Ctrl-C quits)");
    g_top_cmd->add_option("--runtime-dir", g_top.runtime_dir,
                          "sigverifyd runtime directory (default $SIGVERIFY_RUNTIME_DIR or /run/sigverifyd)");
    g_top_cmd->add_option("--interval", g_top.interval, "Seconds between refreshes")
        ->check(CLI::Range(0.05, 3600.0))->capture_default_str();
    g_top_cmd->add_option("--iterations", g_top.iterations, "Refreshes before exiting (0 = until q / Ctrl-C)")
        ->capture_default_str();
    g_top_cmd->add_flag("--once", g_top.once, "One refresh (one interval of rates), then exit");
}

int run_stats_subcommand() {
    if (g_stats_cmd != nullptr && *g_stats_cmd) return run_stats(g_stats);
    if (g_top_cmd != nullptr && *g_top_cmd) return run_top(g_top);
    return -1;
}

}  // namespace sigverify::cli
