// SPDX-License-Identifier: MIT
#include "client/cli/columns_commands.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "reference/group_verdicts.hpp"
#include "reference/reference_verifier.hpp"
#include "sigverify/shm_protocol/group_fields.hpp"

namespace sigverify::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using wire::ColumnSpan;
using reference::ColumnError;
using reference::CorrelateLayout;

constexpr const char* kManifest = "columns.json";
constexpr const char* kFormat = "sigverify-columns";
constexpr int kVersion = 1;

std::vector<std::uint8_t> read_whole(const fs::path& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in) throw InputError(path.string() + ": cannot open: " + std::strerror(errno));
    const auto size = std::size_t(in.tellg());
    std::vector<std::uint8_t> bytes(size);
    in.seekg(0);
    if (size && !in.read(reinterpret_cast<char*>(bytes.data()), std::streamsize(size)))
        throw InputError(path.string() + ": read failed");
    return bytes;
}

template <class T>
T manifest_field(const json& m, const char* name, const std::string& where) {
    if (!m.contains(name)) throw InputError(where + ": manifest lacks \"" + name + "\"");
    try {
        return m.at(name).get<T>();
    } catch (const json::exception&) {
        throw InputError(where + ": manifest field \"" + name + "\" has the wrong type");
    }
}

}  // namespace

ColumnDir load_column_dir(const std::string& dir) {
    const fs::path base(dir);
    const fs::path manifest_path = base / kManifest;
    const auto manifest_bytes = read_whole(manifest_path);
    json m;
    try {
        m = json::parse(manifest_bytes.begin(), manifest_bytes.end());
    } catch (const json::exception& e) {
        throw InputError(manifest_path.string() + ": not JSON: " + e.what());
    }
    const std::string where = manifest_path.string();
    if (!m.is_object() || m.value("format", "") != kFormat)
        throw InputError(where + ": not a sigverify column manifest (\"format\": \"" + kFormat + "\")");
    if (manifest_field<int>(m, "version", where) != kVersion)
        throw InputError(where + ": unsupported manifest version (this build reads version 1)");

    ColumnDir out;
    auto& t = out.table;
    const auto kind = manifest_field<std::string>(m, "kind", where);
    if (kind == "ecdsa") t.kind = wire::RecordKind::ecdsa;
    else if (kind == "schnorr") t.kind = wire::RecordKind::schnorr;
    else throw InputError(where + ": \"kind\" must be ecdsa or schnorr");
    const auto encoding = wire::parse_sig_encoding(m.value("encoding", std::string("opaque")));
    if (!encoding) throw InputError(where + ": \"encoding\" must be opaque or compact");
    t.encoding = *encoding;
    const auto count = manifest_field<std::uint64_t>(m, "count", where);
    const auto tail_size = manifest_field<std::uint64_t>(m, "tail_size", where);
    if (tail_size > wire::kMaxTailSize) throw InputError(where + ": \"tail_size\" must be 0..255");
    t.tail_size = std::size_t(tail_size);
    const auto layout = reference::parse_correlate_layout(m.value("correlate", std::string(tail_size ? "tail" : "none")));
    if (!layout) throw InputError(where + ": \"correlate\" must be none, tail or libbitcoin");
    out.correlate = *layout;
    if ((*layout == CorrelateLayout::none) != (tail_size == 0))
        throw InputError(where + ": \"correlate\": \"none\" goes with tail_size 0 and only with it");
    if (m.contains("table") && !m.at("table").is_null()) {
        const auto table = wire::parse_table(manifest_field<std::string>(m, "table", where));
        if (!table) throw InputError(where + ": \"table\" must be ecdsa, multisig, schnorr or threshold");
        if (wire::record_kind(*table) != t.kind)
            throw InputError(where + ": table " + std::string(wire::to_string(*table)) + " does not hold " + kind +
                             " records");
        out.row_table = table;
    }
    if (*layout == CorrelateLayout::libbitcoin && tail_size != reference::libbitcoin_correlate_size(t.kind))
        throw InputError(where + ": the libbitcoin " + kind + " correlate is " +
                         std::to_string(reference::libbitcoin_correlate_size(t.kind)) + " bytes");

    t.message = read_whole(base / "message");
    t.key = read_whole(base / "key");
    t.signature = read_whole(base / "signature");
    if (tail_size) t.correlate = read_whole(base / "correlate");
    ColumnSpan batch;
    const ColumnError e = reference::bind_columns(t.kind, t.encoding, t.tail_size, t.message, t.key, t.signature,
                                                  t.correlate, batch);
    if (e != ColumnError::none) throw InputError(dir + ": " + std::string(wire::to_string(e)));
    if (batch.count != count)
        throw InputError(dir + ": the manifest names " + std::to_string(count) + " rows, the columns hold " +
                         std::to_string(batch.count));
    t.count = batch.count;
    return out;
}

