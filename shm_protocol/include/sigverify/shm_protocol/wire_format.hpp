// SPDX-License-Identifier: MIT
// sigverify wire format: the packed rows a node hands to sigverifyd.
//
// This header is the single owner of the row layouts. Everything that reads or
// writes rows (reference verifier, GPU kernels, daemon, client) takes sizes and
// offsets from here. Layouts are fixed by the libbitcoin bridge; every size and
// offset is pinned by static_assert so no compiler flag can move a byte.
//
// A row is a record followed by an opaque tail of tail_size bytes:
//     stride = record_size(kind) + tail_size,   tail_size in 0..255
// Verification reads only the record; the tail is never interpreted. In collect
// mode the tail of every VALID row is zeroed in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sigverify::wire {

// ---------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------
#pragma pack(push, 1)

// ECDSA check: 32-byte message hash, 33-byte compressed SEC1 key
// (0x02/0x03 || x big-endian), 64-byte signature in the encoding chosen per call
// (see SigEncoding).
struct EcdsaRecord {
    std::uint8_t hash[32];
    std::uint8_t point[33];
    std::uint8_t sig[64];
};

// BIP-340 check: 32-byte message, 32-byte x-only key (big-endian),
// 64-byte signature R.x (big-endian) || s (big-endian).
struct SchnorrRecord {
    std::uint8_t hash[32];
    std::uint8_t xonly[32];
    std::uint8_t sig[64];
};

// The four canonical tables of the bridge. Tails, in bridge order:
//   single tables:          block_fk[3]                    (3 bytes)
//   multisig and threshold: mn u8 || group[2] || block_fk[3] (6 bytes)
// block_fk is 3 bytes little-endian; FF FF FF marks a row still being written.
// multisig mn = (signature index << 4) | key index, 0-based, up to 16 keys;
// keys 16..19 use codes nibbles cannot mean (reference/multisig_pair.hpp).
// threshold mn = the required count m of the group.
// group is 2 bytes little-endian.
struct EcdsaRow {
    EcdsaRecord record;
    std::uint8_t block_fk[3];
};

struct MultisigRow {
    EcdsaRecord record;
    std::uint8_t mn;
    std::uint8_t group[2];
    std::uint8_t block_fk[3];
};

struct SchnorrRow {
    SchnorrRecord record;
    std::uint8_t block_fk[3];
};

struct ThresholdRow {
    SchnorrRecord record;
    std::uint8_t mn;
    std::uint8_t group[2];
    std::uint8_t block_fk[3];
};

#pragma pack(pop)

static_assert(sizeof(EcdsaRecord) == 129);
static_assert(offsetof(EcdsaRecord, hash) == 0);
static_assert(offsetof(EcdsaRecord, point) == 32);
static_assert(offsetof(EcdsaRecord, sig) == 65);
static_assert(sizeof(SchnorrRecord) == 128);
static_assert(offsetof(SchnorrRecord, hash) == 0);
static_assert(offsetof(SchnorrRecord, xonly) == 32);
static_assert(offsetof(SchnorrRecord, sig) == 64);
static_assert(sizeof(EcdsaRow) == 132);
static_assert(offsetof(EcdsaRow, block_fk) == 129);
static_assert(sizeof(MultisigRow) == 135);
static_assert(offsetof(MultisigRow, mn) == 129);
static_assert(offsetof(MultisigRow, group) == 130);
static_assert(offsetof(MultisigRow, block_fk) == 132);
static_assert(sizeof(SchnorrRow) == 131);
static_assert(offsetof(SchnorrRow, block_fk) == 128);
static_assert(sizeof(ThresholdRow) == 134);
static_assert(offsetof(ThresholdRow, mn) == 128);
static_assert(offsetof(ThresholdRow, group) == 129);
static_assert(offsetof(ThresholdRow, block_fk) == 131);
static_assert(alignof(EcdsaRow) == 1 && alignof(MultisigRow) == 1);
static_assert(alignof(SchnorrRow) == 1 && alignof(ThresholdRow) == 1);

// ---------------------------------------------------------------------------
// Enumerations (values are ABI: they travel in shared memory)
// ---------------------------------------------------------------------------

