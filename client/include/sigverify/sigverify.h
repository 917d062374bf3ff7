// SPDX-License-Identifier: MIT
/* libsigverify C ABI: verify secp256k1 signatures through sigverifyd, and
 * compute group and block verdicts from the row verdicts.
 *
 * For C, Go (cgo/purego) and Rust nodes. Rows are the packed bridge rows of
 * sigverify/shm_protocol/wire_format.hpp: a record (ECDSA 129 bytes: hash[32] point[33]
 * sig[64]; Schnorr 128 bytes: hash[32] xonly[32] sig[64]) followed by a tail of
 * key_size bytes (0..255). results mode: results[i] = 1 valid / 0 invalid,
 * zeroed first (fail closed); results may be NULL on every verify call
 * (rows, columns, registered): then only the counts come back
 * (sigverify_last_counts; all valid = SIGVERIFY_OK and invalid == 0).
 * collect mode: the tail of every valid row is zeroed in place.
 *
 * Thread-safety: a sigverify_client may be used from several threads at once;
 * calls of different threads run concurrently (several batches in flight).
 * sigverify_close must not race with other calls on the same client.
 * sigverify_last_error / sigverify_last_counts are per thread: they describe
 * the last call made by the calling thread.
 *
 * Failure: when the daemon is unreachable or dies mid-batch, a client opened
 * with fallback_local = 1 verifies in-process (same verdicts); otherwise the
 * call returns SIGVERIFY_E_UNREACHABLE / _DISCONNECTED / ... within about
 * liveness_ms after the daemon's death. Batches larger than the shared arena
 * are split transparently. No allocation per call after sigverify_connect.
 */
#ifndef SIGVERIFY_SIGVERIFY_H
#define SIGVERIFY_SIGVERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "sigverify/export.h"
#include "sigverify/version.h" /* generated: SIGVERIFY_VERSION_MAJOR, _AT_LEAST(...) */

