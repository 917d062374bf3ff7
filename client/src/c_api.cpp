// SPDX-License-Identifier: MIT
// C ABI over sigverify::Client.
#include "sigverify/sigverify.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <stop_token>
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
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_NOT_FOUND, not_found);
SIGVERIFY_CHECK_CODE(SIGVERIFY_E_BUFFER_LOST, buffer_lost);
static_assert(SIGVERIFY_KIND_ECDSA == static_cast<int>(sigverify::wire::RecordKind::ecdsa));
static_assert(SIGVERIFY_KIND_SCHNORR == static_cast<int>(sigverify::wire::RecordKind::schnorr));

struct sigverify_client {
    std::unique_ptr<sigverify::Client> client;
};

struct sigverify_buffer {
    sigverify::RegisteredBuffer buffer;
};

struct sigverify_cancel_token {
    std::stop_source source;
};

namespace {

thread_local char t_error[256] = "";
thread_local std::uint64_t t_valid = 0, t_invalid = 0;
// The cancel token bound to this thread's calls (sigverify_set_cancel_token);
// a stop_token shares the source's state, so it outlives a freed token.
thread_local std::stop_token t_stop;

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

// A registered column call's kind and encoding: ECDSA with a known encoding,
// or Schnorr (whose encoding is ignored).
bool bad_column_kind(int kind, int encoding) {
    return (kind != SIGVERIFY_KIND_ECDSA && kind != SIGVERIFY_KIND_SCHNORR) ||
           (kind == SIGVERIFY_KIND_ECDSA && bad_encoding(encoding));
}

sigverify::wire::SigEncoding column_encoding(int kind, int encoding) {
    return kind == SIGVERIFY_KIND_ECDSA ? static_cast<sigverify::wire::SigEncoding>(encoding)
                                        : sigverify::wire::SigEncoding::opaque;
}

// Every verify/collect call goes through the generic forms, with this thread's token.
using sigverify::wire::Mode;
using sigverify::wire::RecordKind;
using sigverify::wire::SigEncoding;

BatchResult run_rows(sigverify_client* c, RecordKind kind, const uint8_t* rows, size_t n, size_t key_size,
                     int encoding, Mode mode, uint8_t* results) {
    const sigverify::wire::RowSpan span{kind, key_size, static_cast<SigEncoding>(encoding), const_cast<uint8_t*>(rows),
                                        n};
    return c->client->run(span, mode, results, sigverify::shm::kTableUnspecified, t_stop);
}

BatchResult run_columns(sigverify_client* c, RecordKind kind, const uint8_t* message, const uint8_t* key,
                        const uint8_t* signature, uint8_t* correlate, size_t n, size_t tail_size, int encoding,
                        Mode mode, uint8_t* results) {
    const sigverify::wire::ColumnSpan cols{kind,    static_cast<SigEncoding>(encoding), n, tail_size, message, key,
                                           signature, correlate};
    return c->client->run_columns(cols, mode, results, sigverify::shm::kTableUnspecified, t_stop);
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
    return finish(c, run_rows(c, RecordKind::ecdsa, rows, n, key_size, encoding, Mode::results, results));
}

int sigverify_verify_schnorr(sigverify_client* c, const uint8_t* rows, size_t n, size_t key_size, uint8_t* results) {
    if (c == nullptr) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, run_rows(c, RecordKind::schnorr, rows, n, key_size, SIGVERIFY_ENCODING_OPAQUE, Mode::results,
                              results));
}

int sigverify_collect_ecdsa(sigverify_client* c, uint8_t* rows, size_t n, size_t key_size, int encoding) {
    if (c == nullptr || bad_encoding(encoding)) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, run_rows(c, RecordKind::ecdsa, rows, n, key_size, encoding, Mode::collect, nullptr));
}

int sigverify_collect_schnorr(sigverify_client* c, uint8_t* rows, size_t n, size_t key_size) {
    if (c == nullptr) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, run_rows(c, RecordKind::schnorr, rows, n, key_size, SIGVERIFY_ENCODING_OPAQUE, Mode::collect,
                              nullptr));
}

