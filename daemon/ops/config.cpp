// SPDX-License-Identifier: MIT
#include "daemon/ops/config.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "daemon/ops/exit_codes.hpp"
#include "sigverify/version.h"  // generated from the CMake project version
#include "sigverify/shm_protocol/segment_access.hpp"
#include "sigverify/shm_protocol/segment_layout.hpp"

namespace sigverify::daemon {

std::string default_runtime_dir() {
    if (const char* env = std::getenv("SIGVERIFY_RUNTIME_DIR"); env != nullptr && *env != '\0')
        return env;
    return "/run/sigverifyd";
}

std::optional<std::uint64_t> parse_size(std::string_view text) {
    if (text.empty()) return std::nullopt;
    std::uint64_t value = 0;
    std::size_t i = 0;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
        const std::uint64_t digit = std::uint64_t(text[i] - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
        value = value * 10 + digit;
    }
    if (i == 0) return std::nullopt;
    std::string_view suffix = text.substr(i);
    unsigned shift = 0;
    if (suffix.empty() || suffix == "B" || suffix == "b") shift = 0;
    else if (suffix == "k" || suffix == "K" || suffix == "KiB" || suffix == "KB") shift = 10;
    else if (suffix == "m" || suffix == "M" || suffix == "MiB" || suffix == "MB") shift = 20;
    else if (suffix == "g" || suffix == "G" || suffix == "GiB" || suffix == "GB") shift = 30;
    else return std::nullopt;
    if (shift != 0 && value > (std::numeric_limits<std::uint64_t>::max() >> shift)) return std::nullopt;
    return value << shift;
}

namespace {

// Flags kept as text by CLI11 and turned into Config fields by finish().
struct RawOptions {
    std::string backend = "auto";
    std::string arena = "64M";
    std::string registered_bytes = "64G";
    std::string confirm = "groups";
    std::string split = "auto";
    std::string log_format = "auto";
};

std::string version_text() {
    return std::string("sigverifyd " SIGVERIFY_VERSION_STRING " (protocol ") + std::to_string(shm::kProtocolVersion) + ", ABI " +
           std::to_string(shm::kAbiMajor) + "." + std::to_string(shm::kAbiMinor) + ")";
}

// Every flag except --config, which the two passes of parse_command_line
// declare differently.
void add_options(CLI::App& app, Config& cfg, RawOptions& raw) {
    app.set_version_flag("--version", version_text());
    app.footer("SIGHUP re-reads the --config file and applies log-*, cross-check-*-sample and metrics-* at once.\n"
               "Exit status: 0 stopped cleanly, 1 runtime failure, 64 usage error (command line), "
               "78 configuration error (--config file, or options this host cannot serve).");
    app.add_option("--runtime-dir", cfg.runtime_dir,
                   "Directory of the control socket (default $SIGVERIFY_RUNTIME_DIR or /run/sigverifyd)");
    app.add_option("--backend", raw.backend,
                   "Verification backend: auto|cpu|gpu (host-kernel: the GPU path with the kernels' host twin in "
                   "each GPU's place, one per --gpus entry; for tests, slow)")
        ->check(CLI::IsMember({"auto", "cpu", "gpu", "host-kernel"}));
    app.add_option("--cpu-threads", cfg.cpu_threads, "CPU verification threads (0 = all cores)")
        ->check(CLI::Range(0u, 1024u));
    app.add_option("--max-clients", cfg.max_clients, "Maximum connected clients")
        ->check(CLI::Range(1u, 4096u));
    app.add_option("--max-segments-per-uid", cfg.max_segments_per_uid,
                   "Shared memory segments (of the largest size) one uid may hold at once, its sessions' and those "
                   "of its ended sessions not yet released (0 = 1.5 per --max-clients slot, about three quarters of "
                   "the daemon's budget of 2 per slot)")
        ->check(CLI::Range(0u, 8192u))->capture_default_str();
    app.add_option("--worker-nice", cfg.worker_nice,
                   "Nice offset of the verification workers over the daemon's other threads, so that a small "
                   "batch's wake-ups are not queued behind bulk verification (0 = none)")
        ->check(CLI::Range(0u, 19u))->capture_default_str();
    app.add_option("--pin-workers", cfg.pin_workers,
                   "CPU backend: each verification worker keeps to a core of its own (true/false)")
        ->capture_default_str();
    app.add_option("--ring-entries", cfg.ring_entries,
                   "Submission/completion ring entries per client (power of two, default and maximum)")
        ->check(CLI::Range(shm::kMinRingEntries, shm::kMaxRingEntries));
    app.add_option("--arena-size", raw.arena, "Shared data arena per client, e.g. 256M (default and maximum)");
    app.add_option("--max-registered-bytes", raw.registered_bytes,
                   "Bytes a client may register for in-place verification (its own memfds or table files, read "
                   "with pread, never mapped), e.g. 64G; 0 = no registered buffers")
        ->capture_default_str();
    app.add_option("--max-registered-buffers", cfg.max_registered_buffers,
                   "Registered buffers a client may hold at once (0 = none)")
        ->check(CLI::Range(0u, 1024u))->capture_default_str();
    app.add_option("--group", cfg.group, "Group whose members may connect (root and the daemon's uid always may)");
    app.add_option("--log-level", cfg.log_level, "trace|debug|info|warn|error|critical|off")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
    app.add_option("--log-file", cfg.log_file, "Log to this file (reopened on SIGHUP) instead of stderr");
    app.add_option("--log-format", raw.log_format,
                   "auto (the journal's own protocol when started by systemd, else text), text, or json (one "
                   "object per line: time, level, message)")
        ->check(CLI::IsMember({"auto", "text", "json"}))->capture_default_str();
    app.add_flag("--foreground", cfg.foreground, "Stay in the foreground (systemd, terminals)");
    app.add_option("--shutdown-timeout-ms", cfg.shutdown_timeout_ms,
                   "On SIGTERM/SIGINT, time allowed for in-flight batches before they are cancelled")
        ->check(CLI::Range(0u, 600000u));
    app.add_option("--chunk-rows", cfg.chunk_rows, "Rows per scheduling chunk (0 = backend default)")
        ->check(CLI::Range(std::size_t(0), std::size_t(1) << 30));
    app.add_option("--metrics-textfile", cfg.metrics_textfile,
                   "Write the Prometheus metrics to this file (atomically) for node_exporter's textfile collector");
    app.add_option("--metrics-interval", cfg.metrics_interval,
                   "Seconds between --metrics-textfile writes and systemd STATUS= updates")
        ->check(CLI::Range(1u, 86400u));
    app.add_option("--gpus", cfg.gpus, "GPUs to use with --backend gpu|auto: all, or indices such as 0,1")
        ->capture_default_str();
    app.add_option("--cross-check-sample", cfg.cross_check_sample,
                   "Re-verify 1 in N rows the GPU calls valid on the CPU (every row it calls invalid is always "
                   "re-verified; 1 = all rows)")
        ->check(CLI::Range(1u, 1u << 30))->capture_default_str();
    app.add_option("--confirm", raw.confirm,
                   "Invalid GPU verdicts libsecp256k1 confirms: groups (multisig tables: the rows of groups that fail, "
                   "and a sample of the others; every other table: all) or strict (all, for every table)")
        ->check(CLI::IsMember({"groups", "strict"}))->capture_default_str();
    app.add_option("--cross-check-invalid-sample", cfg.cross_check_invalid_sample,
                   "With --confirm groups: re-verify 1 in N invalid GPU verdicts of multisig groups that pass "
                   "(1 = all); those of failing groups always are")
        ->check(CLI::Range(1u, 1u << 30))->capture_default_str();
    app.add_option("--gpu-chunk-rows", cfg.gpu_chunk_rows, "Rows per GPU chunk; device buffers are sized for it at start-up")
        ->check(CLI::Range(std::size_t(256), std::size_t(1) << 22))->capture_default_str();
    app.add_option("--gpu-chunks-in-flight", cfg.gpu_chunks_in_flight,
                   "Chunks a GPU runs at once, each with its own stream and buffers (one chunk rarely fills a GPU)")
        ->check(CLI::Range(1u, 64u))->capture_default_str();
    app.add_option("--gpu-split", raw.split,
                   "auto: each batch is split between the GPUs and the CPU workers by measured rates so both finish "
                   "together (a batch the CPU finishes before a GPU launch returns stays on the CPU); off: every "
                   "chunk of --gpu-min-rows rows or more goes to the GPUs")
        ->check(CLI::IsMember({"auto", "off"}))->capture_default_str();
    app.add_option("--gpu-min-rows", cfg.gpu_min_rows,
                   "Chunks of fewer rows skip the GPU and are verified by libsecp256k1 at once (a GPU round trip "
                   "costs milliseconds; 0 = everything to the GPU)")
        ->check(CLI::Range(std::size_t(0), std::size_t(1) << 22))->capture_default_str();
    app.add_option("--gpu-wait-floor", cfg.gpu_wait_floor_s,
                   "Seconds: the floor of every GPU wait's deadline (a launch, copy or self-test may take this plus "
                   "4 times its rows at the device's slowest measured rate); past it the GPU is left out as hung and "
                   "the CPU verifies its rows")
        ->check(CLI::Range(0.01, 3600.0))->capture_default_str();
}

// The checks CLI11 cannot express, and the text flags into their fields.
// false with `error` set when a value is out of range.
bool finish(Config& cfg, const RawOptions& raw, std::string& error) {
    if (!shm::is_pow2(cfg.ring_entries)) {
        error = "--ring-entries must be a power of two between " + std::to_string(shm::kMinRingEntries) + " and " +
                std::to_string(shm::kMaxRingEntries);
        return false;
    }
    const auto size = parse_size(raw.arena);
    if (!size || *size < shm::kMinArenaSize || *size > shm::kMaxArenaSize) {
        error = "--arena-size: expected a size between 64K and 16G, got '" + raw.arena + "'";
        return false;
    }
    const auto registered = parse_size(raw.registered_bytes);
    if (!registered) {
        error = "--max-registered-bytes: expected a size such as 64G, got '" + raw.registered_bytes + "'";
        return false;
    }
    cfg.max_registered_bytes = *registered;
    if (cfg.runtime_dir.empty()) {
        error = "--runtime-dir must not be empty";
        return false;
    }
    cfg.arena_size = *size;
    cfg.gpu_split = raw.split == "auto";
    cfg.confirm = raw.confirm == "strict" ? ConfirmRule::strict : ConfirmRule::groups;
    cfg.backend = raw.backend == "cpu" ? BackendChoice::cpu
                  : raw.backend == "gpu" ? BackendChoice::gpu
                  : raw.backend == "host-kernel" ? BackendChoice::host_kernel
                                         : BackendChoice::automatic;
    cfg.log_format = raw.log_format == "text" ? LogFormat::text
                     : raw.log_format == "json" ? LogFormat::json
                                                : LogFormat::automatic;
    return true;
}

const char* kDescription = "sigverifyd: bulk secp256k1 signature verification for local node processes";

// CLI11 wants argc/argv; the strings outlive the call.
bool run_cli(CLI::App& app, const std::vector<std::string>& args, ParseResult& result, int failure_status) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    try {
        app.parse(int(argv.size()), argv.data());
        return true;
    } catch (const CLI::ParseError& e) {
        std::ostringstream out, err;
        const int code = app.exit(e, out, err);
        result.output = out.str();
        result.error = err.str();
        // --help and --version are CLI11 "errors" with status 0.
        result.exit_code = code == 0 ? exit_status::clean_stop : failure_status;
        return false;
    }
}

std::string absolute(const std::string& path) {
    if (path.empty() || path.front() == '/') return path;
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) == nullptr) return path;
    return std::string(cwd) + "/" + path;
}

