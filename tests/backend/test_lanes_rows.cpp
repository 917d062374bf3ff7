// SPDX-License-Identifier: MIT
// The lanes backend's rows code (daemon/backends/lanes_rows.cpp) against
// libsecp256k1 row by row, at each width this CPU runs: generated ECDSA rows
// of both encodings and BIP-340 rows (30% invalid, 30% high-S), ranges that
// end in a short group of eight, and rows whose ladder ends at infinity (the
// lanes answer "recheck" there: the exact path must decide them, invalid).
#include <cstdint>
#include <vector>

#include <catch2/catch.hpp>

#include "daemon/backends/lanes_rows.hpp"
#include "kernels/exact_ecmult.hpp"
#include "kernels/kernel_math.hpp"
#include "reference/reference_verifier.hpp"
#include "reference/row_generator.hpp"

using namespace sigverify;
namespace lanes = kernels::lanes;

namespace {

std::vector<lanes::Width> widths() {
    std::vector<lanes::Width> w = {lanes::Width::scalar};
    if (lanes::cpu_has_ifma8()) w.push_back(lanes::Width::ifma8);
    if (lanes::cpu_has_ifma4()) w.push_back(lanes::Width::ifma4);
    return w;
}

// An ECDSA record (compact) with u1 G + u2 P = infinity: key d G, any r and
// s, and the hash z = -r d (mod n), so z + r d = 0. Invalid for libsecp256k1.
void infinity_record(std::uint8_t* rec, std::uint64_t d_small, std::uint8_t r_byte) {
    using namespace kernels;
    Sc d{}, r{}, s{}, z{};
    d.v[0] = d_small;
    r.v[0] = 0x1234567890ABCDEFull * r_byte;
    r.v[2] = r_byte;
    s.v[0] = 5;
    sc_mul(z, r, d);
    sc_neg(z, z);
    Gej pj;
    ecmult(pj, ge_generator(), sc_zero(), d, host_exact_g_table());
    Ge p;
    ge_set_gej(p, pj);
    sc_get_b32(rec + offsetof(wire::EcdsaRecord, hash), z);
    rec[offsetof(wire::EcdsaRecord, point)] = fe_is_odd(p.y) ? 0x03 : 0x02;
    fe_get_b32(rec + offsetof(wire::EcdsaRecord, point) + 1, p.x);
    sc_get_b32(rec + offsetof(wire::EcdsaRecord, sig), r);
    sc_get_b32(rec + offsetof(wire::EcdsaRecord, sig) + 32, s);
}

}  // namespace

TEST_CASE("lanes rows: generated rows of both kinds and encodings as libsecp256k1 says, at each width",
          "[lanes][rows]") {
    reference::RowVerifier secp;
    for (lanes::Width w : widths()) {
        for (wire::Table table : {wire::Table::ecdsa, wire::Table::schnorr}) {
            for (wire::SigEncoding enc : {wire::SigEncoding::opaque, wire::SigEncoding::compact}) {
                if (table == wire::Table::schnorr && enc == wire::SigEncoding::compact) continue;
                INFO("width " << lanes::width_name(w) << ", " << wire::to_string(table) << ", enc " << int(enc));
                reference::GenOptions g;
                g.table = table;
                g.count = 1003;  // the last group of eight is short
                g.encoding = enc;
                g.invalid_rate = 0.3;
                g.high_s_rate = table == wire::Table::ecdsa ? 0.3 : 0.0;
                g.seed = 90 + int(table) * 7 + int(enc);
                std::vector<std::uint8_t> rows = reference::generate_rows(g);
                const wire::RowSpan span{wire::record_kind(table), wire::canonical_tail_size(table), enc, rows.data(),
                                         g.count};
                std::vector<std::uint8_t> want(g.count), got(g.count, 0xAA);
                for (std::size_t i = 0; i < g.count; ++i) want[i] = secp.verify_row(span, i) ? 1 : 0;
                const daemon::LanesCounts c = daemon::verify_lanes_range(w, span, 0, g.count, got.data());
                CHECK(got == want);
                CHECK(c.valid + c.invalid == g.count);
                // A range inside: verdicts only there, the rest untouched.
                std::vector<std::uint8_t> part(g.count, 0xAA);
                daemon::verify_lanes_range(w, span, 5, 26, part.data());
                for (std::size_t i = 0; i < g.count; ++i) CHECK(part[i] == (i >= 5 && i < 26 ? want[i] : 0xAA));
            }
        }
    }
}

TEST_CASE("lanes rows: a ladder that ends at infinity is a recheck the exact path decides (invalid)",
          "[lanes][rows][recheck]") {
    reference::GenOptions g;
    g.count = 24;
    g.encoding = wire::SigEncoding::compact;
    g.seed = 31;
    std::vector<std::uint8_t> rows = reference::generate_rows(g);
    const std::size_t tail = wire::canonical_tail_size(wire::Table::ecdsa);
    const wire::RowSpan span{wire::RecordKind::ecdsa, tail, wire::SigEncoding::compact, rows.data(), g.count};
    for (std::size_t i : {3u, 8u, 9u, 23u}) infinity_record(span.row(i), 7 + i, std::uint8_t(i));
    reference::RowVerifier secp;
    std::vector<std::uint8_t> want(g.count);
    for (std::size_t i = 0; i < g.count; ++i) want[i] = secp.verify_row(span, i) ? 1 : 0;
    for (std::size_t i : {3u, 8u, 9u, 23u}) REQUIRE(want[i] == 0);
    for (lanes::Width w : widths()) {
        INFO("width " << lanes::width_name(w));
        std::vector<std::uint8_t> got(g.count, 0xAA);
        const daemon::LanesCounts c = daemon::verify_lanes_range(w, span, 0, g.count, got.data());
        CHECK(got == want);
        // The scalar width is the exact path itself; the lanes must have said "recheck".
        if (w != lanes::Width::scalar) CHECK(c.rechecks >= 4);
    }
}
