// Loaders that turn the vendored BIP-340 and Wycheproof vectors into rows of
// the wire format, with the verdict each row must get.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shm_protocol/wire_format.hpp"

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

}  // namespace sigverify::test
