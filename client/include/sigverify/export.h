// SPDX-License-Identifier: MIT
/* SIGVERIFY_API marks what libsigverify.so exports: the C ABI functions and
 * the C++ classes of the public headers. Everything else in the library is
 * built with hidden visibility (client/CMakeLists.txt), and
 * tests/api/check_exports.py fails when the .so exports a symbol that is not
 * on client/exports.allow. Plain C: included by sigverify.h and client.hpp. */
#ifndef SIGVERIFY_EXPORT_H
#define SIGVERIFY_EXPORT_H

#if defined(__GNUC__)
#define SIGVERIFY_API __attribute__((visibility("default")))
#else
#define SIGVERIFY_API
#endif

#endif /* SIGVERIFY_EXPORT_H */
