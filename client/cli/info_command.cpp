// SPDX-License-Identifier: MIT
// `sigverify info [--json]`: what the daemon is (Client::info): versions,
// backend, each GPU with its state and self-test, the confirmation rule and
// the per-client limits.
#include "client/cli/info_command.hpp"

#include <cstdio>

#include "client/cli/json_output.hpp"
#include "shm_protocol/info_message.hpp"
#include "sigverify/client.hpp"

namespace sigverify::cli {

namespace {

// The info exchange has a bound of its own in the library; this one covers
// any ring wait of the session, as for every command.
constexpr unsigned kInfoTimeoutMs = 5000;

nlohmann::ordered_json to_json(const DaemonInfo& d) {
    nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
    for (const GpuInfo& g : d.gpus)
        gpus.push_back({{"index", g.index},
                        {"name", g.name},
                        {"state", g.enabled ? "enabled" : "disabled"},
                        {"self_test", g.self_test},
                        {"memory_bytes", g.memory_bytes}});
    char epoch[17];
    std::snprintf(epoch, sizeof epoch, "%016llx", (unsigned long long)d.epoch);
    return {{"command", "info"},
            {"status", "ok"},
            {"version", d.version},
            {"protocol_version", d.protocol_version},
            {"abi", std::to_string(d.abi_major) + "." + std::to_string(d.abi_minor)},
            {"epoch", epoch},
            {"backend", d.backend},
            {"confirm_rule", d.confirm_rule},
            {"cpu_workers", d.cpu_workers},
            {"gpu_count", d.gpu_count},
            {"gpus_enabled", d.gpus_enabled},
            {"gpus", gpus},
            {"max_arena_bytes", d.max_arena_size},
            {"max_ring_entries", d.max_ring_entries},
            {"max_clients", d.max_clients},
            {"max_registered_bytes", d.max_registered_bytes},
            {"max_registered_buffers", d.max_registered_buffers}};
}

void print_text(const DaemonInfo& d) {
    std::printf("sigverifyd %s (protocol %u, ring ABI %u.%u), epoch %016llx\n", d.version.c_str(), d.protocol_version,
                d.abi_major, d.abi_minor, (unsigned long long)d.epoch);
    std::printf("backend: %s, %u CPU workers, confirmation rule %s\n", d.backend.c_str(), d.cpu_workers,
                d.confirm_rule.c_str());
    std::printf("GPUs: %u found, %u enabled\n", d.gpu_count, d.gpus_enabled);
    for (const GpuInfo& g : d.gpus) {
        std::printf("  gpu%u %s: %s, self-test %s, %llu MiB\n", g.index, g.name.c_str(),
                    g.enabled ? "enabled" : "disabled", g.self_test.c_str(),
                    (unsigned long long)(g.memory_bytes >> 20));
        if (g.self_test.rfind(shm::kNoKernelImage, 0) == 0)  // the daemon's build has no machine code for it
            std::printf("    the CPU verifies in its place; rebuild the daemon for every supported GPU: %s "
                        "(sigverify stats backends shows what the build carries)\n",
                        shm::kRebuildForEveryGpu);
    }
    std::printf("limits: arena %llu bytes, %u ring entries, %u clients, registered %llu bytes in %u buffers\n",
                (unsigned long long)d.max_arena_size, d.max_ring_entries, d.max_clients,
                (unsigned long long)d.max_registered_bytes, d.max_registered_buffers);
}

}  // namespace

int run_info(const InfoArgs& a) {
    DaemonFailure failure;
    auto c = connect_daemon(a.runtime_dir, "sigverify-info", "info", kInfoTimeoutMs, &failure);
    if (!c) {
        if (a.json) print_json_line(daemon_failure_json("info", failure.status, failure.message));
        return int(ExitCode::daemon);
    }
    DaemonInfo d;
    if (const Status st = c->info(d); st != Status::ok) {
        const std::string why = std::string(shm::to_string(st)) +
                                (st == Status::bad_entry ? ": the daemon is older than ring ABI 1.5" : ": " + c->last_error());
        std::fprintf(stderr, "sigverify info: %s\n", why.c_str());
        if (a.json) print_json_line(daemon_failure_json("info", st, why));
        return int(ExitCode::daemon);
    }
    if (a.json)
        print_json_line(to_json(d));
    else
        print_text(d);
    return int(ExitCode::ok);
}

CLI::App* add_info_subcommand(CLI::App& app, InfoArgs& args) {
    CLI::App* cmd = app.add_subcommand("info", "Ask sigverifyd what it is: versions, backend, GPUs, rule, limits");
    cmd->add_option("--runtime-dir", args.runtime_dir,
                    "sigverifyd runtime directory (default $SIGVERIFY_RUNTIME_DIR or /run/sigverifyd)");
    cmd->add_flag("--json", args.json, "Print the answer as one JSON object");
    return cmd;
}

}  // namespace sigverify::cli
