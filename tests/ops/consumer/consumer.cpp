// SPDX-License-Identifier: MIT
// Verifies an ecdsa row file (canonical 3-byte tail) through sigverifyd with
// the installed C++ API; prints "valid=N invalid=M". Then, as a node would,
// the block verdicts of those rows taken as single signatures of four blocks
// (row i in block i % 4) through the installed groups.hpp, checked against
// the rule that a block of single signatures passes iff all of them verified
// (exit 5 when they differ).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include <sigverify/client.hpp>
#include <sigverify/groups.hpp>

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: consumer RUNTIME_DIR ROWS_FILE\n");
        return 2;
    }
    std::ifstream in(argv[2], std::ios::binary);
    std::vector<std::uint8_t> rows((std::istreambuf_iterator<char>(in)), {});
    const std::size_t stride = sigverify::wire::stride(sigverify::wire::RecordKind::ecdsa, 3);
    if (rows.empty() || rows.size() % stride != 0) return 3;
    sigverify::ClientOptions o;
    o.runtime_dir = argv[1];
    o.name = "consumer";
    try {
        auto c = sigverify::Client::connect(o);
        std::vector<std::uint8_t> results(rows.size() / stride);
        const auto r = c->verify_ecdsa(rows.data(), results.size(), 3, results.data());
        if (!r.ok()) return 4;
        std::printf("valid=%llu invalid=%llu\n", (unsigned long long)r.valid, (unsigned long long)r.invalid);
        std::vector<std::uint32_t> block_of(results.size());
        bool block_ok[4] = {true, true, true, true};
        for (std::size_t i = 0; i < results.size(); ++i) {
            block_of[i] = std::uint32_t(i % 4);
            if (results[i] != 1) block_ok[i % 4] = false;
        }
        const auto report = sigverify::compute_group_verdicts(
            sigverify::GroupKind::multisig, sigverify::single_signature_group_rows(block_of), results);
        if (report.blocks.size() != std::min<std::size_t>(4, results.size())) return 5;
        for (const auto& b : report.blocks)
            if (b.pass != block_ok[b.block_fk]) return 5;
    } catch (const sigverify::Error& e) {
        std::fprintf(stderr, "consumer: %s\n", e.what());
        return 4;
    }
    return 0;
}
