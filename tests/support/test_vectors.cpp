#include "support/test_vectors.hpp"

#include <nlohmann/json.hpp>
#include <openssl/sha.h>
#include <secp256k1.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace sigverify::test {

std::vector<std::uint8_t> from_hex(const std::string& hex) {
    if (hex.size() % 2) throw std::invalid_argument("odd-length hex: " + hex);
    std::vector<std::uint8_t> out(hex.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = std::uint8_t(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
    return out;
}

std::string vectors_dir() { return SIGVERIFY_TEST_VECTORS_DIR; }

namespace {
std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<std::string> split_csv_line(const std::string& line) {
    std::vector<std::string> fields;
    std::string field;
    std::istringstream ss(line);
    while (std::getline(ss, field, ',')) fields.push_back(field);
    if (!line.empty() && line.back() == ',') fields.emplace_back();
    return fields;
}
}  // namespace

Bip340Set load_bip340(const std::string& file_name) {
    std::istringstream in(read_file(vectors_dir() + "/bip340/" + file_name));
    std::string line;
    std::getline(in, line);  // header
    Bip340Set set;
    while (std::getline(in, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        const auto f = split_csv_line(line);
        if (f.size() < 7) throw std::runtime_error("bad BIP-340 line: " + line);
        const auto key = from_hex(f[2]), msg = from_hex(f[4]), sig = from_hex(f[5]);
        if (msg.size() != 32 || key.size() != 32 || sig.size() != 64) {
            ++set.skipped;
            continue;
        }
        Bip340Case c;
        c.index = std::stoi(f[0]);
        std::memcpy(c.record.hash, msg.data(), 32);
        std::memcpy(c.record.xonly, key.data(), 32);
        std::memcpy(c.record.sig, sig.data(), 64);
        c.expected_valid = f[6] == "TRUE";
        c.comment = f.size() > 7 ? f[7] : "";
        set.cases.push_back(c);
    }
    return set;
}

WycheproofSet load_wycheproof(const std::string& file_name, WycheproofFormat format) {
    const auto doc = nlohmann::json::parse(read_file(vectors_dir() + "/wycheproof/" + file_name));
    secp256k1_context* ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
    WycheproofSet set;
    for (const auto& group : doc.at("testGroups")) {
        const auto uncompressed = from_hex(group.at("publicKey").at("uncompressed").get<std::string>());
        if (uncompressed.size() != 65 || uncompressed[0] != 0x04) throw std::runtime_error("unexpected Wycheproof key");
        std::uint8_t compressed[33];
        compressed[0] = std::uint8_t(0x02 | (uncompressed[64] & 1));
        std::memcpy(compressed + 1, uncompressed.data() + 1, 32);

        for (const auto& t : group.at("tests")) {
            ++set.total;
            WycheproofCase c;
            c.tc_id = t.at("tcId").get<int>();
            c.result = t.at("result").get<std::string>();
            c.comment = t.at("comment").get<std::string>();
            if (t.contains("flags")) c.flags = t.at("flags").get<std::vector<std::string>>();
            const auto msg = from_hex(t.at("msg").get<std::string>());
            const auto sig = from_hex(t.at("sig").get<std::string>());

            std::uint8_t compact[64];
            bool representable;
            if (format == WycheproofFormat::p1363) {
                representable = sig.size() == 64;
                if (representable) std::memcpy(compact, sig.data(), 64);
            } else {
                secp256k1_ecdsa_signature parsed;
                representable = !sig.empty() &&
                                 secp256k1_ecdsa_signature_parse_der(ctx, &parsed, sig.data(), sig.size()) == 1;
                if (representable) secp256k1_ecdsa_signature_serialize_compact(ctx, compact, &parsed);
            }
            if (!representable) {
                ++set.skipped_encoding;
                if (c.expected_valid()) ++set.skipped_but_valid;
                continue;
            }
            SHA256(msg.data(), msg.size(), c.record.hash);
            std::memcpy(c.record.point, compressed, 33);
            std::memcpy(c.record.sig, compact, 64);
            set.cases.push_back(c);
        }
    }
    secp256k1_context_destroy(ctx);
    return set;
}

}  // namespace sigverify::test
