// SPDX-License-Identifier: MIT
// Writes the hook's known tables (known_tables.hpp) to DIR, as the files
// lbtc_call_site reads: {ecdsa,schnorr}.{digest,key,signature,expected}.
// usage: lbtc_write_tables DIR ROWS
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "known_tables.hpp"

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s DIR ROWS\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    const lbtc_call_site::Tables t = sigverify::test::make_tables(std::strtoull(argv[2], nullptr, 10), 2026);
    if (const std::string why = sigverify::test::check_against_reference(t); !why.empty()) {
        std::fprintf(stderr, "%s\n", why.c_str());
        return 1;
    }
    auto put = [&](const char* name, const std::vector<std::uint8_t>& bytes) {
        std::ofstream f(dir + "/" + name, std::ios::binary);
        f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
        return bool(f);
    };
    const bool ok = put("ecdsa.digest", t.ecdsa_digest) && put("ecdsa.key", t.ecdsa_key) &&
                    put("ecdsa.signature", t.ecdsa_signature) && put("ecdsa.expected", t.ecdsa_expected) &&
                    put("schnorr.digest", t.schnorr_digest) && put("schnorr.key", t.schnorr_key) &&
                    put("schnorr.signature", t.schnorr_signature) && put("schnorr.expected", t.schnorr_expected);
    return ok ? 0 : 3;
}
