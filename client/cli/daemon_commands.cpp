// SPDX-License-Identifier: MIT
// The sigverifyd connection of the CLI (connect_daemon, used by `verify`,
// verify_command.cpp), `sigverify ping`: check that the daemon is up, and
// the hook of `sigverify info` (info_command.cpp).
#include "client/cli/cli_common.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "client/cli/info_command.hpp"
#include "client/cli/json_output.hpp"
#include "sigverify/client.hpp"

namespace sigverify::cli {
namespace {

struct PingArgs {
    std::string runtime_dir;
    unsigned count = 1;
    unsigned timeout_ms = 5000;  // each ping's bound: a stopped or hung daemon must not hold the command
    bool json = false;
};

PingArgs g_ping;
CLI::App* g_ping_cmd = nullptr;
InfoArgs g_info;
CLI::App* g_info_cmd = nullptr;

ClientOptions client_options(const std::string& runtime_dir, const char* name) {
    ClientOptions o;
    o.runtime_dir = runtime_dir;  // empty: $SIGVERIFY_RUNTIME_DIR, else /run/sigverifyd
    o.name = name;
    return o;
}

std::unique_ptr<Client> connect_or_report(const ClientOptions& o, const char* what, DaemonFailure* failure) {
    Status st = Status::ok;
    std::string msg;
    auto c = Client::connect(o, st, msg);
    if (!c) {
        std::fprintf(stderr, "sigverify %s: cannot use sigverifyd: %s\n", what, msg.c_str());
        if (failure != nullptr) *failure = DaemonFailure{st, "cannot use sigverifyd: " + msg};
    }
    return c;
}

// The failure of a ping: the message on stderr, and with --json the object on stdout.
int report_ping_failure(const PingArgs& a, const DaemonFailure& f) {
    if (a.json) print_json_line(daemon_failure_json("ping", f.status, f.message));
    return int(ExitCode::daemon);
}

int run_ping(const PingArgs& a) {
    DaemonFailure failure;
    ClientOptions o = client_options(a.runtime_dir, "sigverify-ping");
    o.batch_timeout = std::chrono::milliseconds(a.timeout_ms);
    auto c = connect_or_report(o, "ping", &failure);
    if (!c) return report_ping_failure(a, failure);
    std::vector<double> us;
    for (unsigned i = 0; i < std::max(1u, a.count); ++i) {
        std::uint64_t rtt = 0;
        const Status st = c->ping(&rtt);
        if (st != Status::ok) {
            const std::string detail = st == Status::timeout && c->last_error().empty()
                                           ? "no answer within " + std::to_string(a.timeout_ms) + " ms (--timeout-ms)"
                                           : c->last_error();
            const std::string why = std::string(shm::to_string(st)) + ": " + detail;
            std::fprintf(stderr, "sigverify ping: %s\n", why.c_str());
            return report_ping_failure(a, DaemonFailure{st, why});
        }
        us.push_back(double(rtt) / 1e3);
    }
    std::sort(us.begin(), us.end());
    if (a.json) {
        char epoch[17];
        std::snprintf(epoch, sizeof epoch, "%016llx", (unsigned long long)c->epoch());
        print_json_line({{"command", "ping"},
                         {"status", "ok"},
                         {"epoch", epoch},
                         {"arena_bytes", c->arena_size()},
                         {"pings", us.size()},
                         {"round_trip_min_us", us.front()},
                         {"round_trip_median_us", us[us.size() / 2]},
                         {"round_trip_max_us", us.back()}});
        return int(ExitCode::ok);
    }
    std::printf("sigverifyd is up: epoch %016llx, arena %llu bytes, %zu pings, round trip min %.1f us, median %.1f us, "
                "max %.1f us\n",
                (unsigned long long)c->epoch(), (unsigned long long)c->arena_size(), us.size(), us.front(),
                us[us.size() / 2], us.back());
    return int(ExitCode::ok);
}

}  // namespace

std::unique_ptr<Client> connect_daemon(const std::string& runtime_dir, const char* name, const char* what,
                                       unsigned timeout_ms, DaemonFailure* failure) {
    ClientOptions o = client_options(runtime_dir, name);
    o.batch_timeout = std::chrono::milliseconds(timeout_ms);
    return connect_or_report(o, what, failure);
}

void add_extra_subcommands(CLI::App& app) {
    g_ping_cmd = app.add_subcommand("ping", "Check that sigverifyd is up (round trip through its rings)");
    g_ping_cmd->add_option("--runtime-dir", g_ping.runtime_dir,
                           "sigverifyd runtime directory (default $SIGVERIFY_RUNTIME_DIR or /run/sigverifyd)");
    g_ping_cmd->add_option("--count", g_ping.count, "Number of pings")->check(CLI::Range(1u, 1000000u))
        ->capture_default_str();
    g_ping_cmd->add_option("--timeout-ms", g_ping.timeout_ms,
                           "How long one ping may wait for the daemon (a stopped or hung one) before the command "
                           "fails with timeout")
        ->check(CLI::Range(1u, 3600000u))
        ->capture_default_str();
    g_ping_cmd->add_flag("--json", g_ping.json,
                         "Print the result as one JSON object (status, epoch, arena_bytes, pings, round_trip_*_us)");
    g_info_cmd = add_info_subcommand(app, g_info);
}

int run_extra_subcommand(CLI::App&) {
    if (g_ping_cmd != nullptr && *g_ping_cmd) return run_ping(g_ping);
    if (g_info_cmd != nullptr && *g_info_cmd) return run_info(g_info);
    return int(ExitCode::usage);
}

}  // namespace sigverify::cli
