// SPDX-License-Identifier: MIT
// libbitcoin's batch hook (sigverify/lbtc.hpp) over process-wide clients.
//
// Why the fail-closed rule holds by construction: a call ends in exactly one
// of two ways. Either the client answered with status ok and its counts
// account for every row (valid + invalid == count, and with results the 1
// bytes number `valid`): then every verdict is the daemon's or the client's
// local libsecp256k1 fallback's. Or anything else happened: then the whole
// batch is verified again here with libsecp256k1, which overwrites every
// byte. There is no third exit; the local verifier is retried until it runs.
#include "sigverify/lbtc.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>

#include "connection.hpp"
#include "reference/columns.hpp"
#include "sigverify/client.hpp"

namespace sigverify::lbtc {

#if defined(SIGVERIFY_LBTC_FAULT_SEAM)
// A test seam, compiled only into tests/lbtc/test_lbtc_miscount (which builds
// this file itself with the macro; the libraries never define it): what the
// client answered, changed before the hook judges it, as a daemon or client
// bug would change it. Null: the answer as it came.
namespace test_seam {
void (*answer_fault)(BatchResult& answer, std::uint8_t* results, std::size_t count) = nullptr;
}
#endif

namespace {

constexpr std::size_t kMaxSessions = 8;  // distinct max_threads values with a session of their own
constexpr long kDefaultBatchTimeoutMs = 10000;

unsigned local_threads(std::size_t max_threads) {
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    return max_threads == 0 ? cores : static_cast<unsigned>(std::min<std::size_t>(max_threads, cores));
}

long batch_timeout_ms() {
    const char* v = std::getenv("SIGVERIFY_LBTC_BATCH_TIMEOUT_MS");
    if (v == nullptr || *v == '\0') return kDefaultBatchTimeoutMs;
    char* end = nullptr;
    const long ms = std::strtol(v, &end, 10);
    return end != nullptr && *end == '\0' && ms > 0 ? ms : kDefaultBatchTimeoutMs;
}

// One session and one local verifier per thread count. Never destroyed: a
// node may call the hook from its threads while the process exits.
struct Lane {
    // Null until the thread that made the lane has connected (without the
    // registry's mutex; the other threads verify here meanwhile), and null
    // for good when no client could be made (verify here).
    std::atomic<Client*> client{nullptr};
    std::unique_ptr<reference::ColumnVerifier> verifier;  // this lane's libsecp256k1, on first need
    std::once_flag verifier_once;
};

class Registry {
public:
    const pid_t pid = ::getpid();  // the process whose sessions these are
    const long timeout_ms = batch_timeout_ms();  // read once, on first use

    Lane& lane(std::size_t max_threads) {
        const unsigned threads = local_threads(max_threads);
        Lane* made = nullptr;
        {
            std::lock_guard lk(mu_);
            auto it = lanes_.find(threads);
            if (it != lanes_.end()) return *it->second;
            if (lanes_.size() >= kMaxSessions) return *lanes_.begin()->second;  // bounded: reuse one
            made = lanes_.emplace(threads, std::make_unique<Lane>()).first->second.get();
        }
        // The connect (at most the batch timeout) runs without the mutex.
        made->client.store(make_client(threads).release(), std::memory_order_release);
        return *made;
    }

private:
    std::unique_ptr<Client> make_client(unsigned threads) const {
        ClientOptions opt;
        opt.name = "libbitcoin-" + std::to_string(::getpid());
        opt.fallback = Fallback::local;
        opt.local_threads = threads;
        opt.batch_timeout = std::chrono::milliseconds(timeout_ms);
        // A (re)connect never waits longer than a batch may.
        opt.connect_timeout = std::min(opt.connect_timeout, opt.batch_timeout);
        Status st = Status::ok;
        std::string why;
        return Client::connect(opt, st, why);  // with Fallback::local: a client even without a daemon
    }

