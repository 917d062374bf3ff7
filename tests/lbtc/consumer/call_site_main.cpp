// SPDX-License-Identifier: MIT
// The call site as a program of its own (call_site.hpp): reads the tables a
// test wrote (lbtc_write_tables) from DIR and checks the hook's answers.
// usage: lbtc_call_site DIR EXPECT_GATE(0|1|-1)
// Built by tests/lbtc/test_lbtc_compat.sh as an outside consumer of the
// installed compatibility layer, with only pkg-config secp256k1-fast or
// find_package(secp256k1-fast 4.0.0.0) (which supply WITH_ULTRAFAST).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "call_site.hpp"

namespace {

std::vector<std::uint8_t> slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        std::fprintf(stderr, "cannot read %s\n", path.c_str());
        std::exit(3);
    }
    return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s DIR EXPECT_GATE\n", argv[0]);
        return 2;
    }
    const std::string dir = argv[1];
    lbtc_call_site::Tables t;
    t.ecdsa_digest = slurp(dir + "/ecdsa.digest");
    t.ecdsa_key = slurp(dir + "/ecdsa.key");
    t.ecdsa_signature = slurp(dir + "/ecdsa.signature");
    t.ecdsa_expected = slurp(dir + "/ecdsa.expected");
    t.schnorr_digest = slurp(dir + "/schnorr.digest");
    t.schnorr_key = slurp(dir + "/schnorr.key");
    t.schnorr_signature = slurp(dir + "/schnorr.signature");
    t.schnorr_expected = slurp(dir + "/schnorr.expected");
    const std::size_t en = t.ecdsa_rows(), sn = t.schnorr_rows();
    if (t.ecdsa_digest.size() != en * 32 || t.ecdsa_key.size() != en * 33 || t.ecdsa_signature.size() != en * 64 ||
        t.schnorr_digest.size() != sn * 32 || t.schnorr_key.size() != sn * 32 || t.schnorr_signature.size() != sn * 64) {
        std::fprintf(stderr, "column sizes do not match the row counts\n");
        return 3;
    }
    const std::string why = lbtc_call_site::run(t, std::atoi(argv[2]));
    if (!why.empty()) {
        std::fprintf(stderr, "call site: %s\n", why.c_str());
        return 1;
    }
    std::printf("call site ok: %zu ecdsa, %zu schnorr rows\n", en, sn);
    return 0;
}