// Which record a row starts with.
enum class RecordKind : std::uint8_t { ecdsa = 0, schnorr = 1 };

// How the 64 signature bytes of an EcdsaRecord are laid out.
//   opaque:  r as 32 bytes little-endian, then s as 32 bytes little-endian
//            (the in-memory secp256k1_ecdsa_signature that libbitcoin stores)
//   compact: r big-endian || s big-endian
enum class SigEncoding : std::uint8_t { opaque = 0, compact = 1 };

// The (kind, encoding) rule, the one home for the library and the daemon: an
// ECDSA signature is opaque or compact; a Schnorr signature has one layout,
// so a caller's encoding for Schnorr rows is ignored (encoding_accepted) and
// the wire carries opaque (wire_encoding), the only value the daemon accepts
// for them (encoding_on_wire_ok, on the entry's raw byte).
// (A kind that is neither is refused by the kind's own check.)
constexpr bool encoding_accepted(RecordKind kind, SigEncoding e) {
    return kind != RecordKind::ecdsa || e == SigEncoding::opaque || e == SigEncoding::compact;
}
constexpr SigEncoding wire_encoding(RecordKind kind, SigEncoding e) {
    return kind == RecordKind::schnorr ? SigEncoding::opaque : e;
}
constexpr bool encoding_on_wire_ok(RecordKind kind, std::uint8_t raw) {
    return raw <= static_cast<std::uint8_t>(SigEncoding::compact) &&
           static_cast<SigEncoding>(raw) == wire_encoding(kind, static_cast<SigEncoding>(raw));
}

// What verification writes.
//   results: one byte per row, 1 = valid, 0 = invalid (zeroed first: fail closed)
//   collect: the tail_size tail of every VALID row is zeroed in place; invalid
//            rows keep their tail, so rows with a non-zero tail are the rejected
//            set. With tail_size = 0 there is no tail: collect writes nothing and
//            only the valid/invalid counts of the call tell the outcome.
enum class Mode : std::uint8_t { results = 0, collect = 1 };

// The four bridge tables.
enum class Table : std::uint8_t { ecdsa = 0, multisig = 1, schnorr = 2, threshold = 3 };

constexpr std::size_t kMaxTailSize = 255;
constexpr std::size_t kEcdsaRecordSize = sizeof(EcdsaRecord);
constexpr std::size_t kSchnorrRecordSize = sizeof(SchnorrRecord);

constexpr std::size_t record_size(RecordKind kind) {
    return kind == RecordKind::ecdsa ? kEcdsaRecordSize : kSchnorrRecordSize;
}

constexpr std::size_t stride(RecordKind kind, std::size_t tail_size) {
    return record_size(kind) + tail_size;
}

constexpr RecordKind record_kind(Table table) {
    return (table == Table::ecdsa || table == Table::multisig) ? RecordKind::ecdsa
                                                                : RecordKind::schnorr;
}

// tail_size of the canonical row of each table.
constexpr std::size_t canonical_tail_size(Table table) {
    switch (table) {
    case Table::ecdsa: return sizeof(EcdsaRow) - kEcdsaRecordSize;
    case Table::multisig: return sizeof(MultisigRow) - kEcdsaRecordSize;
    case Table::schnorr: return sizeof(SchnorrRow) - kSchnorrRecordSize;
    case Table::threshold: return sizeof(ThresholdRow) - kSchnorrRecordSize;
    }
    return 0;
}

static_assert(canonical_tail_size(Table::ecdsa) == 3);
static_assert(canonical_tail_size(Table::multisig) == 6);
static_assert(canonical_tail_size(Table::schnorr) == 3);
static_assert(canonical_tail_size(Table::threshold) == 6);

constexpr std::string_view to_string(Table t) {
    switch (t) {
    case Table::ecdsa: return "ecdsa";
    case Table::multisig: return "multisig";
    case Table::schnorr: return "schnorr";
    case Table::threshold: return "threshold";
    }
    return "?";
}

constexpr std::string_view to_string(RecordKind k) {
    return k == RecordKind::ecdsa ? "ecdsa" : "schnorr";
}

