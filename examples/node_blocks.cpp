// SPDX-License-Identifier: MIT
// What a node does with libsigverify, end to end, with the installed API only
// (sigverify/client.hpp, sigverify/groups.hpp) and libsecp256k1 to make the
// signatures a node would have read from its blocks:
//   1. build the two column tables libbitcoin keeps: ecdsa (single signatures
//      and CHECKMULTISIG attempts, each row's libbitcoin correlate entry
//      id || pair || group) and schnorr (single signatures and CHECKSIGADD
//      threshold rows; the correlate holds only the id, so the node keeps
//      the grouping fields of threshold rows beside it);
//   2. keep each table's columns in a memfd, as libbitcoin keeps them in
//      memory-mapped table files, register it with sigverifyd and verify
//      the columns in place: the library copies no column byte
//      (Fallback::local: in-process, from the same memory, when no daemon runs);
//   3. compute the block verdicts from the row verdicts with groups.hpp, and
//      AND them over the two tables.
// Four blocks: 1 passes (singles, and a 2-of-3 multisig whose failed attempt
// is covered by another key), 2 fails (an invalid single signature), 3 passes
// (a 2-of-3 threshold group, both signatures valid), 4 fails (a threshold
// group with one invalid signature: BIP-342 fails the script).
//
// usage: node_blocks [RUNTIME_DIR]     prints one line per block, then a summary
#include <sys/mman.h>
#include <unistd.h>

#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include <sigverify/client.hpp>
#include <sigverify/groups.hpp>

namespace {

using Bytes32 = std::array<std::uint8_t, 32>;

secp256k1_context* ctx() {
    static secp256k1_context* c = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
    return c;
}

// Deterministic stand-ins for what a node reads from its blocks.
Bytes32 secret_key(unsigned i) {
    Bytes32 k{};
    k[31] = std::uint8_t(i + 1);
    k[0] = 0x11;
    return k;
}
Bytes32 message_hash(unsigned i) {
    Bytes32 m{};
    for (unsigned b = 0; b < 32; ++b) m[b] = std::uint8_t(i * 7 + b * 13 + 1);
    return m;
}

// The ECDSA table: columns plus each row's grouping fields (kept as the
// libbitcoin correlate entry: id[3] || pair || group[2], little-endian).
struct EcdsaTable {
    std::vector<std::uint8_t> message, key, signature, correlate;
    std::size_t rows = 0;

    // signer signs msg; the row checks it against key `against` (a multisig
    // attempt may pair a signature with a key that did not make it).
    void add(unsigned msg, unsigned signer, unsigned against, std::uint32_t block, std::uint8_t pair,
             std::uint16_t group) {
        const Bytes32 m = message_hash(msg), sk = secret_key(signer), other = secret_key(against);
        secp256k1_ecdsa_signature sig;
        std::uint8_t compact[64];
        secp256k1_pubkey pub;
        if (!secp256k1_ecdsa_sign(ctx(), &sig, m.data(), sk.data(), nullptr, nullptr) ||
            !secp256k1_ecdsa_signature_serialize_compact(ctx(), compact, &sig) ||  // r || s, big-endian
            !secp256k1_ec_pubkey_create(ctx(), &pub, other.data()))
            return;
        std::uint8_t point[33];
        std::size_t len = sizeof point;
        secp256k1_ec_pubkey_serialize(ctx(), point, &len, &pub, SECP256K1_EC_COMPRESSED);
        message.insert(message.end(), m.begin(), m.end());
        key.insert(key.end(), point, point + 33);
        signature.insert(signature.end(), compact, compact + 64);
        const std::uint8_t entry[6] = {std::uint8_t(block), std::uint8_t(block >> 8), std::uint8_t(block >> 16),
                                       pair, std::uint8_t(group), std::uint8_t(group >> 8)};
        correlate.insert(correlate.end(), entry, entry + 6);
        ++rows;
    }
};

// The Schnorr table: columns, and the grouping fields the node keeps beside
// it (mn = the group's m for threshold rows; single signatures get a group of
// their own with m = 1).
struct SchnorrTable {
    std::vector<std::uint8_t> message, key, signature;
    std::vector<sigverify::GroupRow> groups;
    std::size_t rows = 0;

    void add(unsigned msg, unsigned signer, bool corrupt, std::uint32_t block, std::uint8_t m, std::uint16_t group) {
        const Bytes32 mh = message_hash(msg), sk = secret_key(signer);
        secp256k1_keypair kp;
        if (!secp256k1_keypair_create(ctx(), &kp, sk.data())) return;
        std::uint8_t sig[64];
        const Bytes32 aux{};
        secp256k1_xonly_pubkey xonly;
        if (!secp256k1_schnorrsig_sign32(ctx(), sig, mh.data(), &kp, aux.data()) ||
            !secp256k1_keypair_xonly_pub(ctx(), &xonly, nullptr, &kp))
            return;
        if (corrupt) sig[63] ^= 1;
        std::uint8_t x[32];
        secp256k1_xonly_pubkey_serialize(ctx(), x, &xonly);
        message.insert(message.end(), mh.begin(), mh.end());
        key.insert(key.end(), x, x + 32);
        signature.insert(signature.end(), sig, sig + 64);
        groups.push_back({m, group, block});
        ++rows;
    }
};

// A table's columns in a memfd, as a node's mapped table file: message,
// key, signature, one after the other. -1 when it cannot be made.
int table_file(const std::vector<std::uint8_t>& message, const std::vector<std::uint8_t>& key,
               const std::vector<std::uint8_t>& signature) {
    const int fd = memfd_create("node-table", MFD_CLOEXEC);
    if (fd < 0) return -1;
    off_t at = 0;
    for (const std::vector<std::uint8_t>* column : {&message, &key, &signature}) {
        if (pwrite(fd, column->data(), column->size(), at) != static_cast<ssize_t>(column->size())) {
            close(fd);
            return -1;
        }
        at += static_cast<off_t>(column->size());
    }
    return fd;
}

// Verifies a table registered with the daemon: its columns are read where
// they are, only the verdicts come back.
sigverify::BatchResult verify_table(sigverify::Client& client, sigverify::wire::RecordKind kind,
                                    sigverify::wire::SigEncoding encoding, const std::vector<std::uint8_t>& message,
                                    const std::vector<std::uint8_t>& key, const std::vector<std::uint8_t>& signature,
                                    std::size_t rows, std::uint8_t* verdicts) {
    sigverify::BatchResult failed;
    failed.status = sigverify::Status::system_error;
    const int fd = table_file(message, key, signature);
    if (fd < 0) return failed;
    sigverify::RegisteredBuffer table;
    const sigverify::Status st =
        client.register_buffer(fd, 0, message.size() + key.size() + signature.size(), table);
    close(fd);  // the library keeps its own descriptor
    if (st != sigverify::Status::ok) {
        failed.status = st;
        return failed;
    }
    sigverify::RegisteredColumns columns;
    columns.kind = kind;
    columns.encoding = encoding;
    columns.count = rows;
    columns.message_offset = 0;
    columns.key_offset = message.size();
    columns.signature_offset = message.size() + key.size();
    return client.verify_registered_columns(table, columns, verdicts);
}

}  // namespace