void write_column_dir(const std::string& dir, ColumnDir& c) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw InputError(dir + ": cannot create: " + ec.message());
    const fs::path base(dir);
    auto& t = c.table;
    write_file_atomically((base / "message").string(), t.message.data(), t.message.size());
    write_file_atomically((base / "key").string(), t.key.data(), t.key.size());
    write_file_atomically((base / "signature").string(), t.signature.data(), t.signature.size());
    if (t.tail_size) {
        write_file_atomically((base / "correlate").string(), t.correlate.data(), t.correlate.size());
    } else {
        fs::remove(base / "correlate", ec);  // a stale one would contradict the manifest
    }
    json m = {{"format", kFormat},
              {"version", kVersion},
              {"kind", std::string(wire::to_string(t.kind))},
              {"count", t.count},
              {"encoding", std::string(wire::to_string(t.encoding))},
              {"tail_size", t.tail_size},
              {"correlate", std::string(reference::to_string(c.correlate))}};
    if (c.row_table) m["table"] = std::string(wire::to_string(*c.row_table));
    const std::string text = m.dump(2) + "\n";
    // The manifest last: a directory with a manifest is complete.
    write_file_atomically((base / kManifest).string(), reinterpret_cast<const std::uint8_t*>(text.data()),
                          text.size());
}

