// SPDX-License-Identifier: MIT
// `sigverify verify` (see verify_command.hpp): checks the flags, reads the
// input (row file or column directory), verifies it locally or through
// sigverifyd, writes --out and prints one summary line (text, or --json:
// verify_summary.hpp). The four paths (rows/columns x local/daemon) write the
// same bytes for the same input.
#include "client/cli/verify_command.hpp"

#include <chrono>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "client/cli/cli_common.hpp"
#include "client/cli/columns_commands.hpp"
#include "client/cli/json_output.hpp"
#include "client/cli/verify_summary.hpp"
#include "reference/columns.hpp"
#include "reference/reference_verifier.hpp"
#include "sigverify/client.hpp"

namespace sigverify::cli {
namespace {

struct VerifyArgs {
    bool local = false;
    std::string table;
    std::optional<std::size_t> tail_size;  // the row tail (tail_size); the flag is --key-size
    std::string sig_format = "opaque";
    bool collect = false;
    unsigned threads = 0;
    std::string in;
    std::string columns;  // a column directory instead of --in
    std::string out;
    bool strict = false;
    bool baseline = false;
    std::string runtime_dir;  // daemon mode
    // Daemon mode: how long the daemon may leave the batch unanswered (one
    // wait; a large batch is many) before the command fails with timeout.
    unsigned timeout_ms = 60000;
    bool json = false;        // the summary as one JSON object
};

VerifyArgs g_args;
CLI::App* g_cmd = nullptr;

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

wire::Mode mode_of(const VerifyArgs& a) { return a.collect ? wire::Mode::collect : wire::Mode::results; }

bool strict_fails(const VerifyArgs& a, std::uint64_t invalid) { return a.strict && invalid != 0; }

// Prints the summary (text or JSON) and returns the exit code.
int report(const VerifyArgs& a, const VerifySummary& s) {
    const bool fails = strict_fails(a, s.invalid);
    if (a.json) print_json_line(summary_json(s, fails ? "invalid_rows" : "ok"));
    else std::fputs(summary_text(s).c_str(), stdout);
    return fails ? int(ExitCode::invalid_rows) : int(ExitCode::ok);
}

VerifySummary local_summary(const VerifyArgs& a, bool columns, unsigned threads, std::uint64_t valid,
                            std::uint64_t invalid, double seconds) {
    VerifySummary s;
    s.collect = a.collect;
    s.columns = columns;
    s.threads = threads;
    s.valid = valid;
    s.invalid = invalid;
    s.seconds = seconds;
    return s;
}

VerifySummary daemon_summary(const VerifyArgs& a, bool columns, const Client& c, const BatchResult& r,
                             double seconds) {
    VerifySummary s;
    s.collect = a.collect;
    s.daemon = true;
    s.columns = columns;
    s.epoch = c.epoch();
    s.valid = r.valid;
    s.invalid = r.invalid;
    s.seconds = seconds;
    return s;
}

// The daemon could not be reached (connect_daemon already said why on stderr).
int report_unreachable(const VerifyArgs& a, const DaemonFailure& f) {
    if (a.json) print_json_line(daemon_failure_json(a.collect ? "collect" : "verify", f.status, f.message));
    return int(ExitCode::daemon);
}

int report_daemon_failure(const VerifyArgs& a, const Client& c, const char* what, const BatchResult& r) {
    const std::string why = r.status == Status::timeout
                                ? "no answer within " + std::to_string(a.timeout_ms) +
                                      " ms (--timeout-ms); no verdicts were written"
                                : c.last_error();
    const std::string message = std::string("sigverifyd failed the ") + what + ": " +
                                std::string(shm::to_string(r.status)) + (why.empty() ? "" : ": ") + why;
    std::fprintf(stderr, "sigverify verify: %s\n", message.c_str());
    return report_unreachable(a, DaemonFailure{r.status, message});
}

// ---------------------------------------------------------------------------
// Row files
// ---------------------------------------------------------------------------
int verify_rows_local(const VerifyArgs& a) {
    const RowFile file = load_row_file(a.in, a.table, a.tail_size, a.sig_format);
    std::vector<std::uint8_t> rows = file.bytes;
    const wire::RowSpan span = file.span(rows);
    std::vector<std::uint8_t> results(a.collect ? 0 : span.count);

    reference::Verifier verifier(a.threads);
    const auto start = std::chrono::steady_clock::now();
    const auto tally = verifier.run(span, mode_of(a), results.data());
    const double seconds = seconds_since(start);

    if (!a.out.empty()) {
        if (a.collect) write_file_atomically(a.out, rows.data(), rows.size());
        else write_file_atomically(a.out, results.data(), results.size());
    }
    VerifySummary summary = local_summary(a, false, verifier.threads(), tally.valid, tally.invalid, seconds);

    if (a.baseline) {
        // Plain libsecp256k1 calls, one thread, same rows: the figure a node
        // would get without sigverify.
        reference::RowVerifier plain;
        const wire::RowSpan original = file.span(const_cast<std::vector<std::uint8_t>&>(file.bytes));
        const auto t0 = std::chrono::steady_clock::now();
        std::uint64_t valid = 0;
        for (std::size_t i = 0; i < original.count; ++i) valid += plain.verify_row(original, i);
        summary.baseline = BaselineSummary{original.count, valid, seconds_since(t0)};
        if (valid != tally.valid) {
            std::fputs(summary_text(summary).c_str(), stderr);  // the figures that disagree, for the record
            throw std::runtime_error("baseline disagrees with the verifier");
        }
    }
    return report(a, summary);
}

int verify_rows_daemon(const VerifyArgs& a) {
    const RowFile file = load_row_file(a.in, a.table, a.tail_size, a.sig_format);
    DaemonFailure failure;
    auto c = connect_daemon(a.runtime_dir, "sigverify-cli", "verify", a.timeout_ms, &failure);
    if (!c) return report_unreachable(a, failure);
    std::vector<std::uint8_t> rows = file.bytes;
    const wire::RowSpan span = file.span(rows);
    std::vector<std::uint8_t> results(a.collect ? 0 : span.count);
    const auto table = wire::parse_table(a.table);
    const auto start = std::chrono::steady_clock::now();
    const BatchResult r =
        c->run(span, mode_of(a), results.data(), table ? static_cast<std::uint8_t>(*table) : shm::kTableUnspecified);
    const double seconds = seconds_since(start);
    if (!r.ok()) return report_daemon_failure(a, *c, "batch", r);
    if (!a.out.empty()) {
        if (a.collect) write_file_atomically(a.out, rows.data(), rows.size());
        else write_file_atomically(a.out, results.data(), results.size());
    }
    return report(a, daemon_summary(a, false, *c, r, seconds));
}

int verify_rows(const VerifyArgs& a) {
    if (a.in.empty() || a.table.empty()) {
        std::fprintf(stderr, "sigverify verify: needs --in FILE and --table TABLE, or --columns DIR\n");
        return int(ExitCode::usage);
    }
    if (a.collect && a.out.empty()) {
        std::fprintf(stderr, "sigverify verify: --collect writes the rows with valid tails zeroed and needs --out FILE\n");
        return int(ExitCode::usage);
    }
    return a.local ? verify_rows_local(a) : verify_rows_daemon(a);
}

// ---------------------------------------------------------------------------
// Column directories
// ---------------------------------------------------------------------------
// Collect mode writes the correlate column (valid rows' entries zeroed).
void write_columns_out(const VerifyArgs& a, const ColumnDir& dir, const std::vector<std::uint8_t>& results) {
    if (a.out.empty()) return;
    if (a.collect) write_file_atomically(a.out, dir.table.correlate.data(), dir.table.correlate.size());
    else write_file_atomically(a.out, results.data(), results.size());
}

int verify_columns_local(const VerifyArgs& a, ColumnDir& dir) {
    const wire::ColumnSpan batch = dir.table.view();
    std::vector<std::uint8_t> results(a.collect ? 0 : batch.count);
    reference::ColumnVerifier verifier(a.threads);
    const auto start = std::chrono::steady_clock::now();
    const auto tally = verifier.run(batch, mode_of(a), results.data());
    const double seconds = seconds_since(start);
    write_columns_out(a, dir, results);
    return report(a, local_summary(a, true, verifier.threads(), tally.valid, tally.invalid, seconds));
}

// Through sigverifyd (Opcode::verify_columns).
int verify_columns_daemon(const VerifyArgs& a, ColumnDir& dir) {
    DaemonFailure failure;
    auto c = connect_daemon(a.runtime_dir, "sigverify-cli", "verify", a.timeout_ms, &failure);
    if (!c) return report_unreachable(a, failure);
    auto& t = dir.table;
    const wire::ColumnSpan cols = t.view();
    std::vector<std::uint8_t> results(a.collect ? 0 : t.count);
    const std::uint8_t label = dir.row_table ? static_cast<std::uint8_t>(*dir.row_table) : shm::kTableUnspecified;
    const auto start = std::chrono::steady_clock::now();
    const BatchResult r = c->run_columns(cols, mode_of(a), results.data(), label);
    const double seconds = seconds_since(start);
    if (!r.ok()) return report_daemon_failure(a, *c, "column batch", r);
    write_columns_out(a, dir, results);
    return report(a, daemon_summary(a, true, *c, r, seconds));
}

int verify_columns(const VerifyArgs& a) {
    for (const char* flag : {"--in", "--table", "--key-size", "--sig-format", "--baseline"}) {
        if (g_cmd->count(flag)) {
            std::fprintf(stderr, "sigverify verify: %s does not apply to --columns (the manifest describes the columns)\n",
                         flag);
            return int(ExitCode::usage);
        }
    }
    if (a.collect && a.out.empty()) {
        std::fprintf(stderr, "sigverify verify: --collect writes the collected correlate column and needs --out FILE\n");
        return int(ExitCode::usage);
    }
    ColumnDir dir = load_column_dir(a.columns);
    return a.local ? verify_columns_local(a, dir) : verify_columns_daemon(a, dir);
}

}  // namespace

CLI::App* add_verify_subcommand(CLI::App& app) {
    const auto table_check = CLI::IsMember({"ecdsa", "multisig", "schnorr", "threshold"});
    const auto sig_check = CLI::IsMember({"opaque", "compact"});
    VerifyArgs& a = g_args;
    auto* cmd = app.add_subcommand("verify", "Verify a row file (--in) or a column directory (--columns), through sigverifyd or --local: "
                                   "one result byte per row, or collect mode");
    g_cmd = cmd;
    cmd->add_flag("--local", a.local, "Verify in this process with libsecp256k1 instead of through sigverifyd");
    cmd->add_option("--table", a.table, "Table: ecdsa, multisig, schnorr, threshold (required with --in)")->check(table_check);
    cmd->add_option("--key-size", a.tail_size, "Tail bytes per row (default: the table's canonical tail)")
        ->check(CLI::Range(0, 255));
    cmd->add_option("--sig-format", a.sig_format, "ECDSA signature encoding: opaque or compact")
        ->check(sig_check)->capture_default_str();
    cmd->add_flag("--collect", a.collect,
                  "Collect mode: write the rows with the tail of every valid row zeroed (needs --out)");
    cmd->add_option("--threads", a.threads, "Verifier threads for --local (0 = all cores)")->capture_default_str();
    cmd->add_option("--in", a.in, "Row file to verify (or --columns DIR)")->check(CLI::ExistingFile);
    cmd->add_option("--out", a.out, "Results mode: one byte per row (1 valid, 0 invalid); collect mode: the rows");
    cmd->add_flag("--strict", a.strict, "Exit with status 1 when any row is invalid");
    cmd->add_flag("--json", a.json,
                  "Print the summary as one JSON object (rows, valid, invalid, seconds, rows_per_second, status, ...)");
    cmd->add_flag("--baseline", a.baseline,
                  "Also time plain single-threaded libsecp256k1 calls on the same rows (--local)");
    cmd->add_option("--runtime-dir", a.runtime_dir,
                    "sigverifyd runtime directory (daemon mode; default $SIGVERIFY_RUNTIME_DIR or /run/sigverifyd)");
    cmd->add_option("--timeout-ms", a.timeout_ms,
                    "Daemon mode: how long sigverifyd may leave the batch unanswered (a stopped or hung daemon) "
                    "before the command fails with timeout, writing no verdicts")
        ->check(CLI::Range(1u, 3600000u))
        ->capture_default_str();
    cmd->add_option("--columns", a.columns,
                    "Verify a column directory (columns.json + message, key, signature[, correlate]; "
                    "see docs/columns.md) instead of a row file. Results: --out gets one byte per row; "
                    "--collect: --out gets the correlate column with valid entries zeroed")
        ->check(CLI::ExistingDirectory);
    return cmd;
}

int run_verify() { return g_args.columns.empty() ? verify_rows(g_args) : verify_columns(g_args); }

}  // namespace sigverify::cli
