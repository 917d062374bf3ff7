// SPDX-License-Identifier: MIT
// The row layouts are ABI shared with libbitcoin: pin them from the outside too.
#include <catch2/catch.hpp>

#include <cstring>

#include "sigverify/shm_protocol/wire_format.hpp"
#include "sigverify/shm_protocol/group_fields.hpp"

using namespace sigverify::wire;

TEST_CASE("record and row sizes match the bridge", "[wire]") {
    CHECK(record_size(RecordKind::ecdsa) == 129);
    CHECK(record_size(RecordKind::schnorr) == 128);
    CHECK(stride(RecordKind::ecdsa, 0) == 129);
    CHECK(stride(RecordKind::ecdsa, 255) == 384);
    CHECK(stride(record_kind(Table::multisig), canonical_tail_size(Table::multisig)) == sizeof(MultisigRow));
    CHECK(stride(record_kind(Table::threshold), canonical_tail_size(Table::threshold)) == sizeof(ThresholdRow));
    CHECK(record_kind(Table::ecdsa) == RecordKind::ecdsa);
    CHECK(record_kind(Table::threshold) == RecordKind::schnorr);
}

TEST_CASE("tail fields decode little-endian", "[wire]") {
    MultisigRow row{};
    row.mn = (2 << 4) | 3;
    write_u16le(row.group, 0x1234);
    write_u24le(row.block_fk, 0xABCDEF);
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&row);
    CHECK(bytes[129] == 0x23);
    CHECK(bytes[130] == 0x34);
    CHECK(bytes[131] == 0x12);
    CHECK(bytes[132] == 0xEF);
    CHECK(bytes[134] == 0xAB);
    CHECK(read_u24le(row.block_fk) == 0xABCDEF);
    CHECK(read_u16le(row.group) == 0x1234);
}

TEST_CASE("group tail: read_group_tail and write_group_tail are the row's fields", "[wire]") {
    for (auto kind : {0, 1}) {
        std::uint8_t tail[6] = {};
        const sigverify::GroupRow g{std::uint8_t(kind ? 7 : 0x2D), 0xBEEF, kBlockFkWriting - 1};
        sigverify::write_group_tail(tail, g);
        MultisigRow row{};
        std::memcpy(reinterpret_cast<std::uint8_t*>(&row) + kEcdsaRecordSize, tail, sizeof tail);
        CHECK(row.mn == g.mn);
        CHECK(read_u16le(row.group) == 0xBEEF);
        CHECK(read_u24le(row.block_fk) == kBlockFkWriting - 1);
        const sigverify::GroupRow back = sigverify::read_group_tail(tail);
        CHECK(back.mn == g.mn);
        CHECK(back.group == g.group);
        CHECK(back.block_fk == g.block_fk);
    }
}

TEST_CASE("names round-trip", "[wire]") {
    for (auto t : {Table::ecdsa, Table::multisig, Table::schnorr, Table::threshold})
        CHECK(parse_table(to_string(t)) == t);
    CHECK_FALSE(parse_table("rsa").has_value());
    CHECK(parse_sig_encoding("opaque") == SigEncoding::opaque);
    CHECK(parse_sig_encoding("compact") == SigEncoding::compact);
    CHECK_FALSE(parse_sig_encoding("der").has_value());
}

TEST_CASE("row span bounds", "[wire]") {
    std::uint8_t buf[1];
    RowSpan s{RecordKind::ecdsa, 3, SigEncoding::opaque, buf, 0};
    CHECK(s.valid());
    s.tail_size = 256;
    CHECK_FALSE(s.valid());
    s.tail_size = 0;
    s.count = SIZE_MAX / 100;  // count * 129 overflows
    CHECK_FALSE(s.valid());
    s.count = 1;
    s.data = nullptr;
    CHECK_FALSE(s.valid());
}

TEST_CASE("column span: the one column view, checked and cut into pieces", "[wire][columns]") {
    std::uint8_t message[4 * 32], key[4 * 33], signature[4 * 64], correlate[4 * 6];
    const ColumnSpan all{RecordKind::ecdsa, SigEncoding::compact, 4, 6, message, key, signature, correlate};
    REQUIRE(all.check() == ColumnError::none);
    CHECK(all.key_width() == 33);
    const ColumnSpan piece = all.subspan(1, 2);
    CHECK(piece.count == 2);
    CHECK(piece.kind == RecordKind::ecdsa);
    CHECK(piece.encoding == SigEncoding::compact);
    CHECK(piece.tail_size == 6);
    CHECK(piece.message == message + 32);
    CHECK(piece.key == key + 33);
    CHECK(piece.signature == signature + 64);
    CHECK(piece.correlate == correlate + 6);
    CHECK(piece.key_at(1) == key + 2 * 33);
    CHECK(piece.correlate_at(1) == correlate + 2 * 6);
    // Schnorr keys are 32 bytes; no correlate column stays none.
    const ColumnSpan schnorr{RecordKind::schnorr, SigEncoding::opaque, 4, 0, message, key, signature, nullptr};
    CHECK(schnorr.subspan(3, 1).key == key + 3 * 32);
    CHECK(schnorr.subspan(3, 1).correlate == nullptr);

    ColumnSpan bad = all;
    bad.kind = RecordKind(2);
    CHECK(bad.check() == ColumnError::bad_kind);
    bad = all;
    bad.encoding = SigEncoding(2);
    CHECK(bad.check() == ColumnError::bad_encoding);
    bad = all;
    bad.tail_size = 256;
    CHECK(bad.check() == ColumnError::bad_tail_size);
    bad = all;
    bad.correlate = nullptr;
    CHECK(bad.check() == ColumnError::null_column);
    bad.count = 0;  // no rows: nothing is read, so no column is needed
    CHECK(bad.check() == ColumnError::none);
    bad = all;
    bad.count = SIZE_MAX / 100;  // count * (129 + 6) overflows
    CHECK(bad.check() == ColumnError::too_many_rows);
    CHECK(to_string(ColumnError::null_column) == "a column is null");
}
