// SPDX-License-Identifier: MIT
// Known-answer vectors through the reference verifier: BIP-340 and Wycheproof.
#include <catch2/catch.hpp>

#include "reference/reference_verifier.hpp"
#include "support/test_vectors.hpp"

using namespace sigverify;
using reference::RowVerifier;
using wire::SigEncoding;

TEST_CASE("BIP-340 vectors", "[vectors][schnorr]") {
    const auto set = test::load_bip340();
    REQUIRE(set.cases.size() == 15);  // vectors 0-14 carry 32-byte messages
    // The same rows test_daemon_e2e sends through a daemon.
    const auto rows = test::bip340_rows(set, "BIP-340");
    REQUIRE(rows.count() == 15);
    RowVerifier v;
    for (std::size_t i = 0; i < rows.count(); ++i) {
        INFO(rows.labels[i]);
        CHECK(v.verify_schnorr(rows.row(i)) == (rows.expected[i] == 1));
    }
    CHECK(rows.valid() == 5);
}

TEST_CASE("BIP-340 draft vectors from shared/: their TRUE signatures are invalid under final BIP-340", "[vectors][schnorr]") {
    // The shared copy predates the final BIP (square-y R). A verifier that
    // accepts these signatures does not implement consensus.
    const auto draft = test::load_bip340("test-vectors-draft-2019.csv");
    REQUIRE(draft.cases.size() == 15);
    RowVerifier v;
    for (const auto& c : draft.cases) {
        INFO("draft vector " << c.index);
        CHECK_FALSE(v.verify_schnorr(reinterpret_cast<const std::uint8_t*>(&c.record)));
    }
}

namespace {
// Checks every representable case with a consensus verdict (test::consensus_verdict)
// in both ECDSA encodings, as the rows test_daemon_e2e sends through a daemon;
// returns the number of cases checked.
std::size_t check_wycheproof(const test::WycheproofSet& set, bool bitcoin_variant) {
    RowVerifier v;
    std::size_t checked = 0;
    for (SigEncoding enc : {SigEncoding::compact, SigEncoding::opaque}) {
        const auto rows = test::wycheproof_rows(set, bitcoin_variant, enc, "");
        CHECK(rows.count() + rows.without_verdict == set.cases.size());
        for (std::size_t i = 0; i < rows.count(); ++i) {
            INFO(rows.labels[i] << ", " << (enc == SigEncoding::compact ? "compact" : "opaque"));
            CHECK(v.verify_ecdsa(rows.row(i), enc) == (rows.expected[i] == 1));
        }
        checked = rows.count();
    }
    return checked;
}
}  // namespace

TEST_CASE("Wycheproof ECDSA secp256k1 SHA-256, P1363 encoding", "[vectors][ecdsa]") {
    const auto set = test::load_wycheproof("ecdsa_secp256k1_sha256_p1363_test.json", test::WycheproofFormat::p1363);
    CHECK(set.total == 252);
    CHECK(set.skipped_but_valid == 0);
    CHECK(check_wycheproof(set, false) + set.skipped_encoding == set.total);
    CHECK(set.cases.size() > 200);
}

TEST_CASE("Wycheproof ECDSA secp256k1 SHA-256, DER encoding", "[vectors][ecdsa]") {
    const auto set = test::load_wycheproof("ecdsa_secp256k1_sha256_test.json", test::WycheproofFormat::der);
    CHECK(set.total == 476);
    CHECK(set.skipped_but_valid == 0);
    // Non-strict DER cannot become a row; the count is pinned so a parser change shows.
    CAPTURE(set.skipped_encoding);
    CHECK(set.skipped_encoding > 100);
    CHECK(check_wycheproof(set, false) + set.skipped_encoding == set.total);
}

TEST_CASE("Wycheproof bitcoin variant: high-S is valid under consensus", "[vectors][ecdsa]") {
    const auto set = test::load_wycheproof("ecdsa_secp256k1_sha256_bitcoin_test.json", test::WycheproofFormat::der);
    CHECK(set.total == 463);
    CHECK(set.skipped_but_valid == 0);
    std::size_t malleable = 0;
    for (const auto& c : set.cases) malleable += c.has_flag("SignatureMalleabilityBitcoin");
    CHECK(malleable > 0);
    CHECK(check_wycheproof(set, true) == 264);  // low-S cases plus malleated valid ones
}
