// SPDX-License-Identifier: MIT
// sigverify: command-line tool for sigverify row files.
//
//   sigverify gen      write deterministic, really signed rows of a table
//   sigverify verify   verify a row file or column directory, through sigverifyd
//                      or (--local) in-process (verify_command.cpp)
//   sigverify inspect  print the first rows of a file in readable form
//   sigverify columns  convert between row files and column directories
//   sigverify groups   m-of-n group verdicts and per-block pass/fail
// (columns and groups live in columns_commands.cpp)
//
// Exit codes (also in --help): 0 success; 1 --strict and some rows invalid;
// 2 usage error; 3 input or output error (unreadable file, bad size);
// 4 the daemon could not be used.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "client/cli/cli_common.hpp"
#include "client/cli/bench_command.hpp"
#include "client/cli/columns_commands.hpp"
#include "client/cli/stats_commands.hpp"
#include "client/cli/verify_command.hpp"
#include "reference/multisig_pair.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"
#include "sigverify/version.h"  // generated from the CMake project version

namespace sv = sigverify;
using sv::cli::ExitCode;
using sv::cli::InputError;

namespace {

const char* kExitCodes =
    "Exit codes: 0 success, 1 --strict and some rows invalid, 2 usage error,\n"
    "3 input/output error (unreadable file, size not a multiple of the stride), 4 daemon unavailable.";

// ---------------------------------------------------------------------------
// gen
// ---------------------------------------------------------------------------
struct GenArgs {
    std::string table;
    std::size_t count = 0;
    std::optional<std::size_t> tail_size;
    std::string sig_format = "opaque";
    double invalid_rate = 0.0;
    double high_s_rate = 0.0;
    std::uint64_t seed = 1;
    unsigned threads = 0;
    std::string out;
};

int run_gen(const GenArgs& a) {
    sv::reference::GenOptions o;
    o.table = *sv::wire::parse_table(a.table);
    o.count = a.count;
    o.tail_size = a.tail_size;
    o.encoding = *sv::wire::parse_sig_encoding(a.sig_format);
    o.invalid_rate = a.invalid_rate;
    o.high_s_rate = a.high_s_rate;
    o.seed = a.seed;
    o.threads = a.threads;
    const auto start = std::chrono::steady_clock::now();
    sv::reference::GenReport report;
    const auto rows = sv::reference::generate_rows(o, &report);
    sv::cli::write_file_atomically(a.out, rows.data(), rows.size());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::size_t ks = sv::reference::effective_key_size(o);
    std::printf("generated %zu %s rows (key_size %zu, stride %zu, %s) in %.2f s: %llu mutated, %llu high-S -> %s\n",
                a.count, a.table.c_str(), ks, sv::wire::stride(sv::wire::record_kind(o.table), ks),
                a.sig_format.c_str(), seconds, (unsigned long long)report.mutated,
                (unsigned long long)report.high_s, a.out.c_str());
    return int(ExitCode::ok);
}

// ---------------------------------------------------------------------------
// inspect
// ---------------------------------------------------------------------------
struct InspectArgs {
    std::string table;
    std::optional<std::size_t> tail_size;
    std::string sig_format = "opaque";
    std::size_t rows = 5;
    std::size_t first = 0;
    bool verify = false;
    std::string file;
};

std::string hex(const std::uint8_t* p, std::size_t n) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    for (std::size_t i = 0; i < n; ++i) {
        s += digits[p[i] >> 4];
        s += digits[p[i] & 15];
    }
    return s;
}