    std::mutex mu_;
    std::map<unsigned, std::unique_ptr<Lane>> lanes_;
};

// The calling process's registry. After fork() the child makes its own on
// its first call (so its own sessions, with its own names); the inherited
// one is the parent's, whose rings are shared with the parent and whose
// mutex may be held by a parent thread that does not exist here, and is
// never touched again (never freed: see Lane).
Registry& registry() {
    static std::atomic<Registry*> current{new Registry};
    const pid_t me = ::getpid();
    Registry* r = current.load(std::memory_order_acquire);
    while (r->pid != me) {
        auto* fresh = new Registry;
        if (current.compare_exchange_strong(r, fresh, std::memory_order_acq_rel)) return *fresh;
        delete fresh;  // another thread of this process made it first (r is now its)
    }
    return *r;
}

reference::ColumnVerifier* verifier_of(Lane& lane, unsigned threads) {
    try {
        std::call_once(lane.verifier_once,
                       [&] { lane.verifier = std::make_unique<reference::ColumnVerifier>(threads); });
    } catch (...) {
        return nullptr;
    }
    return lane.verifier.get();
}

// libsecp256k1 here, every row; retried until it runs (a thread pool that
// cannot start, memory that cannot be had): never an answer without verdicts.
bool verify_here(Lane& lane, std::size_t max_threads, const wire::ColumnSpan& batch, std::uint8_t* results) {
    for (;;) {
        try {
            reference::ColumnVerifier* v = verifier_of(lane, local_threads(max_threads));
            std::unique_ptr<std::uint8_t[]> scratch;
            std::uint8_t* out = results;
            if (out == nullptr) {
                scratch.reset(new std::uint8_t[batch.count]);
                out = scratch.get();
            }
            if (v != nullptr) {
                const reference::Tally t = v->run(batch, wire::Mode::results, out);
                if (t.valid + t.invalid == batch.count) return t.invalid == 0;
            }
        } catch (...) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
}

// Counts come from shared memory: valid + invalid is compared without the sum
// (a valid of 2^64 - 1 and an invalid of count + 1 add up to count modulo 2^64).
bool all_counted(const BatchResult& r, std::size_t count, const std::uint8_t* results) {
    if (!r.ok() || r.valid > count || r.invalid != count - r.valid) return false;
    if (results == nullptr) return true;
    const std::size_t ones = static_cast<std::size_t>(std::count(results, results + count, std::uint8_t{1}));
    return ones == r.valid;
}

bool verify_columns(wire::RecordKind kind, wire::Table table, const std::uint8_t* digests, const std::uint8_t* keys,
                    const std::uint8_t* sigs, std::size_t count, std::uint8_t* results, std::size_t max_threads) {
    if (count == 0) return true;
    const wire::ColumnSpan b{kind, wire::SigEncoding::opaque, count, 0, digests, keys, sigs, nullptr};
    if (const wire::ColumnError e = b.check(); e != wire::ColumnError::none) {
        // No rows to give verdicts on (a null column, a count past memory):
        // a broken caller. Neither answer would be a verdict, so none is given.
        std::fprintf(stderr, "sigverify::lbtc: unusable columns (%.*s); aborting rather than answer\n",
                     static_cast<int>(wire::to_string(e).size()), wire::to_string(e).data());
        std::abort();
    }
    // The batch timeout bounds the whole call: the connect or reconnect made
    // on its behalf, every reserve and every wait; what is left then is
    // verified here.
    Registry& reg = registry();
    const detail::CallDeadline bound(std::chrono::steady_clock::now() + std::chrono::milliseconds(reg.timeout_ms));
    Lane& lane = reg.lane(max_threads);
    if (Client* client = lane.client.load(std::memory_order_acquire); client != nullptr) {
        BatchResult r = client->run_columns(b, wire::Mode::results, results, static_cast<std::uint8_t>(table));
#if defined(SIGVERIFY_LBTC_FAULT_SEAM)
        if (test_seam::answer_fault != nullptr) test_seam::answer_fault(r, results, count);
#endif
        if (all_counted(r, count, results)) return r.invalid == 0;
    }
    return verify_here(lane, max_threads, b, results);
}

}  // namespace

bool ecdsa_verify_columns(const std::uint8_t* digests32, const std::uint8_t* points33, const std::uint8_t* sigs64,
                          std::size_t count, std::uint8_t* out_results, std::size_t max_threads) {
    return verify_columns(wire::RecordKind::ecdsa, wire::Table::ecdsa, digests32, points33, sigs64, count,
                          out_results, max_threads);
}

bool schnorr_verify_columns(const std::uint8_t* digests32, const std::uint8_t* xonly32, const std::uint8_t* sigs64,
                            std::size_t count, std::uint8_t* out_results, std::size_t max_threads) {
    return verify_columns(wire::RecordKind::schnorr, wire::Table::schnorr, digests32, xonly32, sigs64, count,
                          out_results, max_threads);
}

bool gpu_available() {
    Lane& lane = registry().lane(0);
    Client* client = lane.client.load(std::memory_order_acquire);
    if (client == nullptr) return false;
    DaemonInfo info;
    return client->info(info) == Status::ok && info.gpus_enabled > 0;
}

}  // namespace sigverify::lbtc
