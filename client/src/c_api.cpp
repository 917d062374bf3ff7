// C ABI over sigverify::Client.
#include "sigverify/sigverify.h"

#include <cstddef>
#include <cstring>
#include <string>

#include "sigverify/client.hpp"

using sigverify::BatchResult;
using sigverify::Status;

#define SIGVERIFY_CHECK_CODE(name, status) \
    static_assert(name == static_cast<int>(Status::status), #name " differs from shm::Status::" #status)
SIGVERIFY_CHECK_CODE(SIGVERIFY_OK, ok);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_INVALID_ARGUMENT, invalid_argument);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_BAD_ENTRY, bad_entry);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_BAD_RANGE, bad_range);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_PROTOCOL_VERSION, protocol_version);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_PERMISSION_DENIED, permission_denied);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_BUSY, busy);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_SHUTTING_DOWN, shutting_down);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_CANCELLED, cancelled);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_BACKEND, backend_error);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_UNREACHABLE, unreachable);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_DISCONNECTED, disconnected);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_TIMEOUT, timeout);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_RING_FULL, ring_full);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_STALE_EPOCH, stale_epoch);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_TOO_LARGE, too_large);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_HANDSHAKE, handshake);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_BAD_SEGMENT, bad_segment);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_SYSTEM, system_error);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_PENDING, pending);

struct sigverify_client {
    std::unique_ptr<sigverify::Client> client;
};

namespace {

thread_local char t_error[256] = "";
thread_local std::uint64_t t_valid = 0, t_invalid = 0;

void set_error(const std::string& text) {
    const std::size_t n = std::min(text.size(), sizeof t_error - 1);
    std::memcpy(t_error, text.data(), n);
    t_error[n] = '\0';
}

int finish(sigverify_client* c, const BatchResult& r) {
    t_valid = r.valid;
    t_invalid = r.invalid;
    if (r.status != Status::ok) {
        std::string why = c != nullptr ? c->client->last_error() : std::string();
        set_error(std::string(sigverify::shm::to_string(r.status)) + (why.empty() ? "" : ": " + why));
    } else {
        t_error[0] = '\0';
    }
    return static_cast<int>(r.status);
}

bool bad_encoding(int encoding) {
    return encoding != SIGVERIFY_ENCODING_OPAQUE && encoding != SIGVERIFY_ENCODING_COMPACT;
}

}  // namespace

extern "C" {

void sigverify_options_init(sigverify_options* o) {
    if (o == nullptr) return;
    std::memset(o, 0, sizeof *o);
    o->struct_size = sizeof *o;
}

int sigverify_connect(const sigverify_options* options, sigverify_client** out) {
    if (out == nullptr) {
        set_error("sigverify_connect: out is NULL");
        return SIGVERIFY_E_INVALID_ARGUMENT;
    }
    *out = nullptr;
    sigverify::ClientOptions opt;
    if (options != nullptr) {
        // Callers built against the 0.1 header pass the struct without strict_confirm.
        if (options->struct_size < offsetof(sigverify_options, strict_confirm)) {
            set_error("sigverify_connect: options not initialized with sigverify_options_init");
            return SIGVERIFY_E_INVALID_ARGUMENT;
        }
        if (options->runtime_dir != nullptr) opt.runtime_dir = options->runtime_dir;
        if (options->client_name != nullptr) opt.name = options->client_name;
        opt.arena_size = options->arena_size;
        opt.ring_entries = options->ring_entries;
        opt.fallback = options->fallback_local ? sigverify::Fallback::local : sigverify::Fallback::none;
        opt.local_threads = options->local_threads;
        if (options->connect_timeout_ms != 0) opt.connect_timeout = std::chrono::milliseconds(options->connect_timeout_ms);
        if (options->liveness_ms != 0) opt.liveness_interval = std::chrono::milliseconds(options->liveness_ms);
        opt.batch_timeout = std::chrono::milliseconds(options->batch_timeout_ms);
        if (options->struct_size >= offsetof(sigverify_options, strict_confirm) + sizeof(int))
            opt.strict_confirm = options->strict_confirm != 0;
    }
    Status st = Status::ok;
    std::string msg;
    auto client = sigverify::Client::connect(opt, st, msg);
    if (!client) {
        set_error(msg.empty() ? std::string(sigverify::shm::to_string(st)) : msg);
        return static_cast<int>(st);
    }
    auto* c = new (std::nothrow) sigverify_client;
    if (c == nullptr) {
        set_error("out of memory");
        return SIGVERIFY_E_SYSTEM;
    }
    c->client = std::move(client);
    *out = c;
    t_error[0] = '\0';
    return SIGVERIFY_OK;
}

int sigverify_verify_ecdsa(sigverify_client* c, const uint8_t* rows, size_t n, size_t key_size, int encoding,
                           uint8_t* results) {
    if (c == nullptr || bad_encoding(encoding)) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, c->client->verify_ecdsa(rows, n, key_size, results,
                                             static_cast<sigverify::wire::SigEncoding>(encoding)));
}

