// SPDX-License-Identifier: MIT
/* Compiled as C: the column calls of sigverify.h through the daemon in dir,
 * then through the local fallback. The caller compares the outputs with the
 * reference verifier. Returns 0 on success, else a line number. */
#include <stdio.h>
#include <string.h>

#include "sigverify/sigverify.h"

int c_abi_columns_check(const char* dir, const unsigned char* em, const unsigned char* ek, const unsigned char* es,
                        unsigned char* ecorr, size_t etail, int encoding, const unsigned char* sm,
                        const unsigned char* sk, const unsigned char* ss, unsigned char* scorr, size_t stail, size_t n,
                        unsigned char* eresults, unsigned char* sresults, unsigned char* eresults_local,
                        unsigned long long counts[4]) {
    sigverify_options o;
    sigverify_client* c = NULL;
    uint64_t v = 0, iv = 0, cv = 0, civ = 0;
    int rc;
    sigverify_options_init(&o);
    o.runtime_dir = dir;
    o.client_name = "c-abi-columns";
    rc = sigverify_connect(&o, &c);
    if (rc != SIGVERIFY_OK || c == NULL) {
        fprintf(stderr, "connect: %s (%s)\n", sigverify_strerror(rc), sigverify_last_error());
        return __LINE__;
    }
    if (!sigverify_is_connected(c)) return __LINE__;

    rc = sigverify_verify_ecdsa_columns(c, em, ek, es, n, encoding, eresults);
    if (rc != SIGVERIFY_OK) {
        fprintf(stderr, "verify_ecdsa_columns: %s (%s)\n", sigverify_strerror(rc), sigverify_last_error());
        return __LINE__;
    }
    sigverify_last_counts(&v, &iv);
    if (v + iv != n) return __LINE__;
    counts[0] = v;
    counts[1] = iv;
    rc = sigverify_verify_schnorr_columns(c, sm, sk, ss, n, sresults);
    if (rc != SIGVERIFY_OK) return __LINE__;
    sigverify_last_counts(&v, &iv);
    counts[2] = v;
    counts[3] = iv;
    /* Collect gives the same counts as verify. */
    rc = sigverify_collect_ecdsa_columns(c, em, ek, es, ecorr, n, etail, encoding);
    if (rc != SIGVERIFY_OK) return __LINE__;
    sigverify_last_counts(&cv, &civ);
    if (cv != counts[0] || civ != counts[1]) return __LINE__;
    rc = sigverify_collect_schnorr_columns(c, sm, sk, ss, scorr, n, stail);
    if (rc != SIGVERIFY_OK) return __LINE__;
    sigverify_last_counts(&cv, &civ);
    if (cv != counts[2] || civ != counts[3]) return __LINE__;

    /* Bad arguments: a clear error, nothing sent. */
    if (sigverify_verify_ecdsa_columns(c, em, ek, es, n, 7, eresults_local) != SIGVERIFY_E_INVALID_ARGUMENT)
        return __LINE__;
    if (strlen(sigverify_last_error()) == 0) return __LINE__;
    if (sigverify_verify_schnorr_columns(c, sm, NULL, ss, n, sresults) != SIGVERIFY_E_INVALID_ARGUMENT)
        return __LINE__;
    if (sigverify_collect_schnorr_columns(c, sm, sk, ss, scorr, n, 256) != SIGVERIFY_E_INVALID_ARGUMENT)
        return __LINE__;
    if (sigverify_verify_ecdsa_columns(NULL, em, ek, es, n, 0, eresults_local) != SIGVERIFY_E_INVALID_ARGUMENT)
        return __LINE__;
    sigverify_close(c);

    /* No daemon: the local fallback gives the same verdicts. */
    o.runtime_dir = "/nonexistent-sigverify";
    o.fallback_local = 1;
    o.local_threads = 1;
    c = NULL;
    rc = sigverify_connect(&o, &c);
    if (rc != SIGVERIFY_OK || c == NULL || sigverify_is_connected(c)) return __LINE__;
    rc = sigverify_verify_ecdsa_columns(c, em, ek, es, n, encoding, eresults_local);
    if (rc != SIGVERIFY_OK) return __LINE__;
    sigverify_last_counts(&v, &iv);
    if (v != counts[0] || iv != counts[1]) return __LINE__;
    sigverify_close(c);
    return 0;
}
