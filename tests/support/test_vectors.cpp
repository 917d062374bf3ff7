// SPDX-License-Identifier: MIT
#include "support/test_vectors.hpp"

#include <nlohmann/json.hpp>
#include <openssl/sha.h>
#include <secp256k1.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "reference/reference_verifier.hpp"

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

bool is_high_s(const std::uint8_t* compact) {
    static const std::uint8_t half_n[32] = {0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                                            0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x5D, 0x57, 0x6E, 0x73, 0x57, 0xA4,
                                            0x50, 0x1D, 0xDF, 0xE9, 0x2F, 0x46, 0x68, 0x1B, 0x20, 0xA0};
    return std::memcmp(compact + 32, half_n, 32) > 0;
}

std::optional<bool> consensus_verdict(const WycheproofCase& c, bool bitcoin_variant) {
    if (bitcoin_variant && is_high_s(c.record.sig)) {
        if (!c.has_flag("SignatureMalleabilityBitcoin")) return std::nullopt;
        return true;
    }
    return c.expected_valid();
}

std::size_t VectorRows::valid() const {
    std::size_t n = 0;
    for (std::uint8_t e : expected) n += e;
    return n;
}

namespace {
VectorRows empty_rows(const std::string& name, wire::Table table, wire::SigEncoding encoding) {
    VectorRows v;
    v.name = name;
    v.table = table;
    v.encoding = encoding;
    v.record = wire::record_size(wire::record_kind(table));
    v.tail = wire::canonical_tail_size(table);
    v.stride = v.record + v.tail;
    return v;
}

// Appends one row: the record, then a tail that is never zero.
void add_row(VectorRows& v, const void* record, bool valid, std::string label) {
    const std::size_t i = v.count();
    v.rows.resize(v.rows.size() + v.stride);
    std::uint8_t* row = v.rows.data() + i * v.stride;
    std::memcpy(row, record, v.record);
    for (std::size_t b = 0; b < v.tail; ++b) row[v.record + b] = std::uint8_t(1 + (i * 31 + b * 7) % 255);
    v.expected.push_back(valid ? 1 : 0);
    v.labels.push_back(std::move(label));
}
}  // namespace

VectorRows bip340_rows(const Bip340Set& set, const std::string& name) {
    VectorRows v = empty_rows(name, wire::Table::schnorr, wire::SigEncoding::opaque);
    for (const auto& c : set.cases)
        add_row(v, &c.record, c.expected_valid,
                "BIP-340 vector " + std::to_string(c.index) + (c.comment.empty() ? "" : " (" + c.comment + ")") +
                    ", file says " + (c.expected_valid ? "TRUE" : "FALSE"));
    return v;
}

VectorRows wycheproof_rows(const WycheproofSet& set, bool bitcoin_variant, wire::SigEncoding encoding,
                           const std::string& name) {
    VectorRows v = empty_rows(name, wire::Table::ecdsa, encoding);
    for (const auto& c : set.cases) {
        const std::optional<bool> verdict = consensus_verdict(c, bitcoin_variant);
        if (!verdict) {
            ++v.without_verdict;
            continue;
        }
        wire::EcdsaRecord record = c.record;
        if (encoding == wire::SigEncoding::opaque) reference::swap_sig_encoding(c.record.sig, record.sig);
        add_row(v, &record, *verdict,
                "tcId " + std::to_string(c.tc_id) + " (" + c.comment + "), file says " + c.result +
                    (*verdict != c.expected_valid() ? ", valid under consensus (high-S)" : ""));
    }
    return v;
}

}  // namespace sigverify::test
