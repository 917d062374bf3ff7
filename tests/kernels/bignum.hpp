// SPDX-License-Identifier: MIT
// OpenSSL BIGNUM owners for the kernel math's host proofs (test_kernel_math,
// test_kernel_math32, test_kernel_safegcd): BIGNUM is the independent arithmetic
// every limb form is checked against.
#pragma once

#include <openssl/bn.h>

namespace sigverify::test {

struct Bn {
    BIGNUM* b = BN_new();
    Bn() = default;
    explicit Bn(const char* hex) { BN_hex2bn(&b, hex); }
    Bn(const Bn&) = delete;
    Bn& operator=(const Bn&) = delete;
    ~Bn() { BN_free(b); }
};

struct BnCtx {
    BN_CTX* ctx = BN_CTX_new();
    BnCtx() = default;
    BnCtx(const BnCtx&) = delete;
    BnCtx& operator=(const BnCtx&) = delete;
    ~BnCtx() { BN_CTX_free(ctx); }
};

}  // namespace sigverify::test
