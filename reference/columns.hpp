// SPDX-License-Identifier: MIT
// Column tables: the batch as libbitcoin keeps it since mid-2026, one array
// per field instead of packed rows.
//
// A column batch of n rows is
//     message[n][32]                      the 32-byte message hash
//     key[n][33]   (ECDSA, compressed SEC1: 0x02/0x03 || x big-endian)
//     key[n][32]   (Schnorr, x-only, big-endian)
//     signature[n][64]                    ECDSA: opaque (r LE || s LE) or compact
//                                         (r BE || s BE), chosen per call;
//                                         Schnorr: BIP-340 R.x || s, big-endian
//     correlate[n][tail_size]             optional (tail_size 0..255; 0 = none),
//                                         never interpreted by verification
//
// Verdicts are exactly the row path's: row i of the columns is verified as the
// record message[i] || key[i] || signature[i] (assembled in a stack buffer and
// handed to RowVerifier), so every rule of reference_verifier.hpp applies
// (high-S ECDSA valid, bad encodings give 0, a bad row never aborts the batch).
//
// Modes, as for rows (one rule for both: shm_protocol/verdict_publish.hpp):
//   results: one byte per row, zeroed first (fail closed), 1 = valid;
//   collect: the correlate entry of every VALID row is zeroed in place; invalid
//            rows keep theirs. With tail_size 0 collect writes nothing.
//
// libbitcoin's correlate layouts (what a node puts in the correlate column):
//   ECDSA   (6 bytes): id[3] little-endian || pair u8 || group u16 little-endian
//   Schnorr (3 bytes): id[3] little-endian
// id is the 3-byte identity that the row tables carry as block_fk (FF FF FF =
// row still being written); pair is the multisig byte (signature index << 4 |
// key index) and group the multisig group. A single-signature check has pair 0
// and a group of its own (single_signature_group_rows in group_verdicts.hpp:
// per block, 65535 downward), so it reads as a one-row 1-of-1 group.
// The Schnorr correlate has no group or required count: threshold group
// verdicts need the row table's tail (see group_verdicts.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "reference/reference_verifier.hpp"
#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::reference {



// Sizes of libbitcoin's correlate entries.
constexpr std::size_t kEcdsaCorrelateSize = 6;
constexpr std::size_t kSchnorrCorrelateSize = 3;
constexpr std::size_t libbitcoin_correlate_size(RecordKind kind) {
    return kind == RecordKind::ecdsa ? kEcdsaCorrelateSize : kSchnorrCorrelateSize;
}

// A decoded ECDSA correlate entry (Schnorr entries only carry id).
struct EcdsaCorrelate {
    std::uint32_t id = 0;  // 24 bits
    std::uint8_t pair = 0;
    std::uint16_t group = 0;
    friend bool operator==(const EcdsaCorrelate&, const EcdsaCorrelate&) = default;
};

inline EcdsaCorrelate read_ecdsa_correlate(const std::uint8_t* p) {
    return {wire::read_u24le(p), p[3], wire::read_u16le(p + 4)};
}
inline void write_ecdsa_correlate(std::uint8_t* p, const EcdsaCorrelate& c) {
    wire::write_u24le(p, c.id);
    p[3] = c.pair;
    wire::write_u16le(p + 4, c.group);
}

// The column view is wire::ColumnSpan (sigverify/shm_protocol/wire_format.hpp): one
// type for client, daemon and reference; ColumnSpan::check() tells what is
// wrong with one (ColumnError).
using wire::ColumnError;
using wire::ColumnSpan;

// Binds columns given as sized buffers: count = message.size() / 32, and every
// other column must hold exactly count entries (correlate: count * tail_size
// bytes, and may be empty only when tail_size is 0). On success out is set and
// ColumnError::none returned; otherwise out is left unchanged.
ColumnError bind_columns(RecordKind kind, SigEncoding encoding, std::size_t tail_size,
                         std::span<const std::uint8_t> message, std::span<const std::uint8_t> key,
                         std::span<const std::uint8_t> signature, std::span<std::uint8_t> correlate,
                         ColumnSpan& out);

// Copies row i of the columns into an assembled record (129 or 128 bytes).
void assemble_record(const ColumnSpan& columns, std::size_t i, std::uint8_t* record);

// Verdict of row i (single row; no mode, no writes).
bool verify_column_row(const RowVerifier& verifier, const ColumnSpan& columns, std::size_t i);

// Verifies rows [begin, end) on the calling thread.
//   results: results[i] = verdict for i in [begin, end) (results indexes the batch);
//   collect: zeroes the correlate entry of each valid row; results is ignored.
Tally run_columns(const RowVerifier& verifier, const ColumnSpan& columns, std::size_t begin,
                  std::size_t end, Mode mode, std::uint8_t* results);

// The batch verifier for columns is the one for rows (Verifier in
// reference_verifier.hpp: one pool, one set of checks); the name says which
// calls a caller makes.
using ColumnVerifier = Verifier;

// ---------------------------------------------------------------------------
// Conversions between packed rows and columns
// ---------------------------------------------------------------------------

// What goes into the correlate column when rows become columns.
//   none:       no correlate column (tail_size 0)
//   tail:       the row's tail verbatim (the correlate's tail_size is the rows'); lossless
//   libbitcoin: libbitcoin's layout, from the canonical tail of a table:
//                 ecdsa     block_fk        -> id, pair 0, group: each row its own,
//                                              per block from 65535 down (6 bytes)
//                 multisig  mn, group, fk   -> id = fk, pair = mn, group (6 bytes)
//                 schnorr   block_fk        -> id                    (3 bytes)
//                 threshold mn, group, fk   -> id = fk; mn and group are dropped
enum class CorrelateLayout : std::uint8_t { none = 0, tail = 1, libbitcoin = 2 };
std::string_view to_string(CorrelateLayout l);
std::optional<CorrelateLayout> parse_correlate_layout(std::string_view s);

// Columns that own their bytes.
struct ColumnTable {
    RecordKind kind = RecordKind::ecdsa;
    SigEncoding encoding = SigEncoding::opaque;
    std::size_t count = 0;
    std::size_t tail_size = 0;
    std::vector<std::uint8_t> message, key, signature, correlate;

    ColumnSpan view();
};

// Splits rows into columns. layout libbitcoin needs the table whose canonical
// tail the rows carry (rows.tail_size must be canonical_tail_size(*table)).
// Throws std::invalid_argument on an invalid span or a layout/table mismatch.
ColumnTable rows_to_columns(const RowSpan& rows, CorrelateLayout layout,
                            std::optional<wire::Table> table = std::nullopt);

// Packs columns into rows (stride = record + tail_size). With layout tail the
// tail is the correlate entry verbatim (same tail_size); with none the
// rows have no tail (tail_size 0).
// With layout libbitcoin the canonical tail of table is rebuilt from the
// correlate (tail_size = canonical_tail_size(table)); threshold cannot be
// rebuilt (its correlate lacks mn and group) and is rejected, as is a table
// of the other record kind. Throws std::invalid_argument on bad columns.
std::vector<std::uint8_t> columns_to_rows(const ColumnSpan& columns, CorrelateLayout layout,
                                          std::optional<wire::Table> table = std::nullopt);

}  // namespace sigverify::reference
