// SPDX-License-Identifier: MIT
/* Compiled as C: proves sigverify.h is a C header and exercises the C ABI. */
#include <stdio.h>
#include <string.h>

#include "sigverify/sigverify.h"

/* Verifies n ECDSA rows (verdicts into results) and collects n Schnorr rows
 * through the daemon in dir, then verifies the ECDSA rows again through the
 * local fallback (verdicts into results_local). The caller compares both with
 * the known verdicts. Returns 0 on success, else a line number. */
int c_abi_check(const char* dir, const unsigned char* ecdsa_rows, size_t n, unsigned char* results,
                unsigned char* schnorr_rows, unsigned long long* valid_out, unsigned char* results_local) {
    sigverify_options o;
    sigverify_client* c = NULL;
    unsigned long long valid = 0, invalid = 0;
    uint64_t v = 0, iv = 0, rtt = 0;
    int rc;
    sigverify_options_init(&o);
    o.runtime_dir = dir;
    o.client_name = "c-abi";
    rc = sigverify_connect(&o, &c);
    if (rc != SIGVERIFY_OK || c == NULL) {
        fprintf(stderr, "connect: %s (%s)\n", sigverify_strerror(rc), sigverify_last_error());
        return __LINE__;
    }
    if (!sigverify_is_connected(c)) return __LINE__;
    if (sigverify_ping(c, &rtt) != SIGVERIFY_OK || rtt == 0) return __LINE__;
    rc = sigverify_verify_ecdsa(c, ecdsa_rows, n, 3, SIGVERIFY_ENCODING_OPAQUE, results);
    if (rc != SIGVERIFY_OK) return __LINE__;
    sigverify_last_counts(&v, &iv);
    valid = v;
    invalid = iv;
    if (valid + invalid != n) return __LINE__;
    rc = sigverify_collect_schnorr(c, schnorr_rows, n, 3);
    if (rc != SIGVERIFY_OK) return __LINE__;
    /* A bad encoding is refused (into results_local, so the daemon's verdicts stay for the caller). */
    if (sigverify_verify_ecdsa(c, ecdsa_rows, n, 3, 7, results_local) != SIGVERIFY_E_INVALID_ARGUMENT) return __LINE__;
    if (strlen(sigverify_last_error()) == 0) return __LINE__;
    sigverify_close(c);
    *valid_out = valid;

    /* No daemon in "/nonexistent": a clear error without fallback... */
    o.runtime_dir = "/nonexistent-sigverify";
    c = NULL;
    rc = sigverify_connect(&o, &c);
    if (rc != SIGVERIFY_E_UNREACHABLE || c != NULL) return __LINE__;
    if (strstr(sigverify_last_error(), "/nonexistent-sigverify/sigverifyd.sock") == NULL) return __LINE__;
    /* ...and local verification with fallback. */
    o.fallback_local = 1;
    o.local_threads = 1;
    rc = sigverify_connect(&o, &c);
    if (rc != SIGVERIFY_OK || c == NULL || sigverify_is_connected(c)) return __LINE__;
    memset(results_local, 0xAA, n);
    rc = sigverify_verify_ecdsa(c, ecdsa_rows, n, 3, SIGVERIFY_ENCODING_OPAQUE, results_local);
    if (rc != SIGVERIFY_OK) return __LINE__;
    sigverify_last_counts(&v, &iv);
    if (v != valid || iv != invalid) return __LINE__;
    sigverify_close(c);
    if (strcmp(sigverify_strerror(SIGVERIFY_E_PROTOCOL_VERSION), "protocol version mismatch") != 0) return __LINE__;
    return 0;
}
