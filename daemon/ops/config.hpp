// SPDX-License-Identifier: MIT
// sigverifyd configuration: command-line flags and the same keys from an
// optional config file (--config FILE, TOML/INI "key = value" lines).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/confirm/confirmation.hpp"

namespace sigverify::daemon {

enum class BackendChoice { automatic, cpu, gpu, host_kernel };

// How log lines look (daemon/ops/logging.hpp). automatic: the journal's native
// protocol when systemd connected stderr to the journal, else text.
enum class LogFormat { automatic, text, json };

struct Config {
    std::string runtime_dir;             // socket directory
    BackendChoice backend = BackendChoice::automatic;
    unsigned cpu_threads = 0;            // 0 = all cores
    unsigned max_clients = 64;
    // Shared-memory segments of the largest size one uid may hold at once
    // (0 = max-clients + (max-clients + 1) / 2, about three quarters of the
    // total budget of 2 x max-clients: one uid cannot take the last quarter).
    unsigned max_segments_per_uid = 0;
    // Nice offset of the verification workers over the rest of the daemon
    // (ring readers, main loop): a quiet client's wake-up and its session's
    // reader are not queued behind bulk verification (raising nice needs no
    // privileges). Off by default: against other CPU-bound processes on the
    // host it also lowers the workers' share (BENCHMARKS.md §7).
    unsigned worker_nice = 0;
    // The CPU backend's workers each keep to a core of their own (worker i on
    // the i-th core the daemon may use): left to the kernel, two workers woken
    // one after the other often shared one core for a whole run, and a batch
    // spread over both took as long as on one (BENCHMARKS.md §7d).
    bool pin_workers = true;
    std::uint32_t ring_entries = 64;     // default and maximum per client
    std::uint64_t arena_size = 64ull << 20;  // default and maximum per client
    // Registered buffers (ABI 1.4) per client session: total bytes and count.
    // Not memory of the daemon: it reads registered files with pread (a hole
    // reads as zeros, allocating nothing) and keeps one descriptor each.
    std::uint64_t max_registered_bytes = 64ull << 30;
    unsigned max_registered_buffers = 64;
    std::string group;                   // members may connect (besides root and our uid)
    std::string log_level = "info";
    std::string log_file;                // empty = stderr (journal under systemd)
    LogFormat log_format = LogFormat::automatic;
    bool foreground = false;
    unsigned shutdown_timeout_ms = 5000; // SIGTERM: finish in-flight work within this
    std::size_t chunk_rows = 0;          // 0 = the backend's preference
    std::string metrics_textfile;        // Prometheus text file for node_exporter (empty = none)
    unsigned metrics_interval = 15;      // seconds between textfile writes and STATUS= updates
    std::string gpus = "all";            // GPU selection: "all" or indices "0,1"
    std::uint32_t cross_check_sample = 1024;  // re-verify 1 in N valid GPU verdicts (1 = all)
    // Which invalid GPU verdicts libsecp256k1 confirms (daemon/confirm/confirmation.hpp):
    // groups (multisig: failing groups and 1 in cross_check_invalid_sample
    // others) or strict (all). A client can ask for strict per batch.
    ConfirmRule confirm = ConfirmRule::groups;
    std::uint32_t cross_check_invalid_sample = 64;
    // Rows per GPU chunk (device buffers sized at start-up). Small enough that a
    // 1M-row batch keeps 16 workers busy with their CPU cross-checks; the GPU
    // still sees big launches: 4 slots in flight, busy slots merge pieces.
    std::size_t gpu_chunk_rows = 65536;
    bool gpu_split = true;               // split batches between the GPUs and the CPU workers by measured rates
    unsigned gpu_chunks_in_flight = 4;   // chunks running at once per GPU, each with its own stream and buffers
    std::size_t gpu_min_rows = 32;       // smaller chunks are verified on the CPU (GPU round trip: milliseconds)
    // The floor of every GPU wait's deadline, seconds (gpu::wait_deadline_s):
    // a launch, copy or self-test past floor + 4 x its rows at the slot's
    // slowest measured rate leaves its device out, and the CPU verifies its
    // rows (DeadlineBackend). Under WatchdogSec=30s so a hung GPU is left out,
    // not the daemon restarted.
    double gpu_wait_floor_s = 10.0;

    // Where this configuration came from, so that SIGHUP can read it again:
    // the --config file (empty = none) and the whole command line (flags
    // given there override the file's keys, at start and on reload).
    std::string config_file;
    std::vector<std::string> command_line;
};

// Default runtime dir: $SIGVERIFY_RUNTIME_DIR, else /run/sigverifyd.
std::string default_runtime_dir();

// Parses "256M", "64k", "1G", "4096" (binary multiples). nullopt on error/overflow.
std::optional<std::uint64_t> parse_size(std::string_view text);

// The outcome of parsing a command line (argv[0] first). Without a config:
// exit with exit_code (daemon/ops/exit_codes.hpp): 0 after --help or --version
// (their text in `output`), usage_error for a bad command line, config_error
// for a bad --config file; `error` says why. The command line is checked on
// its own first, so a mistake in it is never blamed on the file.
struct ParseResult {
    std::optional<Config> config;
    int exit_code = 0;
    std::string output;
    std::string error;
};
ParseResult parse_command_line(const std::vector<std::string>& args);

// parse_command_line for main(): prints `output` to stdout and `error` to
// stderr. Returns nullopt and sets exit_code when the program should exit.
std::optional<Config> parse_config(int argc, char** argv, int& exit_code);

std::string_view to_string(LogFormat format);

}  // namespace sigverify::daemon