// args with the value of --config (either spelling) replaced by `path`.
std::vector<std::string> with_config_path(std::vector<std::string> args, const std::string& path) {
    if (path.empty()) return args;
    for (std::size_t i = 1; i < args.size(); ++i) {
        if (args[i] == "--config" && i + 1 < args.size()) args[++i] = path;
        else if (args[i].rfind("--config=", 0) == 0) args[i] = "--config=" + path;
    }
    return args;
}

}  // namespace

std::string_view to_string(LogFormat format) {
    switch (format) {
        case LogFormat::text: return "text";
        case LogFormat::json: return "json";
        case LogFormat::automatic: break;
    }
    return "auto";
}

ParseResult parse_command_line(const std::vector<std::string>& args) {
    ParseResult result;
    // Pass 1: the command line alone, --config taken as a plain path. Every
    // error here is the command line's: usage_error.
    Config cfg;
    cfg.runtime_dir = default_runtime_dir();
    RawOptions raw;
    {
        CLI::App app{kDescription};
        app.add_option("--config", cfg.config_file, "Read these options from a config file (key = value); "
                                                    "flags given on the command line win");
        add_options(app, cfg, raw);
        if (!run_cli(app, args, result, exit_status::usage_error)) return result;
        if (!finish(cfg, raw, result.error)) {
            result.error += "\n";
            result.exit_code = exit_status::usage_error;
            return result;
        }
    }
    if (!cfg.config_file.empty()) {
        // Pass 2: the file, then the command line over it. The command line
        // passed on its own, so every error here is the file's: config_error.
        const std::string path = cfg.config_file;
        std::string unreadable;
        struct stat st{};
        if (stat(path.c_str(), &st) != 0) unreadable = std::strerror(errno);
        else if (S_ISDIR(st.st_mode)) unreadable = "it is a directory";
        else if (std::ifstream probe(path); !probe) unreadable = std::strerror(errno);
        if (!unreadable.empty()) {
            result.error = "--config " + path + ": cannot read the file: " + unreadable + "\n";
            result.exit_code = exit_status::config_error;
            return result;
        }
        cfg = Config{};
        cfg.runtime_dir = default_runtime_dir();
        raw = RawOptions{};
        CLI::App app{kDescription};
        app.set_config("--config", "", "Read these options from a config file (key = value)");
        // A misspelt key must not be ignored silently.
        app.allow_config_extras(CLI::config_extras_mode::error);
        add_options(app, cfg, raw);
        if (!run_cli(app, args, result, exit_status::config_error)) {
            result.error = "--config " + path + ": " + result.error;
            return result;
        }
        if (!finish(cfg, raw, result.error)) {
            result.error = "--config " + path + ": " + result.error + "\n";
            result.exit_code = exit_status::config_error;
            return result;
        }
        cfg.config_file = absolute(path);
    }
    // SIGHUP parses this again after daemonize() changed to "/": a relative
    // --config path must still name the same file then.
    cfg.command_line = with_config_path(args, cfg.config_file);
    result.config = std::move(cfg);
    result.exit_code = exit_status::clean_stop;
    return result;
}

std::optional<Config> parse_config(int argc, char** argv, int& exit_code) {
    ParseResult r = parse_command_line(std::vector<std::string>(argv, argv + argc));
    std::cout << r.output << std::flush;
    std::cerr << r.error << std::flush;
    exit_code = r.exit_code;
    return std::move(r.config);
}

}  // namespace sigverify::daemon
