#include "daemon/config.hpp"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <iostream>
#include <limits>

#include "shm_protocol/segment_access.hpp"
#include "shm_protocol/segment_layout.hpp"

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

std::optional<Config> parse_config(int argc, char** argv, int& exit_code) {
    Config cfg;
    cfg.runtime_dir = default_runtime_dir();
    CLI::App app{"sigverifyd: bulk secp256k1 signature verification for local node processes"};
    app.set_version_flag("--version", std::string("sigverifyd 0.1.0 (protocol ") +
                                          std::to_string(shm::kProtocolVersion) + ", ABI " +
                                          std::to_string(shm::kAbiMajor) + "." +
                                          std::to_string(shm::kAbiMinor) + ")");
    app.set_config("--config", "", "Read these options from a config file (key = value)");
    app.add_option("--runtime-dir", cfg.runtime_dir,
                   "Directory of the control socket (default $SIGVERIFY_RUNTIME_DIR or /run/sigverifyd)");
    std::string backend = "auto";
    app.add_option("--backend", backend,
                   "Verification backend: auto|cpu|gpu (host-kernel: the GPU path with the kernels' host twin in "
                   "each GPU's place, one per --gpus entry; for tests, slow)")
        ->check(CLI::IsMember({"auto", "cpu", "gpu", "host-kernel"}));
    app.add_option("--cpu-threads", cfg.cpu_threads, "CPU verification threads (0 = all cores)")
        ->check(CLI::Range(0u, 1024u));
    app.add_option("--max-clients", cfg.max_clients, "Maximum connected clients")
        ->check(CLI::Range(1u, 4096u));
    app.add_option("--ring-entries", cfg.ring_entries,
                   "Submission/completion ring entries per client (power of two, default and maximum)")
        ->check(CLI::Range(shm::kMinRingEntries, shm::kMaxRingEntries));
    std::string arena = "64M";
    app.add_option("--arena-size", arena, "Shared data arena per client, e.g. 256M (default and maximum)");
    app.add_option("--group", cfg.group, "Group whose members may connect (root and the daemon's uid always may)");
    app.add_option("--log-level", cfg.log_level, "trace|debug|info|warn|error|critical|off")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
    app.add_option("--log-file", cfg.log_file, "Log to this file (reopened on SIGHUP) instead of stderr");
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
    std::string confirm = "groups";
    app.add_option("--confirm", confirm,
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
    std::string split = "auto";
    app.add_option("--gpu-split", split,
                   "auto: each batch is split between the GPUs and the CPU workers by measured rates so both finish "
                   "together (a batch the CPU finishes before a GPU launch returns stays on the CPU); off: every "
                   "chunk of --gpu-min-rows rows or more goes to the GPUs")
        ->check(CLI::IsMember({"auto", "off"}))->capture_default_str();
    app.add_option("--gpu-min-rows", cfg.gpu_min_rows,
                   "Chunks of fewer rows skip the GPU and are verified by libsecp256k1 at once (a GPU round trip "
                   "costs milliseconds; 0 = everything to the GPU)")
        ->check(CLI::Range(std::size_t(0), std::size_t(1) << 22))->capture_default_str();
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        exit_code = app.exit(e);
        return std::nullopt;
    }
    if (!shm::is_pow2(cfg.ring_entries)) {
        std::cerr << "--ring-entries must be a power of two between " << shm::kMinRingEntries << " and "
                  << shm::kMaxRingEntries << "\n";
        exit_code = 2;
        return std::nullopt;
    }
    const auto size = parse_size(arena);
    if (!size || *size < shm::kMinArenaSize || *size > shm::kMaxArenaSize) {
        std::cerr << "--arena-size: expected a size between 64K and 16G, got '" << arena << "'\n";
        exit_code = 2;
        return std::nullopt;
    }
    cfg.arena_size = *size;
    cfg.gpu_split = split == "auto";
    cfg.confirm = confirm == "strict" ? ConfirmRule::strict : ConfirmRule::groups;
    cfg.backend = backend == "cpu" ? BackendChoice::cpu
                  : backend == "gpu" ? BackendChoice::gpu
                  : backend == "host-kernel" ? BackendChoice::host_kernel
                                     : BackendChoice::automatic;
    if (cfg.runtime_dir.empty()) {
        std::cerr << "--runtime-dir must not be empty\n";
        exit_code = 2;
        return std::nullopt;
    }
    exit_code = 0;
    return cfg;
}

}  // namespace sigverify::daemon