#ifdef __cplusplus
extern "C" {
#endif


/* Error codes (same numbers as the daemon's completion status codes). */
#define SIGVERIFY_OK 0
#define SIGVERIFY_E_INVALID_ARGUMENT 1
#define SIGVERIFY_E_BAD_ENTRY 2
#define SIGVERIFY_E_BAD_RANGE 3
#define SIGVERIFY_E_PROTOCOL_VERSION 4
#define SIGVERIFY_E_PERMISSION_DENIED 5
#define SIGVERIFY_E_BUSY 6
#define SIGVERIFY_E_SHUTTING_DOWN 7
#define SIGVERIFY_E_CANCELLED 8
#define SIGVERIFY_E_BACKEND 9
#define SIGVERIFY_E_UNREACHABLE 10
#define SIGVERIFY_E_DISCONNECTED 11
#define SIGVERIFY_E_TIMEOUT 12
#define SIGVERIFY_E_RING_FULL 13
#define SIGVERIFY_E_STALE_EPOCH 14
#define SIGVERIFY_E_TOO_LARGE 15
#define SIGVERIFY_E_HANDSHAKE 16
#define SIGVERIFY_E_BAD_SEGMENT 17
#define SIGVERIFY_E_SYSTEM 18
#define SIGVERIFY_E_PENDING 19
#define SIGVERIFY_E_NOT_FOUND 20 /* a cancel named no batch in flight; no such registered buffer */
#define SIGVERIFY_E_BUFFER_LOST 21 /* a registered buffer became unreadable under the daemon: it shrank, or could not be read (registration dropped) */

/* Signature encodings of ECDSA records. */
#define SIGVERIFY_ENCODING_OPAQUE 0  /* r LE || s LE (libsecp256k1's in-memory form) */
#define SIGVERIFY_ENCODING_COMPACT 1 /* r BE || s BE */

typedef struct sigverify_client sigverify_client;

typedef struct sigverify_options {
    uint32_t struct_size;        /* sizeof(sigverify_options), set by sigverify_options_init */
    const char* runtime_dir;     /* NULL: $SIGVERIFY_RUNTIME_DIR, else /run/sigverifyd */
    const char* client_name;     /* NULL: "pid-<pid>" */
    uint64_t arena_size;         /* requested arena bytes, 0 = daemon default */
    uint32_t ring_entries;       /* requested ring entries, 0 = daemon default */
    int fallback_local;          /* 1: verify in-process when the daemon is unavailable */
    uint32_t local_threads;      /* fallback verifier threads, 0 = all cores */
    uint32_t connect_timeout_ms; /* handshake bound, 0 = 2000 */
    uint32_t liveness_ms;        /* longest sleep between daemon liveness checks, 0 = 20 */
    uint32_t batch_timeout_ms;   /* 0 = wait as long as the daemon lives */
    /* Since 0.1.0, ring ABI 1.2 (read only when struct_size covers it, so a
       caller built before the field existed keeps working): 1 = every invalid
       verdict is confirmed by libsecp256k1, also multisig attempts that decide
       no group (exact row verdicts; slower on a GPU daemon). */
    int strict_confirm;
} sigverify_options;

SIGVERIFY_API void sigverify_options_init(sigverify_options* options);

/* Connects. On success *out is the client and SIGVERIFY_OK is returned. With
 * fallback_local and no daemon, also SIGVERIFY_OK (the client works locally and
 * retries the daemon later; see sigverify_is_connected). On failure *out is
 * NULL and sigverify_last_error() says why. options may be NULL (defaults). */
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_connect(const sigverify_options* options, sigverify_client** out);

SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_verify_ecdsa(sigverify_client* client, const uint8_t* rows, size_t n,
                                         size_t key_size, int encoding, uint8_t* results);
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_verify_schnorr(sigverify_client* client, const uint8_t* rows, size_t n,
                                           size_t key_size, uint8_t* results);
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_collect_ecdsa(sigverify_client* client, uint8_t* rows, size_t n, size_t key_size,
                                          int encoding);
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_collect_schnorr(sigverify_client* client, uint8_t* rows, size_t n,
                                            size_t key_size);

/* Column tables (libbitcoin's layout since mid-2026): n rows given as
 *   message[n][32], key[n][33] (ECDSA, compressed) or key[n][32] (Schnorr,
 *   x-only), signature[n][64] (ECDSA in `encoding`; Schnorr BIP-340),
 *   and for collect a correlate[n][tail_size] (tail_size 0..255; NULL when 0).
 * Row i is verified as message[i] || key[i] || signature[i], with the same
 * verdicts as the row calls. verify: results[i] = 1 valid / 0 invalid, zeroed
 * first. collect: the correlate entry of every valid row is zeroed in place,
 * invalid rows keep theirs. The other columns are never written. Needs a
 * daemon of ring ABI 1.1 or later (older: SIGVERIFY_E_BAD_ENTRY, or local
 * verification with fallback_local). See docs/columns.md. */
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_verify_ecdsa_columns(sigverify_client* client, const uint8_t* message,
                                                 const uint8_t* key, const uint8_t* signature, size_t n,
                                                 int encoding, uint8_t* results);
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_verify_schnorr_columns(sigverify_client* client, const uint8_t* message,
                                                   const uint8_t* key, const uint8_t* signature, size_t n,
                                                   uint8_t* results);
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_collect_ecdsa_columns(sigverify_client* client, const uint8_t* message,
                                                  const uint8_t* key, const uint8_t* signature, uint8_t* correlate,
                                                  size_t n, size_t tail_size, int encoding);
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_collect_schnorr_columns(sigverify_client* client, const uint8_t* message,
                                                    const uint8_t* key, const uint8_t* signature, uint8_t* correlate,
                                                    size_t n, size_t tail_size);

/* Registered buffers (ring ABI 1.4; docs/client.md): memory the caller
 * already has -- a memfd, or a regular file it maps, e.g. a table file --
 * registered with the daemon, which reads [offset, offset + size) of fd
 * with pread (it never maps it). Column batches inside it are then verified without the library
 * copying their bytes; only the verdicts come back (one byte per row).
 * The caller keeps its descriptor (the library duplicates it). On success
 * *out is the buffer; free it with sigverify_unregister_buffer before
 * sigverify_close. Errors as Client::register_buffer (client.hpp):
 * SIGVERIFY_E_INVALID_ARGUMENT (size 0, range past the end of the file, not
 * a regular file), SIGVERIFY_E_TOO_LARGE (the daemon's per-client limits),
 * SIGVERIFY_E_BAD_ENTRY (a daemon older than ABI 1.4, without
 * fallback_local). With fallback_local a buffer the daemon cannot take is
 * verified in-process. */
typedef struct sigverify_buffer sigverify_buffer;
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_register_buffer(sigverify_client* client, int fd, uint64_t offset, uint64_t size,
                                            sigverify_buffer** out);
SIGVERIFY_API void sigverify_unregister_buffer(sigverify_buffer* buffer);
/* The registered range, mapped read-only in this process (NULL for NULL). */
SIGVERIFY_API const uint8_t* sigverify_buffer_data(const sigverify_buffer* buffer);

#define SIGVERIFY_KIND_ECDSA 0
#define SIGVERIFY_KIND_SCHNORR 1
/* Verifies n rows whose columns lie in the registered buffer, each column at
 * an offset from the start of the registered range: message[n][32],
 * key[n][33] (ECDSA) / [n][32] (Schnorr), signature[n][64]; encoding is
 * ignored for Schnorr. results[i] = 1 valid / 0 invalid, zeroed first.
 * SIGVERIFY_E_INVALID_ARGUMENT when a column passes the end of the buffer;
 * SIGVERIFY_E_BUFFER_LOST when the file shrank under the daemon. Honours the
 * thread's cancel token. */
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_verify_registered_columns(sigverify_client* client, const sigverify_buffer* buffer,
                                                      int kind, int encoding, size_t n, uint64_t message_offset,
                                                      uint64_t key_offset, uint64_t signature_offset,
                                                      uint8_t* results);
/* The same with each column in a registered buffer of its own (ring ABI 1.6;
 * a libbitcoin-like store keeps one file per column): message[n][32] in
 * message_buffer at message_offset, key[n][33] / [n][32] in key_buffer,
 * signature[n][64] in signature_buffer, each offset from the start of its
 * buffer's registered range (the three may be one buffer). A daemon older
 * than 1.6 answers SIGVERIFY_E_BAD_ENTRY when the buffers differ (with the
 * local fallback the rows are verified in-process). Honours the thread's
 * cancel token. */
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_verify_registered_column_buffers(
    sigverify_client* client, int kind, int encoding, size_t n, const sigverify_buffer* message_buffer,
    uint64_t message_offset, const sigverify_buffer* key_buffer, uint64_t key_offset,
    const sigverify_buffer* signature_buffer, uint64_t signature_offset, uint8_t* results);

/* Cancel tokens (libbitcoin's batch hook takes one). A token is cancelled
 * once, from any thread. The verify/collect calls of a thread that bound a
 * token with sigverify_set_cancel_token return SIGVERIFY_E_CANCELLED soon
 * after it is cancelled (the daemon drops the rows no worker has taken; the
 * chunks running finish): every row is then either verified or untouched
 * (results 0; tails / correlate entries unchanged), never half-written, and
 * sigverify_last_counts gives the counts of the verified rows. A token may
 * be freed while bound (the binding keeps what it needs). */
typedef struct sigverify_cancel_token sigverify_cancel_token;
SIGVERIFY_NODISCARD SIGVERIFY_API sigverify_cancel_token* sigverify_cancel_token_new(void); /* NULL: out of memory */
SIGVERIFY_API void sigverify_cancel_token_cancel(sigverify_cancel_token* token);
SIGVERIFY_API int sigverify_cancel_token_cancelled(const sigverify_cancel_token* token);
SIGVERIFY_API void sigverify_cancel_token_free(sigverify_cancel_token* token);
/* Binds token to the calling thread's later verify/collect calls (NULL: none). */
SIGVERIFY_API void sigverify_set_cancel_token(sigverify_cancel_token* token);

/* Group and block verdicts from row verdicts (sigverify/groups.hpp has the
 * rules; docs/client.md). A row's grouping fields: */
typedef struct sigverify_group_row {
    uint8_t mn;        /* multisig: pair byte, signature index << 4 | key index up to 16 keys
                          (keys 16..19: sigverify_multisig_pair_code below); threshold: m */
    uint8_t reserved;  /* 0 */
    uint16_t group;    /* group number within the block */
    uint32_t block_fk; /* 24 bits; 0xFFFFFF = being written (skipped) */
} sigverify_group_row;

typedef struct sigverify_block_verdict {
    uint32_t block_fk;
    uint32_t groups;
    uint32_t failed_groups;
    int pass; /* 1: every group of the block passes */
} sigverify_block_verdict;

/* The multisig pair byte for signature index s tried against key index k
 * (0-based; docs/columns.md): s << 4 | k while k < 16 (libbitcoin's nibbles),
 * keys 16..19 in codes libbitcoin's band never writes; -1 when k >= 20 or
 * s > k (an attempt CHECKMULTISIG can never use). Inline: not a library call. */
static inline int sigverify_multisig_pair_code(unsigned s, unsigned k) {
    if (k >= 20 || s > k) return -1;
    if (k < 16) return (int)(s << 4 | k);
    if (s < 12) return (int)((12 + (k - 16)) << 4 | s);
    return (int)((4 + (s - 12)) << 4 | (k - 16));
}

#define SIGVERIFY_GROUP_MULTISIG 0  /* CHECKMULTISIG groups, and single signatures */
#define SIGVERIFY_GROUP_THRESHOLD 1 /* tapscript CHECKSIGADD groups */

/* Grouping fields of n single signatures (each its own group; compute them
 * with SIGVERIFY_GROUP_MULTISIG), from their block_fk values. Also for every
 * row of a Schnorr libbitcoin correlate (threshold rows included: libbitcoin
 * fails a block on any failed Schnorr row). */
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_single_signature_group_rows(const uint32_t* block_fks, size_t n,
                                                        sigverify_group_row* out);
/* Grouping fields from an ECDSA libbitcoin correlate column (n entries of
 * 6 bytes: id[3] || pair || group[2]). */
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_group_rows_from_ecdsa_correlate(const uint8_t* correlate, size_t n,
                                                            sigverify_group_row* out);
/* Block verdicts of n rows of one table: verdicts[i] != 0 means row i
 * verified. Writes at most capacity verdicts, sorted by block_fk, and sets
 * *block_count to the number of blocks; SIGVERIFY_E_TOO_LARGE (nothing
 * written) when capacity is smaller. *failed_blocks (may be NULL) counts the
 * blocks that fail. */
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_block_verdicts(int kind, const sigverify_group_row* rows, const uint8_t* verdicts,
                                           size_t n, sigverify_block_verdict* blocks, size_t capacity,
                                           size_t* block_count, uint64_t* failed_blocks);

/* Valid/invalid row counts of this thread's last verify/collect call. */
SIGVERIFY_API void sigverify_last_counts(uint64_t* valid, uint64_t* invalid);
/* Round trip of a no-op through the daemon's rings (rtt_ns may be NULL). */
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_ping(sigverify_client* client, uint64_t* rtt_ns);
/* What the daemon is (Client::info in client.hpp; ring ABI 1.5). Set
   struct_size = sizeof(sigverify_daemon_info) before the call. Errors:
   SIGVERIFY_E_BAD_ENTRY (a daemon older than ABI 1.5), SIGVERIFY_E_UNREACHABLE
   / _DISCONNECTED (no daemon session now), SIGVERIFY_E_INVALID_ARGUMENT. */
#define SIGVERIFY_INFO_MAX_GPUS 8
typedef struct sigverify_gpu_info {
    uint32_t index;          /* CUDA device index */
    int enabled;             /* 1: verifying now */
    uint64_t memory_bytes;
    char name[48];           /* model name, NUL-terminated */
    char self_test[48];      /* "passed", "failed: ...", "passed; switched off: ..." */
} sigverify_gpu_info;
typedef struct sigverify_daemon_info {
    uint32_t struct_size;    /* sizeof(sigverify_daemon_info), set by the caller */
    uint32_t protocol_version;
    uint32_t abi_major, abi_minor;
    uint64_t epoch;
    char version[32];        /* daemon release */
    char backend[32];        /* "cpu", "gpu", "host-kernel" */
    char confirm_rule[16];   /* "strict" or "groups" */
    uint32_t cpu_workers;
    uint32_t gpu_count;      /* GPUs found; gpus[] holds the first SIGVERIFY_INFO_MAX_GPUS */
    uint32_t gpus_enabled;   /* of them, verifying now */
    uint32_t max_registered_buffers;
    uint64_t max_arena_size;
    uint64_t max_registered_bytes;
    uint32_t max_ring_entries;
    uint32_t max_clients;
    sigverify_gpu_info gpus[SIGVERIFY_INFO_MAX_GPUS];
} sigverify_daemon_info;
SIGVERIFY_NODISCARD SIGVERIFY_API int sigverify_info(sigverify_client* client, sigverify_daemon_info* out);

/* 1 when a daemon session is up, 0 when working locally / disconnected. */
SIGVERIFY_API int sigverify_is_connected(const sigverify_client* client);
SIGVERIFY_API void sigverify_close(sigverify_client* client);

/* The version of the library the program runs with (the headers' version is
 * SIGVERIFY_VERSION_NUMBER, sigverify/version.h), as
 * SIGVERIFY_VERSION_ENCODE(major, minor, patch), and as text ("major.minor.patch"). A
 * program can refuse a library older than the calls it uses:
 *   if (sigverify_version() < SIGVERIFY_VERSION_ENCODE(0, 2, 0)) ...
 * Since 0.2.0. */
SIGVERIFY_API uint32_t sigverify_version(void);
SIGVERIFY_API const char* sigverify_version_string(void);

/* Static description of an error code (never NULL). */
SIGVERIFY_API const char* sigverify_strerror(int code);
/* Detailed text of this thread's last failing call ("" if none). */
SIGVERIFY_API const char* sigverify_last_error(void);

#ifdef __cplusplus
}
#endif

#endif /* SIGVERIFY_SIGVERIFY_H */
