// SPDX-License-Identifier: MIT
/* A registered buffer per column through the C ABI compiled as C: register
 * the three descriptors, verify n rows whose columns lie one in each, refuse
 * a missing buffer, unregister. Returns 0 when every call behaved; the
 * verdicts are left for the C++ test to judge. */
#include <stddef.h>
#include <stdint.h>

#include "sigverify/sigverify.h"

int c_abi_column_buffers_check(const char* dir, const int fds[3], const unsigned long long sizes[3], size_t n,
                               int kind, int encoding, const unsigned long long offsets[3], unsigned char* results) {
    sigverify_options o;
    sigverify_options_init(&o);
    o.runtime_dir = dir;
    o.client_name = "c-abi-column-buffers";
    sigverify_client* c = NULL;
    if (sigverify_connect(&o, &c) != SIGVERIFY_OK) return 1;
    int rc = 0;
    sigverify_buffer* b[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3 && rc == 0; ++i)
        if (sigverify_register_buffer(c, fds[i], 0, sizes[i], &b[i]) != SIGVERIFY_OK || b[i] == NULL) rc = 2;
    if (rc == 0 && sigverify_verify_registered_column_buffers(c, kind, encoding, n, b[0], offsets[0], b[1],
                                                              offsets[1], b[2], offsets[2], results) != SIGVERIFY_OK)
        rc = 3;
    if (rc == 0 && sigverify_verify_registered_column_buffers(c, kind, encoding, n, b[0], offsets[0], NULL,
                                                              offsets[1], b[2], offsets[2], results) !=
                       SIGVERIFY_E_INVALID_ARGUMENT)
        rc = 4;
    for (int i = 0; i < 3; ++i)
        if (b[i] != NULL) sigverify_unregister_buffer(b[i]);
    sigverify_close(c);
    return rc;
}