int run_inspect(const InspectArgs& a) {
    sv::cli::RowFile file = sv::cli::load_row_file(a.file, a.table, a.tail_size, a.sig_format);
    const sv::wire::RowSpan span = file.span(file.bytes);
    const auto table = *sv::wire::parse_table(a.table);
    std::printf("%s: %zu %s rows, key_size %zu, stride %zu, signatures %s\n", a.file.c_str(), span.count,
                a.table.c_str(), span.tail_size, span.row_stride(), a.sig_format.c_str());
    sv::reference::RowVerifier verifier;
    const bool canonical = span.tail_size == sv::wire::canonical_tail_size(table);
    for (std::size_t i = a.first; i < span.count && i < a.first + a.rows; ++i) {
        const std::uint8_t* row = span.row(i);
        std::printf("row %zu%s\n", i, a.verify ? (verifier.verify_row(span, i) ? "  [valid]" : "  [INVALID]") : "");
        std::printf("  hash   %s\n", hex(row, 32).c_str());
        if (span.kind == sv::wire::RecordKind::ecdsa) {
            std::printf("  point  %s\n", hex(row + 32, 33).c_str());
            const bool opaque = span.encoding == sv::wire::SigEncoding::opaque;
            std::printf("  r      %s%s\n", hex(row + 65, 32).c_str(), opaque ? "  (little-endian)" : "");
            std::printf("  s      %s%s\n", hex(row + 97, 32).c_str(), opaque ? "  (little-endian)" : "");
        } else {
            std::printf("  xonly  %s\n", hex(row + 32, 32).c_str());
            std::printf("  R.x    %s\n", hex(row + 64, 32).c_str());
            std::printf("  s      %s\n", hex(row + 96, 32).c_str());
        }
        const std::uint8_t* tail = row + sv::wire::record_size(span.kind);
        if (canonical && (table == sv::wire::Table::multisig || table == sv::wire::Table::threshold)) {
            if (table == sv::wire::Table::multisig) {
                const auto pair = sv::reference::decode_multisig_pair(tail[0]);
                std::printf("  mn     0x%02x (signature %u, key %u)\n", tail[0], unsigned(pair.signature),
                            unsigned(pair.key));
            }
            else
                std::printf("  mn     %u (required signatures)\n", tail[0]);
            std::printf("  group  %u\n", sv::wire::read_u16le(tail + 1));
            tail += 3;
        }
        if (canonical) {
            const auto fk = sv::wire::read_u24le(tail);
            std::printf("  block  %u%s\n", fk, fk == sv::wire::kBlockFkWriting ? " (being written)" : "");
        } else if (span.tail_size) {
            std::printf("  tail   %s\n", hex(tail, span.tail_size).c_str());
        }
    }
    return int(ExitCode::ok);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"sigverify: generate, inspect and verify secp256k1 signature rows (ECDSA and BIP-340)"};
    app.footer(kExitCodes);
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string("sigverify ") + SIGVERIFY_VERSION_STRING);

    const auto table_check = CLI::IsMember({"ecdsa", "multisig", "schnorr", "threshold"});
    const auto sig_check = CLI::IsMember({"opaque", "compact"});

    GenArgs gen;
    auto* gen_cmd = app.add_subcommand("gen", "Write deterministic, really signed rows of one table");
    gen_cmd->add_option("--table", gen.table, "Table: ecdsa, multisig, schnorr, threshold")->required()->check(table_check);
    gen_cmd->add_option("--count", gen.count, "Number of rows")->required();
    gen_cmd->add_option("--key-size", gen.tail_size, "Tail bytes per row (default: the table's canonical tail)")
        ->check(CLI::Range(0, 255));
    gen_cmd->add_option("--sig-format", gen.sig_format, "ECDSA signature encoding: opaque (r LE||s LE) or compact (r BE||s BE)")
        ->check(sig_check)->capture_default_str();
    gen_cmd->add_option("--invalid-rate", gen.invalid_rate, "Fraction of rows given an invalidating mutation")
        ->check(CLI::Range(0.0, 1.0))->capture_default_str();
    gen_cmd->add_option("--high-s-rate", gen.high_s_rate, "Fraction of ECDSA rows with s replaced by n - s (still valid)")
        ->check(CLI::Range(0.0, 1.0))->capture_default_str();
    gen_cmd->add_option("--seed", gen.seed, "Seed: the same seed gives the same file")->capture_default_str();
    gen_cmd->add_option("--threads", gen.threads, "Signing threads (0 = all cores)")->capture_default_str();
    gen_cmd->add_option("--out", gen.out, "Output file")->required();

    CLI::App* verify_cmd = sv::cli::add_verify_subcommand(app);

    InspectArgs inspect;
    auto* inspect_cmd = app.add_subcommand("inspect", "Print the first rows of a file in readable form");
    inspect_cmd->add_option("--table", inspect.table, "Table: ecdsa, multisig, schnorr, threshold")->required()->check(table_check);
    inspect_cmd->add_option("--key-size", inspect.tail_size, "Tail bytes per row (default: the table's canonical tail)")
        ->check(CLI::Range(0, 255));
    inspect_cmd->add_option("--sig-format", inspect.sig_format, "ECDSA signature encoding: opaque or compact")
        ->check(sig_check)->capture_default_str();
    inspect_cmd->add_option("--rows", inspect.rows, "How many rows to print")->capture_default_str();
    inspect_cmd->add_option("--first", inspect.first, "Index of the first row to print")->capture_default_str();
    inspect_cmd->add_flag("--verify", inspect.verify, "Show each printed row's verdict (libsecp256k1)");
    inspect_cmd->add_option("file", inspect.file, "Row file")->required()->check(CLI::ExistingFile);

    sv::cli::add_column_subcommands(app);
    CLI::App* bench_cmd = sv::cli::add_bench_subcommand(app);
    sv::cli::add_extra_subcommands(app);
    sv::cli::add_stats_subcommands(app);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? 0 : int(ExitCode::usage);
    }

    try {
        if (*gen_cmd) {
            if (gen.tail_size && *gen.tail_size > 255) throw CLI::ValidationError("--key-size must be 0..255");
            return run_gen(gen);
        }
        if (*verify_cmd) return sv::cli::run_verify();
        if (*inspect_cmd) return run_inspect(inspect);
        if (*bench_cmd) return sv::cli::run_bench();
        if (const int rc = sv::cli::run_column_subcommand(app); rc >= 0) return rc;
        if (const int rc = sv::cli::run_stats_subcommand(); rc >= 0) return rc;
        return sv::cli::run_extra_subcommand(app);
    } catch (const InputError& e) {
        std::fprintf(stderr, "sigverify: %s\n", e.what());
        return int(ExitCode::input);
    } catch (const sv::cli::DaemonError& e) {
        std::fprintf(stderr, "sigverify: %s\n", e.what());
        return int(ExitCode::daemon);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "sigverify: error: %s\n", e.what());
        return int(ExitCode::input);
    }
}
