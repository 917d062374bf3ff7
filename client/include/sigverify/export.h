// SPDX-License-Identifier: MIT
/* SIGVERIFY_API marks what libsigverify.so exports: the C ABI functions and
 * the C++ classes of the public headers. Everything else in the library is
 * built with hidden visibility (client/CMakeLists.txt), and
 * tests/client/check_exports.py fails when the .so exports a symbol that is not
 * on client/exports.allow. Plain C: included by sigverify.h and client.hpp. */
#ifndef SIGVERIFY_EXPORT_H
#define SIGVERIFY_EXPORT_H

#if defined(__GNUC__)
#define SIGVERIFY_API __attribute__((visibility("default")))
#else
#define SIGVERIFY_API
#endif

/* SIGVERIFY_NODISCARD marks the calls whose result is a status or a verdict
 * count: dropping it can turn "the daemon refused / went away" into a silent
 * "done", so the compiler is asked to warn (-Wunused-result, on by default in
 * GCC and clang). C++ gets [[nodiscard]], which a cast to void silences on
 * purpose; C gets warn_unused_result. Empty where neither is known.
 * tests/client/test_nodiscard.sh checks that a dropped status warns. */
#if defined(__cplusplus) && __cplusplus >= 201703L
#define SIGVERIFY_NODISCARD [[nodiscard]]
#elif defined(__GNUC__)
#define SIGVERIFY_NODISCARD __attribute__((warn_unused_result))
#else
#define SIGVERIFY_NODISCARD
#endif

#endif /* SIGVERIFY_EXPORT_H */
