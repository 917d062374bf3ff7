// SPDX-License-Identifier: MIT
#include "reference/reference_verifier.hpp"

#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "shm_protocol/verdict_publish.hpp"

namespace sigverify::reference {

void swap_sig_encoding(const std::uint8_t in[64], std::uint8_t out[64]) {
    for (int i = 0; i < 32; ++i) {
        out[i] = in[31 - i];
        out[32 + i] = in[63 - i];
    }
}

// ---------------------------------------------------------------------------
// RowVerifier
// ---------------------------------------------------------------------------

RowVerifier::RowVerifier() : ctx_(secp256k1_context_create(SECP256K1_CONTEXT_NONE)) {
    if (ctx_ == nullptr) throw std::runtime_error("secp256k1_context_create failed");
}

RowVerifier::~RowVerifier() { secp256k1_context_destroy(ctx_); }

bool RowVerifier::verify_ecdsa(const std::uint8_t* record, SigEncoding encoding) const {
    const auto* r = reinterpret_cast<const wire::EcdsaRecord*>(record);
    secp256k1_pubkey key;
    // A 33-byte input must carry prefix 0x02/0x03, x < p and a point on the curve.
    if (!secp256k1_ec_pubkey_parse(ctx_, &key, r->point, sizeof r->point)) return false;

    std::uint8_t compact[64];
    if (encoding == SigEncoding::opaque) {
        swap_sig_encoding(r->sig, compact);
    } else {
        std::memcpy(compact, r->sig, 64);
    }
    secp256k1_ecdsa_signature sig;
    // Fails when r or s >= n; zero values parse but never verify.
    if (!secp256k1_ecdsa_signature_parse_compact(ctx_, &sig, compact)) return false;
    // Consensus accepts high-S: normalize in scratch memory (sig is our copy).
    secp256k1_ecdsa_signature_normalize(ctx_, &sig, &sig);
    return secp256k1_ecdsa_verify(ctx_, &sig, r->hash, &key) == 1;
}

bool RowVerifier::verify_schnorr(const std::uint8_t* record) const {
    const auto* r = reinterpret_cast<const wire::SchnorrRecord*>(record);
    secp256k1_xonly_pubkey key;
    if (!secp256k1_xonly_pubkey_parse(ctx_, &key, r->xonly)) return false;
    // Rejects R.x >= p and s >= n itself.
    return secp256k1_schnorrsig_verify(ctx_, r->sig, r->hash, sizeof r->hash, &key) == 1;
}

bool RowVerifier::verify_row(const RowSpan& rows, std::size_t i) const {
    const std::uint8_t* rec = rows.row(i);
    return rows.kind == RecordKind::ecdsa ? verify_ecdsa(rec, rows.encoding) : verify_schnorr(rec);
}

Tally RowVerifier::run(const RowSpan& rows, std::size_t begin, std::size_t end, Mode mode,
                       std::uint8_t* results) const {
    return verify_and_publish([&](std::size_t i) { return verify_row(rows, i); }, wire::row_tails(rows), begin,
                              std::min(end, rows.count), mode, results);
}

// ---------------------------------------------------------------------------
// Verifier: a fixed pool; the calling thread works as worker 0.
// ---------------------------------------------------------------------------

struct Verifier::Pool {
    explicit Pool(unsigned n) : verifiers(n) {
        for (auto& v : verifiers) v = std::make_unique<RowVerifier>();
        for (unsigned w = 1; w < n; ++w) workers.emplace_back([this, w] { worker_loop(w); });
    }

    ~Pool() {
        {
            std::lock_guard lock(mutex);
            stopping = true;
        }
        wake.notify_all();
        for (auto& t : workers) t.join();
    }

    // Runs job(worker_index) on every worker (caller included) and waits.
    void run_on_all(const std::function<void(unsigned)>& fn) {
        std::lock_guard batch_lock(batch_mutex);
        {
            std::lock_guard lock(mutex);
            job = &fn;
            pending = unsigned(workers.size());
            ++generation;
        }
        wake.notify_all();
        std::exception_ptr error;
        try {
            fn(0);
        } catch (...) {
            error = std::current_exception();
        }
        std::unique_lock lock(mutex);
        done.wait(lock, [&] { return pending == 0; });
        job = nullptr;
        if (!error) error = worker_error;
        worker_error = nullptr;
        lock.unlock();
        if (error) std::rethrow_exception(error);
    }

    void worker_loop(unsigned w) {
        std::uint64_t seen = 0;
        for (;;) {
            const std::function<void(unsigned)>* fn;
            {
                std::unique_lock lock(mutex);
                wake.wait(lock, [&] { return stopping || generation != seen; });
                if (stopping) return;
                seen = generation;
                fn = job;
            }
            std::exception_ptr error;
            try {
                (*fn)(w);
            } catch (...) {
                error = std::current_exception();
            }
            std::lock_guard lock(mutex);
            if (error && !worker_error) worker_error = error;
            if (--pending == 0) done.notify_one();
        }
    }

    std::vector<std::unique_ptr<RowVerifier>> verifiers;
    std::vector<std::thread> workers;
    std::mutex batch_mutex;  // one batch at a time
    std::mutex mutex;
    std::condition_variable wake, done;
    const std::function<void(unsigned)>* job = nullptr;
    unsigned pending = 0;
    std::uint64_t generation = 0;
    bool stopping = false;
    std::exception_ptr worker_error;
};

Verifier::Verifier(unsigned threads) {
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    pool_ = std::make_unique<Pool>(threads);
}

Verifier::~Verifier() = default;

unsigned Verifier::threads() const { return unsigned(pool_->verifiers.size()); }

Tally Verifier::verify(const RowSpan& rows, std::uint8_t* results) {
    return run(rows, Mode::results, results);
}

Tally Verifier::collect(const RowSpan& rows) { return run(rows, Mode::collect, nullptr); }

Tally Verifier::run(const RowSpan& rows, Mode mode, std::uint8_t* results) {
    if (!rows.valid()) throw std::invalid_argument("reference::Verifier: invalid row span");
    if (mode == Mode::results) {
        if (results == nullptr && rows.count != 0)
            throw std::invalid_argument("reference::Verifier: results mode needs a results buffer");
        if (rows.count != 0) std::memset(results, 0, rows.count);  // fail closed
    }
    if (rows.count == 0) return {};

    const unsigned n = threads();
    if (n == 1 || rows.count < 64) return pool_->verifiers[0]->run(rows, 0, rows.count, mode, results);

    // Chunks small enough to balance uneven rows (invalid rows are cheap),
    // large enough that the shared counter is not contended.
    const std::size_t chunk = std::clamp<std::size_t>(rows.count / (std::size_t(n) * 16), 32, 4096);
    std::atomic<std::size_t> next{0};
    std::vector<Tally> tallies(n);
    pool_->run_on_all([&](unsigned w) {
        const RowVerifier& v = *pool_->verifiers[w];
        for (;;) {
            const std::size_t begin = next.fetch_add(chunk, std::memory_order_relaxed);
            if (begin >= rows.count) break;
            tallies[w] += v.run(rows, begin, std::min(rows.count, begin + chunk), mode, results);
        }
    });
    Tally total;
    for (const auto& t : tallies) total += t;
    return total;
}

}  // namespace sigverify::reference
