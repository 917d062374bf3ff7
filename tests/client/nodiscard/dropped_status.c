/* SPDX-License-Identifier: MIT */
/* Compiled, never run, by tests/client/test_nodiscard.sh: each line marked
   DROPPED throws away a status of libsigverify's C ABI and must warn
   (-Wunused-result); every other line uses what it gets and must not. */
#include <stddef.h>
#include <stdint.h>

#include "sigverify/sigverify.h"

void dropped(sigverify_client* c, sigverify_buffer* b, const uint8_t* rows, uint8_t* results) {
    sigverify_client* out = NULL;
    sigverify_buffer* buf = NULL;
    sigverify_group_row g[1];
    sigverify_block_verdict v[1];
    size_t count = 0;
    sigverify_daemon_info info;
    sigverify_connect(NULL, &out);                                                  /* DROPPED */
    sigverify_verify_ecdsa(c, rows, 1, 0, SIGVERIFY_ENCODING_OPAQUE, results);      /* DROPPED */
    sigverify_verify_schnorr(c, rows, 1, 0, results);                               /* DROPPED */
    sigverify_collect_ecdsa(c, results, 1, 3, SIGVERIFY_ENCODING_OPAQUE);           /* DROPPED */
    sigverify_collect_schnorr(c, results, 1, 3);                                    /* DROPPED */
    sigverify_verify_ecdsa_columns(c, rows, rows, rows, 1, 0, results);             /* DROPPED */
    sigverify_verify_schnorr_columns(c, rows, rows, rows, 1, results);              /* DROPPED */
    sigverify_collect_ecdsa_columns(c, rows, rows, rows, results, 1, 3, 0);         /* DROPPED */
    sigverify_collect_schnorr_columns(c, rows, rows, rows, results, 1, 3);          /* DROPPED */
    sigverify_register_buffer(c, 3, 0, 64, &buf);                                   /* DROPPED */
    sigverify_verify_registered_columns(c, b, SIGVERIFY_KIND_ECDSA, 0, 1, 0, 32, 65, results); /* DROPPED */
    sigverify_verify_registered_column_buffers(c, SIGVERIFY_KIND_ECDSA, 0, 1, b, 0, b, 32, b, 65, results); /* DROPPED */
    sigverify_single_signature_group_rows(NULL, 0, g);                              /* DROPPED */
    sigverify_group_rows_from_ecdsa_correlate(rows, 1, g);                          /* DROPPED */
    sigverify_block_verdicts(SIGVERIFY_GROUP_MULTISIG, g, rows, 1, v, 1, &count, NULL); /* DROPPED */
    sigverify_ping(c, NULL);                                                        /* DROPPED */
    sigverify_cancel_token_new();                                                   /* DROPPED */
    sigverify_info(c, &info);                                                       /* DROPPED */
}

/* The control: the same kind of calls, their results used. */
int used(sigverify_client* c, const uint8_t* rows, uint8_t* results) {
    int bad = 0;
    sigverify_cancel_token* token = sigverify_cancel_token_new();
    if (sigverify_verify_ecdsa(c, rows, 1, 0, SIGVERIFY_ENCODING_OPAQUE, results) != SIGVERIFY_OK) ++bad;
    bad += sigverify_ping(c, NULL) != SIGVERIFY_OK;
    sigverify_set_cancel_token(token); /* returns nothing: no warning */
    sigverify_cancel_token_free(token);
    sigverify_close(c);
#if SIGVERIFY_VERSION_AT_LEAST(0, 2, 0)
    bad += sigverify_version() < SIGVERIFY_VERSION_ENCODE(0, 2, 0);
#endif
    return bad;
}