int sigverify_verify_ecdsa_columns(sigverify_client* c, const uint8_t* message, const uint8_t* key,
                                   const uint8_t* signature, size_t n, int encoding, uint8_t* results) {
    if (c == nullptr || bad_encoding(encoding)) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, run_columns(c, RecordKind::ecdsa, message, key, signature, nullptr, n, 0, encoding,
                                 Mode::results, results));
}

int sigverify_verify_schnorr_columns(sigverify_client* c, const uint8_t* message, const uint8_t* key,
                                     const uint8_t* signature, size_t n, uint8_t* results) {
    if (c == nullptr) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, run_columns(c, RecordKind::schnorr, message, key, signature, nullptr, n, 0,
                                 SIGVERIFY_ENCODING_OPAQUE, Mode::results, results));
}

int sigverify_collect_ecdsa_columns(sigverify_client* c, const uint8_t* message, const uint8_t* key,
                                    const uint8_t* signature, uint8_t* correlate, size_t n, size_t tail_size,
                                    int encoding) {
    if (c == nullptr || bad_encoding(encoding)) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, run_columns(c, RecordKind::ecdsa, message, key, signature, correlate, n, tail_size, encoding,
                                 Mode::collect, nullptr));
}

int sigverify_collect_schnorr_columns(sigverify_client* c, const uint8_t* message, const uint8_t* key,
                                      const uint8_t* signature, uint8_t* correlate, size_t n, size_t tail_size) {
    if (c == nullptr) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, run_columns(c, RecordKind::schnorr, message, key, signature, correlate, n, tail_size,
                                 SIGVERIFY_ENCODING_OPAQUE, Mode::collect, nullptr));
}

int sigverify_register_buffer(sigverify_client* c, int fd, uint64_t offset, uint64_t size, sigverify_buffer** out) {
    if (out != nullptr) *out = nullptr;
    if (c == nullptr || out == nullptr) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    auto* b = new (std::nothrow) sigverify_buffer;
    if (b == nullptr) return finish(nullptr, {Status::system_error, 0, 0, 0});
    const Status st = c->client->register_buffer(fd, offset, size, b->buffer);
    if (st != Status::ok) {
        delete b;
        return finish(c, {st, 0, 0, 0});
    }
    *out = b;
    return finish(c, {});
}

void sigverify_unregister_buffer(sigverify_buffer* buffer) { delete buffer; }

const uint8_t* sigverify_buffer_data(const sigverify_buffer* buffer) {
    return buffer != nullptr ? buffer->buffer.data() : nullptr;
}

int sigverify_verify_registered_columns(sigverify_client* c, const sigverify_buffer* buffer, int kind, int encoding,
                                        size_t n, uint64_t message_offset, uint64_t key_offset,
                                        uint64_t signature_offset, uint8_t* results) {
    if (c == nullptr || buffer == nullptr || bad_column_kind(kind, encoding))
        return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    const sigverify::RegisteredColumns cols{.kind = static_cast<RecordKind>(kind),
                                            .encoding = column_encoding(kind, encoding),
                                            .count = n,
                                            .message_offset = message_offset,
                                            .key_offset = key_offset,
                                            .signature_offset = signature_offset};
    return finish(c, c->client->verify_registered_columns(buffer->buffer, cols, results,
                                                          sigverify::shm::kTableUnspecified, t_stop));
}

int sigverify_verify_registered_column_buffers(sigverify_client* c, int kind, int encoding, size_t n,
                                               const sigverify_buffer* message_buffer, uint64_t message_offset,
                                               const sigverify_buffer* key_buffer, uint64_t key_offset,
                                               const sigverify_buffer* signature_buffer, uint64_t signature_offset,
                                               uint8_t* results) {
    if (c == nullptr || message_buffer == nullptr || key_buffer == nullptr || signature_buffer == nullptr ||
        bad_column_kind(kind, encoding))
        return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    const sigverify::RegisteredColumnBuffers cols{.kind = static_cast<RecordKind>(kind),
                                                  .encoding = column_encoding(kind, encoding),
                                                  .count = n,
                                                  .message = &message_buffer->buffer,
                                                  .message_offset = message_offset,
                                                  .key = &key_buffer->buffer,
                                                  .key_offset = key_offset,
                                                  .signature = &signature_buffer->buffer,
                                                  .signature_offset = signature_offset};
    return finish(c, c->client->verify_registered_columns(cols, results, sigverify::shm::kTableUnspecified, t_stop));
}