constexpr std::string_view to_string(SigEncoding e) {
    return e == SigEncoding::opaque ? "opaque" : "compact";
}

constexpr std::string_view to_string(Mode m) {
    return m == Mode::results ? "results" : "collect";
}

inline std::optional<Table> parse_table(std::string_view s) {
    if (s == "ecdsa") return Table::ecdsa;
    if (s == "multisig") return Table::multisig;
    if (s == "schnorr") return Table::schnorr;
    if (s == "threshold") return Table::threshold;
    return std::nullopt;
}

inline std::optional<SigEncoding> parse_sig_encoding(std::string_view s) {
    if (s == "opaque") return SigEncoding::opaque;
    if (s == "compact") return SigEncoding::compact;
    return std::nullopt;
}

// Column tables (Opcode::verify_columns, libbitcoin's tables): the same record
// fields, each in its own column of fixed width, row i at i * width.
constexpr std::size_t kColumnMessageWidth = sizeof(EcdsaRecord::hash);
constexpr std::size_t kColumnSignatureWidth = sizeof(EcdsaRecord::sig);
constexpr std::size_t column_key_width(RecordKind kind) {
    return kind == RecordKind::ecdsa ? sizeof(EcdsaRecord::point) : sizeof(SchnorrRecord::xonly);
}
static_assert(kColumnMessageWidth == sizeof(SchnorrRecord::hash) && kColumnSignatureWidth == sizeof(SchnorrRecord::sig));
static_assert(kColumnMessageWidth + column_key_width(RecordKind::ecdsa) + kColumnSignatureWidth == kEcdsaRecordSize);
static_assert(kColumnMessageWidth + column_key_width(RecordKind::schnorr) + kColumnSignatureWidth ==
              kSchnorrRecordSize);

// Decoded values of the canonical tails.
constexpr std::uint32_t kBlockFkWriting = 0xFFFFFF;

inline std::uint32_t read_u24le(const std::uint8_t* p) {
    return std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16);
}
inline void write_u24le(std::uint8_t* p, std::uint32_t v) {
    p[0] = std::uint8_t(v);
    p[1] = std::uint8_t(v >> 8);
    p[2] = std::uint8_t(v >> 16);
}
inline std::uint16_t read_u16le(const std::uint8_t* p) {
    return std::uint16_t(p[0] | (p[1] << 8));
}
inline void write_u16le(std::uint8_t* p, std::uint16_t v) {
    p[0] = std::uint8_t(v);
    p[1] = std::uint8_t(v >> 8);
}

// A view of packed rows in caller memory. Does not own the bytes.
// Invariant (checked by valid()): tail_size <= 255 and count * stride fits size_t.
struct RowSpan {
    RecordKind kind = RecordKind::ecdsa;
    std::size_t tail_size = 0;
    SigEncoding encoding = SigEncoding::opaque;  // ignored for Schnorr
    std::uint8_t* data = nullptr;
    std::size_t count = 0;

    constexpr std::size_t row_stride() const { return stride(kind, tail_size); }
    std::uint8_t* row(std::size_t i) const { return data + i * row_stride(); }
    constexpr bool valid() const {
        if (tail_size > kMaxTailSize) return false;
        if (count != 0 && data == nullptr) return false;
        return count <= SIZE_MAX / row_stride();
    }
    constexpr std::size_t size_bytes() const { return count * row_stride(); }
};

// Why a column view was rejected (ColumnSpan::check).
enum class ColumnError : std::uint8_t {
    none = 0,
    bad_kind,        // record kind is neither ecdsa nor schnorr
    bad_encoding,    // ECDSA encoding is neither opaque nor compact
    bad_tail_size,   // tail_size > 255
    null_column,     // a column needed for count > 0 rows is null
    too_many_rows,   // count * width overflows size_t
    message_size,    // message column bytes not a multiple of 32
    key_size,        // key column bytes != count * key width
    signature_size,  // signature column bytes != count * 64
    correlate_size,  // correlate column bytes != count * tail_size
};

