// Verifies an ecdsa row file (canonical 3-byte tail) through sigverifyd with
// the installed C++ API; prints "valid=N invalid=M".
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include <sigverify/client.hpp>

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
    } catch (const sigverify::Error& e) {
        std::fprintf(stderr, "consumer: %s\n", e.what());
        return 4;
    }
    return 0;
}