// ---------------------------------------------------------------------------
// columns and groups subcommands
// ---------------------------------------------------------------------------
namespace {

struct ColumnsArgs {
    std::string from_rows;
    std::string to_rows;
    std::string table;
    std::optional<std::size_t> tail_size;
    std::string sig_format = "opaque";
    std::string correlate = "tail";
    std::string out;
};

struct GroupsArgs {
    std::string table;
    std::string in;
    std::string columns;
    std::string sig_format = "opaque";
    std::string results;
    unsigned threads = 0;
    bool all = false;
    std::string json_out;
    bool strict = false;
};

struct State {
    CLI::App* columns_cmd = nullptr;
    CLI::App* groups_cmd = nullptr;
    ColumnsArgs columns;
    GroupsArgs groups;
};

State& state() {
    static State s;
    return s;
}

std::string flag_names(std::uint8_t flags) {
    std::string s;
    const auto add = [&](std::uint8_t bit, const char* name) {
        if (flags & bit) s += s.empty() ? name : std::string(",") + name;
    };
    add(reference::kGroupUnmatched, "unmatched");
    add(reference::kGroupDuplicates, "duplicate-rows");
    add(reference::kGroupInconsistentM, "inconsistent-m");
    add(reference::kGroupZeroM, "zero-m");
    add(reference::kGroupShort, "short");
    add(reference::kGroupFailedRow, "failed-row");
    return s;
}

int run_columns(const ColumnsArgs& a) {
    if (!a.from_rows.empty()) {
        if (a.table.empty()) {
            std::fprintf(stderr, "sigverify columns: --from-rows needs --table\n");
            return int(ExitCode::usage);
        }
        const RowFile file = load_row_file(a.from_rows, a.table, a.tail_size, a.sig_format);
        std::vector<std::uint8_t> bytes = file.bytes;
        const wire::RowSpan span = file.span(bytes);
        const auto table = *wire::parse_table(a.table);
        const auto layout = *reference::parse_correlate_layout(a.correlate);
        if (layout == CorrelateLayout::libbitcoin && table == wire::Table::threshold &&
            span.tail_size == wire::canonical_tail_size(table)) {
            // libbitcoin's Schnorr correlate carries no m: every row is judged
            // alone, which is right only for spends satisfied when all their
            // signatures verify (the only ones libbitcoin captures).
            const auto bad = reference::unsatisfiable_threshold_groups(
                reference::group_rows_from_rows(span, reference::GroupKind::threshold));
            if (!bad.empty())
                throw InputError(a.from_rows + ": " + std::to_string(bad.size()) +
                                 " threshold groups fail even with every signature valid (first: block " +
                                 std::to_string(bad.front().block_fk) + " group " + std::to_string(bad.front().group) +
                                 ", " + flag_names(bad.front().flags) +
                                 "); the libbitcoin correlate has no m to fail them by (use --correlate tail)");
        }
        ColumnDir dir;
        try {
            dir.table = reference::rows_to_columns(span, layout, table);
        } catch (const std::invalid_argument& e) {
            throw InputError(e.what());
        }
        dir.correlate = layout;
        // The table travels in the manifest when the tails are the table's own.
        if (span.tail_size == wire::canonical_tail_size(table)) dir.row_table = table;
        write_column_dir(a.out, dir);
        std::printf("%zu %s rows -> %s: message, key (%zu bytes), signature%s (correlate %s, %zu bytes per row)\n",
                    span.count, a.table.c_str(), a.out.c_str(), wire::column_key_width(span.kind),
                    dir.table.tail_size ? ", correlate" : "", a.correlate.c_str(), dir.table.tail_size);
        return int(ExitCode::ok);
    }
    ColumnDir dir = load_column_dir(a.to_rows);
    std::vector<std::uint8_t> rows;
    try {
        rows = reference::columns_to_rows(dir.table.view(), dir.correlate, dir.row_table);
    } catch (const std::invalid_argument& e) {
        throw InputError(a.to_rows + ": " + e.what());
    }
    write_file_atomically(a.out, rows.data(), rows.size());
    const std::size_t stride = dir.table.count ? rows.size() / dir.table.count : 0;
    std::printf("%zu %s rows (stride %zu) <- %s -> %s\n", dir.table.count,
                std::string(wire::to_string(dir.table.kind)).c_str(), stride, a.to_rows.c_str(), a.out.c_str());
    return int(ExitCode::ok);
}

int run_groups(const GroupsArgs& a) {
    const bool from_columns = !a.columns.empty();
    if (from_columns == !a.in.empty()) {
        std::fprintf(stderr, "sigverify groups: give exactly one of --in FILE (with --table) or --columns DIR\n");
        return int(ExitCode::usage);
    }
    reference::GroupKind kind{};
    bool single = false;  // ecdsa/schnorr table: each row its own one-row group (multisig rule, 1-of-1)
    std::vector<reference::GroupRow> rows;
    std::vector<std::uint8_t> verdicts;
    const auto verify_here = [&](auto&& run) {
        if (!a.results.empty()) return;
        verdicts.resize(rows.size());
        run();
    };
    if (!from_columns) {
        if (a.table.empty()) {
            std::fprintf(stderr, "sigverify groups: --in needs --table ecdsa, multisig, schnorr or threshold\n");
            return int(ExitCode::usage);
        }
        single = a.table == "ecdsa" || a.table == "schnorr";
        kind = a.table == "threshold" ? reference::GroupKind::threshold : reference::GroupKind::multisig;
        RowFile file = load_row_file(a.in, a.table, std::nullopt, a.sig_format);
        const wire::RowSpan span = file.span(file.bytes);
        if (single) {
            if (span.tail_size != 3) throw InputError(a.in + ": single-signature rows need the canonical tail block_fk[3]");
            std::vector<std::uint32_t> fks(span.count);
            for (std::size_t i = 0; i < span.count; ++i)
                fks[i] = wire::read_u24le(span.row(i) + wire::record_size(span.kind));
            rows = reference::single_signature_group_rows(fks);
        } else {
            rows = reference::group_rows_from_rows(span, kind);
        }
        verify_here([&] { reference::Verifier(a.threads).verify(span, verdicts.data()); });
    } else {
        if (!a.table.empty()) {
            std::fprintf(stderr, "sigverify groups: --table does not apply to --columns (the manifest names it)\n");
            return int(ExitCode::usage);
        }
        ColumnDir dir = load_column_dir(a.columns);
        const ColumnSpan batch = dir.table.view();
        if ((dir.correlate == CorrelateLayout::libbitcoin && batch.kind == wire::RecordKind::schnorr) ||
            (dir.row_table && (*dir.row_table == wire::Table::ecdsa || *dir.row_table == wire::Table::schnorr) &&
             (dir.correlate == CorrelateLayout::libbitcoin ||
              (dir.correlate == CorrelateLayout::tail && batch.tail_size == 3)))) {
            // Each row its own group: single signatures (the correlate starts
            // with id / block_fk; whatever group number it carries, so columns
            // written before each single got its own carry group 0 are judged
            // right), and every row of libbitcoin's Schnorr correlate, threshold
            // rows included: it holds only the id, and libbitcoin fails a block
            // on any failed Schnorr row (a threshold spend is captured only when
            // it is satisfied with all its signatures valid).
            single = true;
            kind = reference::GroupKind::multisig;
            std::vector<std::uint32_t> fks(batch.count);
            for (std::size_t i = 0; i < batch.count; ++i) fks[i] = wire::read_u24le(batch.correlate_at(i));
            rows = reference::single_signature_group_rows(fks);
        } else if (dir.correlate == CorrelateLayout::libbitcoin && batch.kind == wire::RecordKind::ecdsa) {
            kind = reference::GroupKind::multisig;
            rows = reference::group_rows_from_correlate(batch);
        } else if (dir.correlate == CorrelateLayout::tail && dir.row_table &&
                   (*dir.row_table == wire::Table::multisig || *dir.row_table == wire::Table::threshold) &&
                   batch.tail_size == wire::canonical_tail_size(*dir.row_table)) {
            kind = *dir.row_table == wire::Table::multisig ? reference::GroupKind::multisig
                                                           : reference::GroupKind::threshold;
            rows.resize(batch.count);
            for (std::size_t i = 0; i < batch.count; ++i) rows[i] = sigverify::read_group_tail(batch.correlate_at(i));
        } else {
            throw InputError(a.columns +
                             ": group verdicts need the libbitcoin correlate (ECDSA or Schnorr), or a table named in "
                             "the manifest whose correlate is the canonical row tail");
        }
        verify_here([&] { reference::ColumnVerifier(a.threads).verify(batch, verdicts.data()); });
    }
    if (!a.results.empty()) {
        verdicts = [&] {
            std::ifstream in(a.results, std::ios::binary);
            if (!in) throw InputError(a.results + ": cannot open: " + std::strerror(errno));
            return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(in), {});
        }();
        if (verdicts.size() != rows.size())
            throw InputError(a.results + ": " + std::to_string(verdicts.size()) + " result bytes for " +
                             std::to_string(rows.size()) + " rows");
    }