constexpr std::string_view to_string(ColumnError e) {
    switch (e) {
    case ColumnError::none: return "ok";
    case ColumnError::bad_kind: return "record kind is neither ecdsa nor schnorr";
    case ColumnError::bad_encoding: return "ECDSA signature encoding is neither opaque nor compact";
    case ColumnError::bad_tail_size: return "tail_size must be 0..255";
    case ColumnError::null_column: return "a column is null";
    case ColumnError::too_many_rows: return "row count overflows the column sizes";
    case ColumnError::message_size: return "message column size is not a multiple of 32";
    case ColumnError::key_size: return "key column size does not match the row count";
    case ColumnError::signature_size: return "signature column size does not match the row count";
    case ColumnError::correlate_size: return "correlate column size does not match the row count";
    }
    return "unknown column error";
}

}  // namespace sigverify::wire

namespace sigverify {

// A view of column tables in caller memory (libbitcoin's layout since
// mid-2026): message[count][32], key[count][33] (ECDSA, compressed SEC1) or
// [count][32] (Schnorr, x-only), signature[count][64] (ECDSA opaque or
// compact; Schnorr BIP-340) and an optional correlate[count][tail_size]
// (0..255 bytes per row; null when tail_size is 0) that verification never
// interprets. Row i is verified as message[i] || key[i] || signature[i]: the
// same verdicts as the row path on the same data. Does not own the bytes.
//
// The one column view of client, daemon and reference, called
// wire::ColumnSpan beside wire::RowSpan. Its own name is sigverify::Columns
// because libsigverify's public calls have taken it under that name since
// 0.1 (client.hpp): the name is part of their mangled symbols, so it stays.
// Invariant when check() gives none: every column holds count entries of its
// width, and count * stride(kind, tail_size) fits size_t.
struct Columns {
    wire::RecordKind kind = wire::RecordKind::ecdsa;
    wire::SigEncoding encoding = wire::SigEncoding::opaque;  // ignored for Schnorr
    std::size_t count = 0;
    std::size_t tail_size = 0;  // correlate bytes per row; 0 = no correlate column
    const std::uint8_t* message = nullptr;
    const std::uint8_t* key = nullptr;
    const std::uint8_t* signature = nullptr;
    std::uint8_t* correlate = nullptr;

    // Checks the fields against each other: kind, encoding, tail_size, no
    // null column for count > 0 rows, and count * width fits size_t for every
    // column (the widest, an assembled row, bounds them all).
    constexpr wire::ColumnError check() const {
        if (kind != wire::RecordKind::ecdsa && kind != wire::RecordKind::schnorr) return wire::ColumnError::bad_kind;
        if (!wire::encoding_accepted(kind, encoding)) return wire::ColumnError::bad_encoding;
        if (tail_size > wire::kMaxTailSize) return wire::ColumnError::bad_tail_size;
        if (count == 0) return wire::ColumnError::none;
        if (message == nullptr || key == nullptr || signature == nullptr) return wire::ColumnError::null_column;
        if (tail_size != 0 && correlate == nullptr) return wire::ColumnError::null_column;
        if (count > SIZE_MAX / wire::stride(kind, tail_size)) return wire::ColumnError::too_many_rows;
        return wire::ColumnError::none;
    }

    constexpr std::size_t key_width() const { return wire::column_key_width(kind); }
    const std::uint8_t* message_at(std::size_t i) const { return message + i * wire::kColumnMessageWidth; }
    const std::uint8_t* key_at(std::size_t i) const { return key + i * key_width(); }
    const std::uint8_t* signature_at(std::size_t i) const { return signature + i * wire::kColumnSignatureWidth; }
    std::uint8_t* correlate_at(std::size_t i) const { return correlate + i * tail_size; }

    // Rows [begin, begin + n) as a view of their own (row 0 = row begin);
    // begin + n <= count.
    Columns subspan(std::size_t begin, std::size_t n) const {
        Columns s = *this;
        s.count = n;
        if (n == 0) return s;
        s.message = message_at(begin);
        s.key = key_at(begin);
        s.signature = signature_at(begin);
        s.correlate = tail_size != 0 ? correlate_at(begin) : nullptr;
        return s;
    }
};

namespace wire {
using ColumnSpan = ::sigverify::Columns;
}  // namespace wire

}  // namespace sigverify
