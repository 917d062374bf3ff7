// SPDX-License-Identifier: MIT
/* The same through the installed C ABI, block verdicts included. */
#include <stdio.h>
#include <stdlib.h>

#include <sigverify/sigverify.h>

int main(int argc, char** argv) {
    if (argc != 3) return 2;
    FILE* f = fopen(argv[2], "rb");
    if (!f) return 3;
    fseek(f, 0, SEEK_END);
    const long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    const size_t stride = 129 + 3;
    if (size <= 0 || size % (long)stride != 0) return 3;
    unsigned char* rows = malloc((size_t)size);
    if (fread(rows, 1, (size_t)size, f) != (size_t)size) return 3;
    fclose(f);
    const size_t n = (size_t)size / stride;
    unsigned char* results = malloc(n);
    sigverify_options o;
    sigverify_options_init(&o);
    o.runtime_dir = argv[1];
    o.client_name = "consumer-c";
    sigverify_client* c = NULL;
    if (sigverify_connect(&o, &c) != SIGVERIFY_OK) return 4;
    if (sigverify_verify_ecdsa(c, rows, n, 3, SIGVERIFY_ENCODING_OPAQUE, results) != SIGVERIFY_OK) return 4;
    uint64_t valid = 0, invalid = 0;
    sigverify_last_counts(&valid, &invalid);
    printf("valid=%llu invalid=%llu\n", (unsigned long long)valid, (unsigned long long)invalid);
    /* Single signatures of four blocks (row i in block i % 4): a block passes iff all its rows verified. */
    uint32_t* fks = malloc(n * sizeof *fks);
    sigverify_group_row* groups = malloc(n * sizeof *groups);
    int block_ok[4] = {1, 1, 1, 1};
    for (size_t i = 0; i < n; ++i) {
        fks[i] = (uint32_t)(i % 4);
        if (results[i] != 1) block_ok[i % 4] = 0;
    }
    sigverify_block_verdict blocks[4];
    size_t count = 0;
    if (sigverify_single_signature_group_rows(fks, n, groups) != SIGVERIFY_OK ||
        sigverify_block_verdicts(SIGVERIFY_GROUP_MULTISIG, groups, results, n, blocks, 4, &count, NULL) != SIGVERIFY_OK)
        return 5;
    for (size_t b = 0; b < count; ++b)
        if (blocks[b].pass != block_ok[blocks[b].block_fk]) return 5;
    free(fks);
    free(groups);
    sigverify_close(c);
    free(rows);
    free(results);
    return 0;
}