    const auto report = reference::compute_group_verdicts(kind, rows, verdicts);
    const std::string label = single ? "single" : std::string(reference::to_string(kind));
    std::uint64_t valid_rows = 0;
    for (auto v : verdicts) valid_rows += v != 0;
    std::printf("groups (%s): rows=%zu valid=%llu skipped=%llu groups=%zu failed=%llu blocks=%zu failed=%llu\n",
                label.c_str(), rows.size(), (unsigned long long)valid_rows,
                (unsigned long long)report.skipped_rows, report.groups.size(),
                (unsigned long long)report.failed_groups, report.blocks.size(),
                (unsigned long long)report.failed_blocks);
    if (report.skipped_rows) {
        std::printf("skipped %llu rows whose block_fk is FF FF FF (still being written); first:",
                    (unsigned long long)report.skipped_rows);
        for (auto i : report.first_skipped) std::printf(" %zu", i);
        std::printf("\n");
    }
    if (report.inconsistent_groups)
        std::printf("%llu groups carry an inconsistent or zero required count m\n",
                    (unsigned long long)report.inconsistent_groups);
    for (const auto& g : report.groups) {
        if (g.pass && !a.all) continue;
        const std::string flags = flag_names(g.flags);
        std::printf("group block=%u group=%u %s rows=%u valid=%u m=%u%s%s\n", g.block_fk, unsigned(g.group),
                    g.pass ? "pass" : "FAIL", g.rows, g.valid_rows, g.required, flags.empty() ? "" : " ",
                    flags.c_str());
    }
    for (const auto& b : report.blocks)
        std::printf("block %u %s groups=%u failed=%u\n", b.block_fk, b.all_groups_pass ? "pass" : "FAIL", b.groups,
                    b.failed_groups);

    if (!a.json_out.empty()) {
        json j = {{"kind", label},
                  {"rows", rows.size()},
                  {"skipped_rows", report.skipped_rows},
                  {"first_skipped", report.first_skipped},
                  {"inconsistent_groups", report.inconsistent_groups},
                  {"failed_groups", report.failed_groups},
                  {"failed_blocks", report.failed_blocks}};
        json groups = json::array(), blocks = json::array();
        for (const auto& g : report.groups)
            groups.push_back({{"block_fk", g.block_fk}, {"group", g.group}, {"pass", g.pass}, {"rows", g.rows},
                              {"valid_rows", g.valid_rows}, {"required", g.required}, {"flags", flag_names(g.flags)}});
        for (const auto& b : report.blocks)
            blocks.push_back({{"block_fk", b.block_fk}, {"pass", b.all_groups_pass}, {"groups", b.groups},
                              {"failed_groups", b.failed_groups}});
        j["groups"] = std::move(groups);
        j["blocks"] = std::move(blocks);
        const std::string text = j.dump(1) + "\n";
        write_file_atomically(a.json_out, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
    }
    return a.strict && report.failed_groups ? int(ExitCode::invalid_rows) : int(ExitCode::ok);
}

}  // namespace

