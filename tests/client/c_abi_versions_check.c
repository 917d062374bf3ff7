// SPDX-License-Identifier: MIT
/* Compiled as C: callers built against older sigverify.h headers.
 *
 * sigverify_options is the C ABI's one size-versioned struct (struct_size).
 * Its history (git log -p client/include/sigverify/sigverify.h):
 *   0.1 (4c49f0f)  struct_size .. batch_timeout_ms: sizeof 56 on LP64
 *   0.2 (be266ea)  + int strict_confirm:            sizeof 64 on LP64
 * A caller of an older header passes the older size, and the library must
 * not read one byte past it. So each struct is placed so that the byte after
 * it is not the caller's: at the end of a heap block of exactly its size
 * (AddressSanitizer reports a read past it; scripts/sanitize.sh asan runs
 * this test) or at the end of a page whose next page is PROT_NONE (a read
 * past it faults in any build). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sigverify/sigverify.h"

/* The 0.1 header's struct, field for field. */
typedef struct options_v0_1 {
    uint32_t struct_size;
    const char* runtime_dir;
    const char* client_name;
    uint64_t arena_size;
    uint32_t ring_entries;
    int fallback_local;
    uint32_t local_threads;
    uint32_t connect_timeout_ms;
    uint32_t liveness_ms;
    uint32_t batch_timeout_ms;
} options_v0_1;

/* The 0.2 header's struct (today's). */
typedef struct options_v0_2 {
    options_v0_1 v0_1;
    int strict_confirm;
} options_v0_2;

size_t c_abi_options_size(int version) {
    return version == 1 ? sizeof(options_v0_1) : version == 2 ? sizeof(options_v0_2) : 0;
}

/* `size` bytes whose last byte is the last one the caller owns. */
typedef struct placed {
    unsigned char* at;
    void* block;
    size_t mapped;
} placed;

static int place(size_t size, int guard_page, placed* p) {
    memset(p, 0, sizeof *p);
    if (!guard_page) {
        p->block = malloc(size);
        p->at = p->block;
        return p->at != NULL;
    }
    {
        const size_t page = (size_t)sysconf(_SC_PAGESIZE);
        unsigned char* map;
        if (size > page) return 0;
        map = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (map == MAP_FAILED) return 0;
        if (mprotect(map + page, page, PROT_NONE) != 0) {
            munmap(map, 2 * page);
            return 0;
        }
        p->block = map;
        p->mapped = 2 * page;
        p->at = map + page - size;
        return 1;
    }
}

static void unplace(placed* p) {
    if (p->mapped != 0) munmap(p->block, p->mapped);
    else free(p->block);
}

/* Connects with the options struct of header `version` (1 = 0.1, 2 = 0.2)
 * placed so that nothing past it is readable: client name `name`, a 256 KiB
 * arena, 8 ring entries, strict_confirm = strict where the version has it;
 * then collects n ECDSA column rows with their 6-byte correlate. 0 on
 * success, else a line number. */
int c_abi_connect_versioned(const char* dir, const char* name, int version, int guard_page, int strict,
                            const uint8_t* message, const uint8_t* key, const uint8_t* signature, uint8_t* correlate,
                            size_t n) {
    options_v0_2 full;
    placed p;
    sigverify_client* c = NULL;
    const size_t size = c_abi_options_size(version);
    int rc;
    if (size == 0) return __LINE__;
    memset(&full, 0, sizeof full);
    full.v0_1.struct_size = (uint32_t)size;
    full.v0_1.runtime_dir = dir;
    full.v0_1.client_name = name;
    full.v0_1.arena_size = 256 * 1024;
    full.v0_1.ring_entries = 8;
    full.v0_1.connect_timeout_ms = 5000;
    full.strict_confirm = strict;
    if (!place(size, guard_page, &p)) return __LINE__;
    memcpy(p.at, &full, size);
    rc = sigverify_connect((const sigverify_options*)(void*)p.at, &c);
    unplace(&p); /* the library must not keep a pointer to the caller's struct */
    if (rc != SIGVERIFY_OK || c == NULL) {
        fprintf(stderr, "connect (options %zu bytes): %s (%s)\n", size, sigverify_strerror(rc), sigverify_last_error());
        return __LINE__;
    }
    rc = sigverify_collect_ecdsa_columns(c, message, key, signature, correlate, n, 6, SIGVERIFY_ENCODING_OPAQUE);
    sigverify_close(c);
    if (rc != SIGVERIFY_OK) {
        fprintf(stderr, "collect: %s (%s)\n", sigverify_strerror(rc), sigverify_last_error());
        return __LINE__;
    }
    return 0;
}

/* A struct of `size` bytes (>= 4, < the 0.1 size: no header ever had it),
 * struct_size = size, every other byte 0xA5, placed as above: connect must
 * refuse it with SIGVERIFY_E_INVALID_ARGUMENT without reading past it.
 * 0 when it does, else a line number. */
int c_abi_connect_too_short(const char* dir, size_t size, int guard_page) {
    placed p;
    sigverify_client* c = NULL;
    uint32_t struct_size = (uint32_t)size;
    int rc;
    (void)dir;
    if (size < sizeof struct_size) return __LINE__;
    if (!place(size, guard_page, &p)) return __LINE__;
    memset(p.at, 0xA5, size);
    memcpy(p.at, &struct_size, sizeof struct_size);
    rc = sigverify_connect((const sigverify_options*)(void*)p.at, &c);
    unplace(&p);
    if (rc != SIGVERIFY_E_INVALID_ARGUMENT || c != NULL) {
        fprintf(stderr, "options of %zu bytes: connect returned %d\n", size, rc);
        if (c != NULL) sigverify_close(c);
        return __LINE__;
    }
    return 0;
}
