// SPDX-License-Identifier: MIT
// FUZZ_CHECK: an invariant of a fuzz harness. A failed one prints the
// condition and its place and aborts, which libFuzzer reports as a finding
// (a check that does not hold on the input it ran).
#pragma once

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            std::fprintf(stderr, "check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);     \
            std::abort();                                                                     \
        }                                                                                     \
    } while (0)