void add_column_subcommands(CLI::App& app) {
    State& s = state();
    const auto table_check = CLI::IsMember({"ecdsa", "multisig", "schnorr", "threshold"});
    const auto sig_check = CLI::IsMember({"opaque", "compact"});

    auto* c = app.add_subcommand("columns", "Convert between a row file and a column directory (docs/columns.md)");
    s.columns_cmd = c;
    auto* from = c->add_option("--from-rows", s.columns.from_rows, "Row file to split into columns")
                     ->check(CLI::ExistingFile);
    auto* to = c->add_option("--to-rows", s.columns.to_rows, "Column directory to pack into a row file")
                   ->check(CLI::ExistingDirectory);
    from->excludes(to);
    c->add_option("--table", s.columns.table, "Table of the row file (--from-rows): ecdsa, multisig, schnorr, threshold")
        ->check(table_check);
    c->add_option("--key-size", s.columns.tail_size, "Tail bytes per row (default: the table's canonical tail)")
        ->check(CLI::Range(0, 255));
    c->add_option("--sig-format", s.columns.sig_format, "ECDSA signature encoding: opaque or compact")
        ->check(sig_check)
        ->capture_default_str();
    c->add_option("--correlate", s.columns.correlate,
                  "Correlate column (--from-rows): tail (the row tail verbatim), libbitcoin (id[3] || pair || "
                  "group[2] for ECDSA, id[3] for Schnorr; needs the canonical tail), none")
        ->check(CLI::IsMember({"tail", "libbitcoin", "none"}))
        ->capture_default_str();
    c->add_option("--out", s.columns.out, "Output: a column directory (--from-rows) or a row file (--to-rows)")
        ->required();

    auto* g = app.add_subcommand("groups",
                                 "Group verdicts (multisig m-of-n, threshold, single signatures) and per-block pass/fail "
                                 "(docs/columns.md)");
    s.groups_cmd = g;
    g->add_option("--table", s.groups.table,
                  "Table of --in: multisig, threshold, or ecdsa/schnorr (each single signature its own group)")
        ->check(table_check);
    g->add_option("--in", s.groups.in, "Row file with the canonical tail (mn || group || block_fk, or block_fk)")
        ->check(CLI::ExistingFile);
    g->add_option("--columns", s.groups.columns,
                  "Column directory instead of --in: the libbitcoin correlate (ECDSA: multisig groups and singles; "
                  "Schnorr, threshold rows included: each row alone), or a table with the row tail as correlate")
        ->check(CLI::ExistingDirectory);
    g->add_option("--sig-format", s.groups.sig_format, "ECDSA signature encoding of --in: opaque or compact")
        ->check(sig_check)
        ->capture_default_str();
    g->add_option("--results", s.groups.results,
                  "Per-row verdicts (1 byte per row, as `sigverify verify --out` writes); "
                  "without it the rows are verified here with libsecp256k1");
    g->add_option("--threads", s.groups.threads, "Verifier threads when verifying here (0 = all cores)")
        ->capture_default_str();
    g->add_flag("--all", s.groups.all, "Print every group, not only the failing ones");
    g->add_option("--json", s.groups.json_out, "Also write the whole report as JSON to this file");
    g->add_flag("--strict", s.groups.strict, "Exit with status 1 when any group fails");
}

int run_column_subcommand(const CLI::App&) {
    State& s = state();
    if (s.columns_cmd && s.columns_cmd->parsed()) {
        if (s.columns.from_rows.empty() == s.columns.to_rows.empty()) {
            std::fprintf(stderr, "sigverify columns: give exactly one of --from-rows FILE or --to-rows DIR\n");
            return int(ExitCode::usage);
        }
        return run_columns(s.columns);
    }
    if (s.groups_cmd && s.groups_cmd->parsed()) return run_groups(s.groups);
    return -1;
}

}  // namespace sigverify::cli
