// SPDX-License-Identifier: MIT
#include "reference/row_generator.hpp"
#include "sigverify/shm_protocol/group_fields.hpp"

#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace sigverify::reference {
namespace {

using wire::RecordKind;
using wire::SigEncoding;
using wire::Table;

// Group order n and field prime p, big-endian.
constexpr std::array<std::uint8_t, 32> kOrderN = {
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE,
    0xBA, 0xAE, 0xDC, 0xE6, 0xAF, 0x48, 0xA0, 0x3B, 0xBF, 0xD2, 0x5E, 0x8C, 0xD0, 0x36, 0x41, 0x41};
constexpr std::array<std::uint8_t, 32> kPrimeP = {
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE, 0xFF, 0xFF, 0xFC, 0x2F};

constexpr std::size_t kKeyPool = 1024;
constexpr std::uint32_t kFirstBlock = 100000;
constexpr std::size_t kRowsPerBlock = 1000;
constexpr std::size_t kGroupsPerBlock = 50;

// splitmix64: a stream per (seed, row, purpose) so row i never depends on order.
struct Rng {
    std::uint64_t state;
    Rng(std::uint64_t seed, std::uint64_t index, std::uint64_t stream)
        : state(seed * 0x9E3779B97F4A7C15ull ^ (index + 1) * 0xD1B54A32D192ED03ull ^
                (stream + 1) * 0x8CB92BA72F3D8DD7ull) {}
    std::uint64_t next() {
        std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    std::uint64_t below(std::uint64_t bound) { return next() % bound; }
    double unit() { return double(next() >> 11) * (1.0 / 9007199254740992.0); }
    void fill(std::uint8_t* out, std::size_t n) {
        for (std::size_t i = 0; i < n; i += 8) {
            const std::uint64_t v = next();
            std::memcpy(out + i, &v, std::min<std::size_t>(8, n - i));
        }
    }
};

// Big-endian 256-bit out = a - b (a >= b assumed).
void sub_be(const std::uint8_t* a, const std::uint8_t* b, std::uint8_t* out) {
    int borrow = 0;
    for (int i = 31; i >= 0; --i) {
        int d = int(a[i]) - int(b[i]) - borrow;
        borrow = d < 0;
        out[i] = std::uint8_t(d + (borrow ? 256 : 0));
    }
}

struct Key {
    std::uint8_t seckey[32];
    std::uint8_t compressed[33];
    std::uint8_t xonly[32];
    secp256k1_keypair keypair;
};

struct ContextHolder {
    secp256k1_context* ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
    ~ContextHolder() { secp256k1_context_destroy(ctx); }
};

std::vector<Key> make_key_pool(const secp256k1_context* ctx, std::uint64_t seed) {
    std::vector<Key> keys(kKeyPool);
    for (std::size_t i = 0; i < kKeyPool; ++i) {
        Rng rng(seed, i, 1);
        Key& k = keys[i];
        do rng.fill(k.seckey, 32);
        while (!secp256k1_ec_seckey_verify(ctx, k.seckey));
        secp256k1_pubkey pub;
        if (!secp256k1_ec_pubkey_create(ctx, &pub, k.seckey) ||
            !secp256k1_keypair_create(ctx, &k.keypair, k.seckey))
            throw std::runtime_error("row generator: key creation failed");
        std::size_t len = 33;
        secp256k1_ec_pubkey_serialize(ctx, k.compressed, &len, &pub, SECP256K1_EC_COMPRESSED);
        secp256k1_xonly_pubkey xpub;
        if (!secp256k1_keypair_xonly_pub(ctx, &xpub, nullptr, &k.keypair))
            throw std::runtime_error("row generator: x-only key derivation failed");
        secp256k1_xonly_pubkey_serialize(ctx, k.xonly, &xpub);
    }
    return keys;
}

// What a row is before it is signed: who signs, which key the row names, and
// the tail fields. message_id selects the hash (rows of one multisig signature
// share it).
struct RowPlan {
    std::uint32_t signer;
    std::uint32_t key;
    std::uint64_t message_id;
    std::uint32_t block;
    std::uint16_t group;
    std::uint8_t mn;
};

std::vector<RowPlan> plan_rows(const GenOptions& o) {
    std::vector<RowPlan> plan;
    plan.reserve(o.count);
    if (o.table == Table::ecdsa || o.table == Table::schnorr) {
        for (std::size_t i = 0; i < o.count; ++i) {
            Rng rng(o.seed, i, 2);
            const auto key = std::uint32_t(rng.below(kKeyPool));
            plan.push_back({key, key, i, std::uint32_t(kFirstBlock + i / kRowsPerBlock), 0, 0});
        }
        return plan;
    }
    for (std::uint64_t g = 0; plan.size() < o.count; ++g) {
        Rng rng(o.seed, g, 3);
        const unsigned n = 1 + unsigned(rng.below(5));  // 1..5 keys
        const unsigned m = 1 + unsigned(rng.below(n));  // 1..n signatures
        const auto base = std::uint32_t(rng.below(kKeyPool));
        const auto key_at = [&](unsigned j) { return std::uint32_t((base + 7 * j) % kKeyPool); };
        const auto block = std::uint32_t(kFirstBlock + g / kGroupsPerBlock);
        const auto group = std::uint16_t(g % kGroupsPerBlock);
        if (o.table == Table::multisig) {
            // Signature i is tried against keys i .. i + (n - m); key i + shift signed it.
            const unsigned shift = unsigned(rng.below(n - m + 1));
            for (unsigned i = 0; i < m && plan.size() < o.count; ++i)
                for (unsigned j = i; j <= i + (n - m) && plan.size() < o.count; ++j)
                    plan.push_back({key_at(i + shift), key_at(j), (g << 4) | i, block, group,
                                    std::uint8_t((i << 4) | j)});
        } else {
            for (unsigned j = 0; j < n && plan.size() < o.count; ++j)
                plan.push_back({key_at(j), key_at(j), (g << 4) | j, block, group, std::uint8_t(m)});
        }
    }
    return plan;
}

// Writes a big-endian scalar into the r (which = 0) or s (which = 1) half of
// an ECDSA signature in the given encoding.
void put_ecdsa_scalar(std::uint8_t* sig, int which, const std::uint8_t* be, SigEncoding enc) {
    std::uint8_t* half = sig + 32 * which;
    if (enc == SigEncoding::compact) {
        std::memcpy(half, be, 32);
    } else {
        for (int i = 0; i < 32; ++i) half[i] = be[31 - i];
    }
}

// Makes a signed record invalid in one of the ways the consensus rules name.
void mutate_ecdsa(wire::EcdsaRecord& r, SigEncoding enc, Rng& rng) {
    std::uint8_t big[32];
    switch (rng.below(10)) {
    case 0: r.hash[rng.below(32)] ^= std::uint8_t(1u << rng.below(8)); break;
    case 1: r.point[1 + rng.below(32)] ^= std::uint8_t(1u << rng.below(8)); break;
    case 2: r.sig[rng.below(32)] ^= std::uint8_t(1u << rng.below(8)); break;
    case 3: r.sig[32 + rng.below(32)] ^= std::uint8_t(1u << rng.below(8)); break;
    case 4: std::memset(r.sig + 32 * rng.below(2), 0, 32); break;  // r = 0 or s = 0
    case 5: put_ecdsa_scalar(r.sig, int(rng.below(2)), kOrderN.data(), enc); break;  // = n
    case 6:  // >= n: n + small, or all ones
        std::memcpy(big, kOrderN.data(), 32);
        if (rng.below(2)) std::memset(big, 0xFF, 32); else big[31] = std::uint8_t(big[31] + 1 + rng.below(0x80));
        put_ecdsa_scalar(r.sig, int(rng.below(2)), big, enc);
        break;
    case 7: {  // bad prefix
        static constexpr std::uint8_t prefixes[] = {0x00, 0x01, 0x04, 0x05, 0x06, 0x07, 0xFF};
        r.point[0] = prefixes[rng.below(sizeof prefixes)];
        break;
    }
    case 8:  // x >= p
        std::memcpy(r.point + 1, kPrimeP.data(), 32);
        if (rng.below(2)) std::memset(r.point + 1, 0xFF, 32); else r.point[32] = std::uint8_t(r.point[32] + rng.below(0x30));
        break;
    default: {  // another message's signature: well-formed but wrong
        std::uint8_t other[32];
        rng.fill(other, 32);
        std::memcpy(r.hash, other, 32);
        break;
    }
    }
}

void mutate_schnorr(wire::SchnorrRecord& r, Rng& rng) {
    switch (rng.below(9)) {
    case 0: r.hash[rng.below(32)] ^= std::uint8_t(1u << rng.below(8)); break;
    case 1: r.xonly[rng.below(32)] ^= std::uint8_t(1u << rng.below(8)); break;
    case 2: r.sig[rng.below(32)] ^= std::uint8_t(1u << rng.below(8)); break;
    case 3: r.sig[32 + rng.below(32)] ^= std::uint8_t(1u << rng.below(8)); break;
    case 4: std::memcpy(r.sig, kPrimeP.data(), 32); break;        // R.x = p
    case 5: std::memcpy(r.sig + 32, kOrderN.data(), 32); break;   // s = n
    case 6: std::memset(r.sig + 32, 0xFF, 32); break;             // s > n
    case 7: std::memcpy(r.xonly, kPrimeP.data(), 32); r.xonly[31] = std::uint8_t(r.xonly[31] + rng.below(0x30)); break;
    default: std::memset(r.sig + 32, 0, 32); break;               // s = 0
    }
}

struct RowCounts {
    std::uint64_t mutated = 0;
    std::uint64_t high_s = 0;
};

void fill_row(const GenOptions& o, std::size_t tail_size, const secp256k1_context* ctx,
              const std::vector<Key>& keys, const RowPlan& p, std::size_t i, std::uint8_t* row,
              RowCounts& counts) {
    const RecordKind kind = wire::record_kind(o.table);
    std::uint8_t hash[32];
    Rng(o.seed, p.message_id, 4).fill(hash, 32);
    Rng rng(o.seed, i, 5);

    if (kind == RecordKind::ecdsa) {
        auto& rec = *reinterpret_cast<wire::EcdsaRecord*>(row);
        std::memcpy(rec.hash, hash, 32);
        std::memcpy(rec.point, keys[p.key].compressed, 33);
        secp256k1_ecdsa_signature sig;
        std::uint8_t compact[64];
        if (!secp256k1_ecdsa_sign(ctx, &sig, hash, keys[p.signer].seckey, nullptr, nullptr))
            throw std::runtime_error("row generator: ecdsa signing failed");
        secp256k1_ecdsa_signature_serialize_compact(ctx, compact, &sig);
        if (rng.unit() < o.high_s_rate) {
            sub_be(kOrderN.data(), compact + 32, compact + 32);  // s <- n - s (still valid)
            ++counts.high_s;
        }
        put_ecdsa_scalar(rec.sig, 0, compact, o.encoding);
        put_ecdsa_scalar(rec.sig, 1, compact + 32, o.encoding);
        if (rng.unit() < o.invalid_rate) {
            mutate_ecdsa(rec, o.encoding, rng);
            ++counts.mutated;
        }
    } else {
        auto& rec = *reinterpret_cast<wire::SchnorrRecord*>(row);
        std::memcpy(rec.hash, hash, 32);
        std::memcpy(rec.xonly, keys[p.key].xonly, 32);
        std::uint8_t aux[32];
        rng.fill(aux, 32);
        if (!secp256k1_schnorrsig_sign32(ctx, rec.sig, hash, &keys[p.signer].keypair, aux))
            throw std::runtime_error("row generator: schnorr signing failed");
        if (rng.unit() < o.invalid_rate) {
            mutate_schnorr(rec, rng);
            ++counts.mutated;
        }
    }

    // Tail: canonical fields as far as they fit, seed bytes beyond.
    std::uint8_t canonical[6];
    std::size_t canonical_size;
    if (o.table == Table::ecdsa || o.table == Table::schnorr) {
        wire::write_u24le(canonical, p.block);
        canonical_size = 3;
    } else {
        sigverify::write_group_tail(canonical, {p.mn, p.group, p.block});
        canonical_size = 6;
    }
    std::uint8_t* tail = row + wire::record_size(kind);
    const std::size_t head = std::min(tail_size, canonical_size);
    std::memcpy(tail, canonical, head);
    if (tail_size > head) Rng(o.seed, i, 6).fill(tail + head, tail_size - head);
}

}  // namespace

std::size_t effective_key_size(const GenOptions& options) {
    return options.tail_size.value_or(wire::canonical_tail_size(options.table));
}

std::vector<std::uint8_t> generate_rows(const GenOptions& o, GenReport* report) {
    const std::size_t tail_size = effective_key_size(o);
    if (tail_size > wire::kMaxTailSize) throw std::invalid_argument("key_size must be 0..255");
    if (!(o.invalid_rate >= 0.0 && o.invalid_rate <= 1.0) || !(o.high_s_rate >= 0.0 && o.high_s_rate <= 1.0))
        throw std::invalid_argument("rates must be within [0, 1]");

    const std::size_t stride = wire::stride(wire::record_kind(o.table), tail_size);
    std::vector<std::uint8_t> rows(o.count * stride);
    ContextHolder main_ctx;
    const std::vector<Key> keys = make_key_pool(main_ctx.ctx, o.seed);
    const std::vector<RowPlan> plan = plan_rows(o);

    unsigned threads = o.threads ? o.threads : std::max(1u, std::thread::hardware_concurrency());
    threads = unsigned(std::min<std::size_t>(threads, std::max<std::size_t>(1, o.count / 256)));
    std::atomic<std::size_t> next{0};
    std::vector<RowCounts> counts(threads);
    std::vector<std::exception_ptr> errors(threads);
    auto work = [&](unsigned w) {
        try {
            ContextHolder ctx;
            constexpr std::size_t chunk = 256;
            for (;;) {
                const std::size_t begin = next.fetch_add(chunk);
                if (begin >= o.count) break;
                for (std::size_t i = begin; i < std::min(o.count, begin + chunk); ++i)
                    fill_row(o, tail_size, ctx.ctx, keys, plan[i], i, rows.data() + i * stride, counts[w]);
            }
        } catch (...) {
            errors[w] = std::current_exception();
        }
    };
    std::vector<std::thread> pool;
    for (unsigned w = 1; w < threads; ++w) pool.emplace_back(work, w);
    work(0);
    for (auto& t : pool) t.join();
    for (auto& e : errors)
        if (e) std::rethrow_exception(e);

    if (report) {
        *report = {};
        report->rows = o.count;
        for (const auto& c : counts) {
            report->mutated += c.mutated;
            report->high_s += c.high_s;
        }
    }
    return rows;
}

}  // namespace sigverify::reference
