// SPDX-License-Identifier: MIT
/* The registered-buffer C ABI compiled as C: register [10, size) of fd,
 * verify n compact ECDSA rows from it, unregister. Returns 0 when every call
 * behaved; the verdicts and counts are left for the C++ test to judge. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sigverify/sigverify.h"

int c_abi_registered_check(const char* dir, int fd, unsigned long long size, size_t n,
                           unsigned long long message_offset, unsigned long long key_offset,
                           unsigned long long signature_offset, unsigned char* results,
                           unsigned long long counts[2]) {
    sigverify_options o;
    sigverify_options_init(&o);
    o.runtime_dir = dir;
    o.client_name = "c-abi-registered";
    sigverify_client* c = NULL;
    if (sigverify_connect(&o, &c) != SIGVERIFY_OK) return 1;
    int rc = 0;
    sigverify_buffer* b = NULL;
    if (sigverify_register_buffer(c, fd, 10, size - 10, &b) != SIGVERIFY_OK || b == NULL) rc = 2;
    if (rc == 0 && sigverify_buffer_data(b) == NULL) rc = 3;
    if (rc == 0 && sigverify_verify_registered_columns(c, b, SIGVERIFY_KIND_ECDSA, SIGVERIFY_ENCODING_COMPACT, n,
                                                       message_offset, key_offset, signature_offset,
                                                       results) != SIGVERIFY_OK)
        rc = 4;
    uint64_t valid = 0, invalid = 0;
    sigverify_last_counts(&valid, &invalid);
    counts[0] = valid;
    counts[1] = invalid;
    /* A column past the end is refused before anything is sent. */
    if (rc == 0 && sigverify_verify_registered_columns(c, b, SIGVERIFY_KIND_ECDSA, SIGVERIFY_ENCODING_COMPACT, n,
                                                       message_offset, key_offset, size, results) !=
                       SIGVERIFY_E_INVALID_ARGUMENT)
        rc = 5;
    if (rc == 0 && strncmp(sigverify_strerror(SIGVERIFY_E_BUFFER_LOST), "registered buffer unreadable under verification",
                           strlen("registered buffer unreadable under verification")) != 0)
        rc = 6;
    sigverify_unregister_buffer(b);
    sigverify_close(c);
    return rc;
}
