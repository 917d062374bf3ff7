// SPDX-License-Identifier: MIT
// Loaders that turn the vendored BIP-340 and Wycheproof vectors into rows of
// the wire format, with the verdict each row must get.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "sigverify/shm_protocol/wire_format.hpp"

namespace sigverify::test {

std::vector<std::uint8_t> from_hex(const std::string& hex);
std::string vectors_dir();

struct Bip340Case {
    int index = 0;
    wire::SchnorrRecord record{};
    bool expected_valid = false;
    std::string comment;
};

// Vectors whose message is not 32 bytes cannot be a SchnorrRecord; they are
// counted in skipped.
struct Bip340Set {
    std::vector<Bip340Case> cases;
    std::size_t skipped = 0;
};
// file_name is relative to vectors/bip340/: "test-vectors.csv" holds the final
// BIP-340 vectors, "test-vectors-draft-2019.csv" an obsolete draft (README there).
Bip340Set load_bip340(const std::string& file_name = "test-vectors.csv");

struct WycheproofCase {
    int tc_id = 0;
    wire::EcdsaRecord record{};  // signature in compact encoding (r BE || s BE)
    std::string result;          // "valid", "invalid" or "acceptable"
    std::string comment;
    std::vector<std::string> flags;
    bool has_flag(const std::string& f) const {
        for (const auto& x : flags)
            if (x == f) return true;
        return false;
    }
    bool expected_valid() const { return result == "valid" || result == "acceptable"; }
};

// A Wycheproof file turned into ECDSA rows: hash = SHA-256(msg), key
// compressed. For DER files, a signature libsecp256k1's strict DER parser
// rejects cannot become a row and is counted in skipped_encoding (likewise a
// P1363 signature that is not exactly 64 bytes). Those skipped cases must all
// be expected invalid; the caller asserts that with skipped_but_valid.
struct WycheproofSet {
    std::vector<WycheproofCase> cases;
    std::size_t total = 0;
    std::size_t skipped_encoding = 0;
    std::size_t skipped_but_valid = 0;
};
enum class WycheproofFormat { der, p1363 };
WycheproofSet load_wycheproof(const std::string& file_name, WycheproofFormat format);

// s > n/2, read from a compact (r BE || s BE) signature.
bool is_high_s(const std::uint8_t* compact);

// The verdict a Wycheproof case states, where it holds under consensus
// ("acceptable" counts as valid, as in expected_valid()); nullopt where it does
// not: the bitcoin variant rejects high-S as policy, so its "invalid" for a
// high-S signature says nothing about consensus. Only its malleated copies of
// valid signatures (flag SignatureMalleabilityBitcoin) have a known consensus
// answer: valid.
std::optional<bool> consensus_verdict(const WycheproofCase& c, bool bitcoin_variant);

// Vector cases as one batch of rows of a table, for every verifier from the
// reference to a real daemon: row i is case i's record and a canonical tail
// that is never zero (so collect's zeroing of a valid row's tail shows), with
// the verdict the vector file states and a label naming the case.
struct VectorRows {
    std::string name;
    wire::Table table = wire::Table::ecdsa;
    wire::SigEncoding encoding = wire::SigEncoding::opaque;
    std::size_t record = 0, tail = 0, stride = 0;
    std::vector<std::uint8_t> rows;
    std::vector<std::uint8_t> expected;  // 1 = valid, 0 = invalid
    std::vector<std::string> labels;
    std::size_t without_verdict = 0;  // cases left out: no consensus verdict (consensus_verdict)

    std::size_t count() const { return expected.size(); }
    std::size_t valid() const;
    const std::uint8_t* row(std::size_t i) const { return rows.data() + i * stride; }
};

// BIP-340 cases as schnorr-table rows; each row expects the file's verdict.
VectorRows bip340_rows(const Bip340Set& set, const std::string& name);
// Wycheproof cases as ecdsa-table rows in the given encoding (opaque: the
// compact signature byte-swapped); cases without a consensus verdict are left out.
VectorRows wycheproof_rows(const WycheproofSet& set, bool bitcoin_variant, wire::SigEncoding encoding,
                           const std::string& name);

}  // namespace sigverify::test