sigverify_cancel_token* sigverify_cancel_token_new(void) { return new (std::nothrow) sigverify_cancel_token; }

void sigverify_cancel_token_cancel(sigverify_cancel_token* token) {
    if (token != nullptr) token->source.request_stop();
}

int sigverify_cancel_token_cancelled(const sigverify_cancel_token* token) {
    return token != nullptr && token->source.stop_requested() ? 1 : 0;
}

void sigverify_cancel_token_free(sigverify_cancel_token* token) { delete token; }

void sigverify_set_cancel_token(sigverify_cancel_token* token) {
    t_stop = token != nullptr ? token->source.get_token() : std::stop_token{};
}

void sigverify_last_counts(uint64_t* valid, uint64_t* invalid) {
    if (valid != nullptr) *valid = t_valid;
    if (invalid != nullptr) *invalid = t_invalid;
}

int sigverify_ping(sigverify_client* c, uint64_t* rtt_ns) {
    if (c == nullptr) return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    return finish(c, BatchResult{c->client->ping(rtt_ns), 0, 0, 0});
}

int sigverify_info(sigverify_client* c, sigverify_daemon_info* out) {
    if (c == nullptr || out == nullptr || out->struct_size < sizeof(sigverify_daemon_info))
        return finish(nullptr, {Status::invalid_argument, 0, 0, 0});
    sigverify::DaemonInfo d;
    const Status st = c->client->info(d);
    if (st != Status::ok) return finish(c, {st, 0, 0, 0});
    const std::uint32_t size = out->struct_size;
    std::memset(out, 0, sizeof *out);
    out->struct_size = size;
    auto copy = [](char* dst, std::size_t cap, const std::string& src) {
        const std::size_t n = std::min(src.size(), cap - 1);
        std::memcpy(dst, src.data(), n);
        dst[n] = '\0';
    };
    out->protocol_version = d.protocol_version;
    out->abi_major = d.abi_major;
    out->abi_minor = d.abi_minor;
    out->epoch = d.epoch;
    copy(out->version, sizeof out->version, d.version);
    copy(out->backend, sizeof out->backend, d.backend);
    copy(out->confirm_rule, sizeof out->confirm_rule, d.confirm_rule);
    out->cpu_workers = d.cpu_workers;
    out->gpu_count = d.gpu_count;
    out->gpus_enabled = d.gpus_enabled;
    out->max_registered_buffers = d.max_registered_buffers;
    out->max_arena_size = d.max_arena_size;
    out->max_registered_bytes = d.max_registered_bytes;
    out->max_ring_entries = d.max_ring_entries;
    out->max_clients = d.max_clients;
    for (std::size_t i = 0; i < d.gpus.size() && i < SIGVERIFY_INFO_MAX_GPUS; ++i) {
        sigverify_gpu_info& g = out->gpus[i];
        g.index = d.gpus[i].index;
        g.enabled = d.gpus[i].enabled ? 1 : 0;
        g.memory_bytes = d.gpus[i].memory_bytes;
        copy(g.name, sizeof g.name, d.gpus[i].name);
        copy(g.self_test, sizeof g.self_test, d.gpus[i].self_test);
    }
    return finish(c, {Status::ok, 0, 0, 0});
}

int sigverify_is_connected(const sigverify_client* c) { return c != nullptr && c->client->connected() ? 1 : 0; }

void sigverify_close(sigverify_client* c) { delete c; }

const char* sigverify_strerror(int code) {
    if (code < 0 || static_cast<std::uint32_t>(code) >= sigverify::shm::kStatusCount) return "unknown error code";
    // to_string returns views of string literals: NUL-terminated.
    return sigverify::shm::to_string(static_cast<Status>(code)).data();
}

const char* sigverify_last_error(void) { return t_error; }

// The version this library was built as (the header macros are the version a
// caller was compiled against; the two differ when an older program runs
// with a newer libsigverify.so).
uint32_t sigverify_version(void) { return SIGVERIFY_VERSION_NUMBER; }
const char* sigverify_version_string(void) { return SIGVERIFY_VERSION_STRING; }

}  // extern "C"
