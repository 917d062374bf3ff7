// Subcommands that talk to sigverifyd through libsigverify:
//   sigverify verify (without --local)   verify a row file through the daemon
//                                        (a column directory: columns_commands.cpp)
//   sigverify ping                       check that the daemon is up
#include "client/cli/cli_common.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "sigverify/client.hpp"

namespace sigverify::cli {
namespace {

struct PingArgs {
    std::string runtime_dir;
    unsigned count = 1;
};

PingArgs g_ping;
CLI::App* g_ping_cmd = nullptr;

ClientOptions client_options(const std::string& runtime_dir, const char* name) {
    ClientOptions o;
    o.runtime_dir = runtime_dir;  // empty: $SIGVERIFY_RUNTIME_DIR, else /run/sigverifyd
    o.name = name;
    return o;
}

std::unique_ptr<Client> connect_or_report(const ClientOptions& o, const char* what) {
    Status st = Status::ok;
    std::string msg;
    auto c = Client::connect(o, st, msg);
    if (!c) std::fprintf(stderr, "sigverify %s: cannot use sigverifyd: %s\n", what, msg.c_str());
    return c;
}

int run_ping(const PingArgs& a) {
    auto c = connect_or_report(client_options(a.runtime_dir, "sigverify-ping"), "ping");
    if (!c) return int(ExitCode::daemon);
    std::vector<double> us;
    for (unsigned i = 0; i < std::max(1u, a.count); ++i) {
        std::uint64_t rtt = 0;
        const Status st = c->ping(&rtt);
        if (st != Status::ok) {
            std::fprintf(stderr, "sigverify ping: %s: %s\n", std::string(shm::to_string(st)).c_str(),
                         c->last_error().c_str());
            return int(ExitCode::daemon);
        }
        us.push_back(double(rtt) / 1e3);
    }
    std::sort(us.begin(), us.end());
    std::printf("sigverifyd is up: epoch %016llx, arena %llu bytes, %zu pings, round trip min %.1f us, median %.1f us, "
                "max %.1f us\n",
                (unsigned long long)c->epoch(), (unsigned long long)c->arena_size(), us.size(), us.front(),
                us[us.size() / 2], us.back());
    return int(ExitCode::ok);
}

}  // namespace

std::unique_ptr<Client> connect_daemon(const std::string& runtime_dir, const char* name, const char* what) {
    return connect_or_report(client_options(runtime_dir, name), what);
}

void add_daemon_options(CLI::App& verify_cmd, VerifyArgs& args) {
    verify_cmd.add_option("--runtime-dir", args.runtime_dir,
                          "sigverifyd runtime directory (daemon mode; default $SIGVERIFY_RUNTIME_DIR or /run/sigverifyd)");
}

int run_verify_daemon(const VerifyArgs& a) {
    const RowFile file = load_row_file(a.in, a.table, a.key_size, a.sig_format);
    auto c = connect_or_report(client_options(a.runtime_dir, "sigverify-cli"), "verify");
    if (!c) return int(ExitCode::daemon);
    std::vector<std::uint8_t> rows = file.bytes;
    const wire::RowSpan span = file.span(rows);
    std::vector<std::uint8_t> results(a.collect ? 0 : span.count);
    const auto table = wire::parse_table(a.table);
    const auto start = std::chrono::steady_clock::now();
    const BatchResult r = c->run(span, a.collect ? wire::Mode::collect : wire::Mode::results, results.data(),
                                 table ? static_cast<std::uint8_t>(*table) : shm::kTableUnspecified);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!r.ok()) {
        const std::string why = c->last_error();
        std::fprintf(stderr, "sigverify verify: sigverifyd failed the batch: %s%s%s\n",
                     std::string(shm::to_string(r.status)).c_str(), why.empty() ? "" : ": ", why.c_str());
        return int(ExitCode::daemon);
    }
    if (!a.out.empty()) {
        if (a.collect) write_file_atomically(a.out, rows.data(), rows.size());
        else write_file_atomically(a.out, results.data(), results.size());
    }
    const std::uint64_t n = r.valid + r.invalid;
    std::printf("%s (daemon, epoch %016llx): rows=%llu valid=%llu invalid=%llu seconds=%.3f rows/s=%.0f\n",
                a.collect ? "collect" : "verify", (unsigned long long)c->epoch(), (unsigned long long)n,
                (unsigned long long)r.valid, (unsigned long long)r.invalid, seconds,
                seconds > 0 ? double(n) / seconds : 0.0);
    return a.strict && r.invalid ? int(ExitCode::invalid_rows) : int(ExitCode::ok);
}

void add_extra_subcommands(CLI::App& app) {
    g_ping_cmd = app.add_subcommand("ping", "Check that sigverifyd is up (round trip through its rings)");
    g_ping_cmd->add_option("--runtime-dir", g_ping.runtime_dir,
                           "sigverifyd runtime directory (default $SIGVERIFY_RUNTIME_DIR or /run/sigverifyd)");
    g_ping_cmd->add_option("--count", g_ping.count, "Number of pings")->check(CLI::Range(1u, 1000000u))
        ->capture_default_str();
}

int run_extra_subcommand(CLI::App&) {
    if (g_ping_cmd != nullptr && *g_ping_cmd) return run_ping(g_ping);
    return int(ExitCode::usage);
}

}  // namespace sigverify::cli
