// SPDX-License-Identifier: MIT
#include "reference/columns.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "reference/group_verdicts.hpp"
#include "reference/parallel_for.hpp"
#include "shm_protocol/verdict_publish.hpp"
#include "sigverify/shm_protocol/group_fields.hpp"

namespace sigverify::reference {

ColumnError bind_columns(RecordKind kind, SigEncoding encoding, std::size_t tail_size,
                         std::span<const std::uint8_t> message, std::span<const std::uint8_t> key,
                         std::span<const std::uint8_t> signature, std::span<std::uint8_t> correlate,
                         ColumnSpan& out) {
    ColumnSpan b;
    b.kind = kind;
    b.encoding = encoding;
    b.tail_size = tail_size;
    if (kind != RecordKind::ecdsa && kind != RecordKind::schnorr) return ColumnError::bad_kind;
    if (tail_size > wire::kMaxTailSize) return ColumnError::bad_tail_size;
    if (message.size() % wire::kColumnMessageWidth != 0) return ColumnError::message_size;
    b.count = message.size() / wire::kColumnMessageWidth;
    // count <= SIZE_MAX / 32, so count * 33 may overflow: compare by division.
    const std::size_t kw = wire::column_key_width(kind);
    if (key.size() % kw != 0 || key.size() / kw != b.count) return ColumnError::key_size;
    if (signature.size() % wire::kColumnSignatureWidth != 0 ||
        signature.size() / wire::kColumnSignatureWidth != b.count)
        return ColumnError::signature_size;
    if (tail_size == 0) {
        if (!correlate.empty()) return ColumnError::correlate_size;
    } else if (correlate.size() % tail_size != 0 || correlate.size() / tail_size != b.count) {
        return ColumnError::correlate_size;
    }
    b.message = message.data();
    b.key = key.data();
    b.signature = signature.data();
    b.correlate = tail_size ? correlate.data() : nullptr;
    if (const ColumnError e = b.check(); e != ColumnError::none) return e;
    out = b;
    return ColumnError::none;
}

void assemble_record(const ColumnSpan& c, std::size_t i, std::uint8_t* record) {
    const std::size_t kw = wire::column_key_width(c.kind);
    std::memcpy(record, c.message_at(i), wire::kColumnMessageWidth);
    std::memcpy(record + wire::kColumnMessageWidth, c.key_at(i), kw);
    std::memcpy(record + wire::kColumnMessageWidth + kw, c.signature_at(i), wire::kColumnSignatureWidth);
}

bool verify_column_row(const RowVerifier& verifier, const ColumnSpan& c, std::size_t i) {
    std::uint8_t record[wire::kEcdsaRecordSize];
    assemble_record(c, i, record);
    return c.kind == RecordKind::ecdsa ? verifier.verify_ecdsa(record, c.encoding) : verifier.verify_schnorr(record);
}

Tally run_columns(const RowVerifier& verifier, const ColumnSpan& c, std::size_t begin, std::size_t end,
                  Mode mode, std::uint8_t* results) {
    return verify_and_publish([&](std::size_t i) { return verify_column_row(verifier, c, i); },
                              wire::correlate_tails(c.correlate, c.tail_size), begin, std::min(end, c.count), mode,
                              results);
}

// Verifier's column calls (reference_verifier.hpp): the row calls' pool and
// checks, each row assembled from the columns.
Tally Verifier::verify(const ColumnSpan& columns, std::uint8_t* results) {
    return run(columns, Mode::results, results);
}

Tally Verifier::collect(const ColumnSpan& columns) { return run(columns, Mode::collect, nullptr); }

Tally Verifier::run(const ColumnSpan& c, Mode mode, std::uint8_t* results) {
    if (const ColumnError e = c.check(); e != ColumnError::none)
        throw std::invalid_argument("reference::Verifier: " + std::string(to_string(e)));
    prepare(c.count, mode, results);
    return sum_over<Tally>(*pool_, c.count, [&](unsigned w, std::size_t begin, std::size_t end) {
        return run_columns(*verifiers_[w], c, begin, end, mode, results);
    });
}

// ---------------------------------------------------------------------------
// Conversions
// ---------------------------------------------------------------------------

std::string_view to_string(CorrelateLayout l) {
    switch (l) {
    case CorrelateLayout::none: return "none";
    case CorrelateLayout::tail: return "tail";
    case CorrelateLayout::libbitcoin: return "libbitcoin";
    }
    return "?";
}

std::optional<CorrelateLayout> parse_correlate_layout(std::string_view s) {
    if (s == "none") return CorrelateLayout::none;
    if (s == "tail") return CorrelateLayout::tail;
    if (s == "libbitcoin") return CorrelateLayout::libbitcoin;
    return std::nullopt;
}

ColumnSpan ColumnTable::view() {
    return ColumnSpan{kind,          encoding,         count,           tail_size,
                      message.data(), key.data(), signature.data(), tail_size != 0 ? correlate.data() : nullptr};
}

namespace {

void require_libbitcoin_table(RecordKind kind, std::optional<wire::Table> table, std::size_t tail_size,
                              bool check_key_size) {
    if (!table)
        throw std::invalid_argument("libbitcoin correlate layout needs the table (ecdsa, multisig, schnorr, threshold)");
    if (wire::record_kind(*table) != kind)
        throw std::invalid_argument("table " + std::string(wire::to_string(*table)) + " does not hold " +
                                    std::string(wire::to_string(kind)) + " records");
    if (check_key_size && tail_size != wire::canonical_tail_size(*table))
        throw std::invalid_argument("libbitcoin correlate layout needs the canonical tail of table " +
                                    std::string(wire::to_string(*table)) + " (key_size " +
                                    std::to_string(wire::canonical_tail_size(*table)) + ")");
}

}  // namespace

ColumnTable rows_to_columns(const RowSpan& rows, CorrelateLayout layout, std::optional<wire::Table> table) {
    if (!rows.valid()) throw std::invalid_argument("rows_to_columns: invalid row span");
    ColumnTable t;
    t.kind = rows.kind;
    t.encoding = rows.encoding;
    t.count = rows.count;
    switch (layout) {
    case CorrelateLayout::none: t.tail_size = 0; break;
    case CorrelateLayout::tail: t.tail_size = rows.tail_size; break;
    case CorrelateLayout::libbitcoin:
        require_libbitcoin_table(rows.kind, table, rows.tail_size, true);
        t.tail_size = libbitcoin_correlate_size(rows.kind);
        break;
    default: throw std::invalid_argument("rows_to_columns: unknown correlate layout");
    }
    const std::size_t kw = wire::column_key_width(rows.kind);
    const std::size_t record = wire::record_size(rows.kind);
    // Single signatures: each its own group (group_verdicts.hpp numbering).
    std::vector<GroupRow> singles;
    if (layout == CorrelateLayout::libbitcoin && *table == wire::Table::ecdsa) {
        std::vector<std::uint32_t> fks(rows.count);
        for (std::size_t i = 0; i < rows.count; ++i) fks[i] = wire::read_u24le(rows.row(i) + record);
        singles = single_signature_group_rows(fks);
    }
    t.message.resize(rows.count * wire::kColumnMessageWidth);
    t.key.resize(rows.count * kw);
    t.signature.resize(rows.count * wire::kColumnSignatureWidth);
    t.correlate.resize(rows.count * t.tail_size);
    for (std::size_t i = 0; i < rows.count; ++i) {
        const std::uint8_t* row = rows.row(i);
        std::memcpy(t.message.data() + i * wire::kColumnMessageWidth, row, wire::kColumnMessageWidth);
        std::memcpy(t.key.data() + i * kw, row + wire::kColumnMessageWidth, kw);
        std::memcpy(t.signature.data() + i * wire::kColumnSignatureWidth, row + wire::kColumnMessageWidth + kw,
                    wire::kColumnSignatureWidth);
        const std::uint8_t* tail = row + record;
        std::uint8_t* out = t.correlate.data() + i * t.tail_size;
        if (layout == CorrelateLayout::tail) {
            if (t.tail_size) std::memcpy(out, tail, t.tail_size);
        } else if (layout == CorrelateLayout::libbitcoin) {
            switch (*table) {
            case wire::Table::ecdsa:
                write_ecdsa_correlate(out, {wire::read_u24le(tail), 0, singles[i].group});
                break;
            case wire::Table::multisig: {
                const GroupRow g = sigverify::read_group_tail(tail);
                write_ecdsa_correlate(out, {g.block_fk, g.mn, g.group});
                break;
            }
            case wire::Table::schnorr: std::memcpy(out, tail, 3); break;
            case wire::Table::threshold: std::memcpy(out, tail + 3, 3); break;
            }
        }
    }
    return t;
}

std::vector<std::uint8_t> columns_to_rows(const ColumnSpan& c, CorrelateLayout layout,
                                          std::optional<wire::Table> table) {
    if (const ColumnError e = c.check(); e != ColumnError::none)
        throw std::invalid_argument("columns_to_rows: " + std::string(to_string(e)));
    std::size_t tail_size = 0;
    switch (layout) {
    case CorrelateLayout::none: tail_size = 0; break;
    case CorrelateLayout::tail: tail_size = c.tail_size; break;
    case CorrelateLayout::libbitcoin:
        require_libbitcoin_table(c.kind, table, 0, false);
        if (*table == wire::Table::threshold)
            throw std::invalid_argument("columns_to_rows: the Schnorr correlate has no mn or group; threshold rows "
                                        "cannot be rebuilt from it");
        if (c.tail_size != libbitcoin_correlate_size(c.kind))
            throw std::invalid_argument("columns_to_rows: libbitcoin correlate of " +
                                        std::string(wire::to_string(c.kind)) + " rows is " +
                                        std::to_string(libbitcoin_correlate_size(c.kind)) + " bytes, not " +
                                        std::to_string(c.tail_size));
        tail_size = wire::canonical_tail_size(*table);
        break;
    default: throw std::invalid_argument("columns_to_rows: unknown correlate layout");
    }
    const std::size_t stride = wire::stride(c.kind, tail_size);
    const std::size_t record = wire::record_size(c.kind);
    std::vector<std::uint8_t> rows(c.count * stride);
    for (std::size_t i = 0; i < c.count; ++i) {
        std::uint8_t* row = rows.data() + i * stride;
        assemble_record(c, i, row);
        std::uint8_t* tail = row + record;
        if (layout != CorrelateLayout::libbitcoin) {
            if (tail_size) std::memcpy(tail, c.correlate_at(i), tail_size);
            continue;
        }
        const std::uint8_t* corr = c.correlate_at(i);
        switch (*table) {
        case wire::Table::ecdsa: std::memcpy(tail, corr, 3); break;  // id -> block_fk
        case wire::Table::multisig: {
            const EcdsaCorrelate e = read_ecdsa_correlate(corr);
            sigverify::write_group_tail(tail, {e.pair, e.group, e.id});
            break;
        }
        case wire::Table::schnorr: std::memcpy(tail, corr, 3); break;
        case wire::Table::threshold: break;  // rejected above
        }
    }
    return rows;
}

}  // namespace sigverify::reference
