/* SPDX-License-Identifier: MIT */
/* Prints the version of the headers it was compiled with and of the library
   it runs with, as a C node would check them (tests/client/test_version.sh). */
#include <stdio.h>

#include "sigverify/sigverify.h"

#if !SIGVERIFY_VERSION_AT_LEAST(0, 2, 0)
#error "sigverify/version.h says older than 0.2.0, the first release with sigverify_version()"
#endif
#if SIGVERIFY_VERSION_AT_LEAST(SIGVERIFY_VERSION_MAJOR, SIGVERIFY_VERSION_MINOR, SIGVERIFY_VERSION_PATCH + 1)
#error "SIGVERIFY_VERSION_AT_LEAST is true of a later version"
#endif

int main(void) {
    const unsigned long lib = sigverify_version();
    printf("headers %s %lu\n", SIGVERIFY_VERSION_STRING, (unsigned long)SIGVERIFY_VERSION_NUMBER);
    printf("library %s %lu\n", sigverify_version_string(), lib);
    printf("parts %d.%d.%d soversion %d\n", SIGVERIFY_VERSION_MAJOR, SIGVERIFY_VERSION_MINOR, SIGVERIFY_VERSION_PATCH,
           SIGVERIFY_SOVERSION);
    /* A program refuses a library older than its headers' calls. */
    return lib >= (unsigned long)SIGVERIFY_VERSION_ENCODE(0, 2, 0) ? 0 : 1;
}