int main(int argc, char** argv) {
    // 1. The tables. Multisig groups are numbered from 0 in each block,
    //    single signatures from 65535 downward (they never meet).
    EcdsaTable ecdsa;
    ecdsa.add(1, 1, 1, 1, 0x00, 65535);  // block 1: two single signatures
    ecdsa.add(2, 2, 2, 1, 0x00, 65534);
    ecdsa.add(3, 3, 3, 1, 0x00, 0);      // block 1: 2-of-3 multisig, signature 0 with key 0 (key 3)
    ecdsa.add(4, 5, 4, 1, 0x11, 0);      //   signature 1 tried with key 1 (key 4): the wrong key, fails
    ecdsa.add(4, 5, 5, 1, 0x12, 0);      //   signature 1 with key 2 (key 5): verifies, the group passes
    ecdsa.add(5, 6, 6, 2, 0x00, 65535);  // block 2: a valid single signature
    ecdsa.add(6, 7, 8, 2, 0x00, 65534);  //   and one checked against the wrong key: block 2 fails
    ecdsa.add(7, 9, 9, 4, 0x00, 65535);  // block 4: a valid single signature
    SchnorrTable schnorr;
    schnorr.add(8, 10, false, 3, 2, 0);   // block 3: 2-of-3 threshold, two non-empty signatures, valid
    schnorr.add(9, 11, false, 3, 2, 0);
    schnorr.add(10, 12, false, 4, 1, 0);  // block 4: 1-of-2 threshold, one signature valid,
    schnorr.add(11, 13, true, 4, 1, 0);   //   the other invalid: BIP-342 fails the script
    schnorr.add(12, 14, false, 1, 1, 1);  // block 1: a single Schnorr signature (its own 1-of-1 group)

    // 2. Verify through sigverifyd from the registered tables, or in-process
    //    when no daemon runs.
    sigverify::ClientOptions options;
    if (argc > 1) options.runtime_dir = argv[1];
    options.name = "node-blocks-example";
    options.fallback = sigverify::Fallback::local;
    auto client = sigverify::Client::connect(options);
    std::vector<std::uint8_t> ecdsa_ok(ecdsa.rows), schnorr_ok(schnorr.rows);
    const sigverify::BatchResult re =
        verify_table(*client, sigverify::wire::RecordKind::ecdsa, sigverify::wire::SigEncoding::compact,
                     ecdsa.message, ecdsa.key, ecdsa.signature, ecdsa.rows, ecdsa_ok.data());
    const sigverify::BatchResult rs =
        verify_table(*client, sigverify::wire::RecordKind::schnorr, sigverify::wire::SigEncoding::opaque,
                     schnorr.message, schnorr.key, schnorr.signature, schnorr.rows, schnorr_ok.data());
    if (!re.ok() || !rs.ok()) {
        std::fprintf(stderr, "node_blocks: verification failed: %s / %s\n", sigverify::shm::to_string(re.status).data(),
                     sigverify::shm::to_string(rs.status).data());
        return 1;
    }

    // 3. Block verdicts per table, then over both tables.
    const sigverify::GroupReport ecdsa_blocks = sigverify::compute_group_verdicts(
        sigverify::GroupKind::multisig, sigverify::group_rows_from_ecdsa_correlate(ecdsa.correlate), ecdsa_ok);
    const sigverify::GroupReport schnorr_blocks =
        sigverify::compute_group_verdicts(sigverify::GroupKind::threshold, schnorr.groups, schnorr_ok);
    std::map<std::uint32_t, bool> pass;
    for (const sigverify::GroupReport* r : {&ecdsa_blocks, &schnorr_blocks})
        for (const sigverify::BlockVerdict& b : r->blocks) {
            auto [it, fresh] = pass.emplace(b.block_fk, b.pass);
            if (!fresh) it->second = it->second && b.pass;
        }
    for (const auto& [block, ok] : pass) std::printf("block %u: %s\n", block, ok ? "pass" : "fail");
    std::printf("rows: ecdsa=%zu (valid=%llu) schnorr=%zu (valid=%llu), verified by %s\n", ecdsa.rows,
                (unsigned long long)re.valid, schnorr.rows, (unsigned long long)rs.valid,
                re.local_rows + rs.local_rows == 0 ? "sigverifyd" : "the local fallback");
    return 0;
}