int sigverify_verify_schnorr(sigverify_client* c, const uint8_t* rows, size_t n, size_t key_size, uint8_t* results) {
    if (c == nullptr) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, c->client->verify_schnorr(rows, n, key_size, results));
}

int sigverify_collect_ecdsa(sigverify_client* c, uint8_t* rows, size_t n, size_t key_size, int encoding) {
    if (c == nullptr || bad_encoding(encoding)) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, c->client->collect_ecdsa(rows, n, key_size, static_cast<sigverify::wire::SigEncoding>(encoding)));
}

int sigverify_collect_schnorr(sigverify_client* c, uint8_t* rows, size_t n, size_t key_size) {
    if (c == nullptr) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, c->client->collect_schnorr(rows, n, key_size));
}

int sigverify_verify_ecdsa_columns(sigverify_client* c, const uint8_t* message, const uint8_t* key,
                                   const uint8_t* signature, size_t n, int encoding, uint8_t* results) {
    if (c == nullptr || bad_encoding(encoding)) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, c->client->verify_ecdsa_columns(message, key, signature, n, results,
                                                     static_cast<sigverify::wire::SigEncoding>(encoding)));
}

int sigverify_verify_schnorr_columns(sigverify_client* c, const uint8_t* message, const uint8_t* key,
                                     const uint8_t* signature, size_t n, uint8_t* results) {
    if (c == nullptr) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, c->client->verify_schnorr_columns(message, key, signature, n, results));
}

int sigverify_collect_ecdsa_columns(sigverify_client* c, const uint8_t* message, const uint8_t* key,
                                    const uint8_t* signature, uint8_t* correlate, size_t n, size_t tail_size,
                                    int encoding) {
    if (c == nullptr || bad_encoding(encoding)) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, c->client->collect_ecdsa_columns(message, key, signature, correlate, n, tail_size,
                                                      static_cast<sigverify::wire::SigEncoding>(encoding)));
}

int sigverify_collect_schnorr_columns(sigverify_client* c, const uint8_t* message, const uint8_t* key,
                                      const uint8_t* signature, uint8_t* correlate, size_t n, size_t tail_size) {
    if (c == nullptr) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, c->client->collect_schnorr_columns(message, key, signature, correlate, n, tail_size));
}

void sigverify_last_counts(uint64_t* valid, uint64_t* invalid) {
    if (valid != nullptr) *valid = t_valid;
    if (invalid != nullptr) *invalid = t_invalid;
}

int sigverify_ping(sigverify_client* c, uint64_t* rtt_ns) {
    if (c == nullptr) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, BatchResult{c->client->ping(rtt_ns), 0, 0, 0});
}

int sigverify_is_connected(const sigverify_client* c) { return c != nullptr && c->client->connected() ? 1 : 0; }

void sigverify_close(sigverify_client* c) { delete c; }

const char* sigverify_strerror(int code) {
    if (code < 0 || static_cast<std::uint32_t>(code) >= sigverify::shm::kStatusCount) return "unknown error code";
    // to_string returns views of string literals: NUL-terminated.
    return sigverify::shm::to_string(static_cast<Status>(code)).data();
}

const char* sigverify_last_error(void) { return t_error; }

}  // extern "C"
