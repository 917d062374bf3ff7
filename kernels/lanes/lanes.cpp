// SPDX-License-Identifier: MIT
// Run-time choice of the lane width and the scalar (64-bit) side of
// kernels/lanes/lanes.hpp. Compiled with the project's ordinary flags.
#include "kernels/lanes/lanes.hpp"

#include <cstdlib>

#include "kernels/lanes/lanes_ifma8.hpp"

namespace sigverify::kernels::lanes {

bool cpu_has_ifma8() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512ifma");
}

std::string_view width_name(Width w) { return w == Width::ifma8 ? "ifma8" : "scalar"; }

bool parse_width(std::string_view name, Width& out) {
    if (name == "ifma8") {
        out = Width::ifma8;
    } else if (name == "scalar") {
        out = Width::scalar;
    } else {
        return false;
    }
    return true;
}

Width chosen_width() {
    const bool ifma = cpu_has_ifma8();
    Width w = ifma ? Width::ifma8 : Width::scalar;
    if (const char* env = std::getenv("SIGVERIFY_LANES")) {
        Width forced;
        if (parse_width(env, forced)) w = forced;
    }
    if (w == Width::ifma8 && !ifma) w = Width::scalar;
    return w;
}

namespace {

struct ScalarOps {
    void mul(Fe& r, const Fe& a, const Fe& b) const { fe_mul(r, a, b); }
    void sqr(Fe& r, const Fe& a) const { fe_sqr(r, a); }
    void add(Fe& r, const Fe& a, const Fe& b) const { fe_add(r, a, b); }
    void sub(Fe& r, const Fe& a, const Fe& b) const { fe_sub(r, a, b); }
    void neg(Fe& r, const Fe& a) const { fe_neg(r, a); }
    void mul3(Fe& r, const Fe& a) const { fe_mul_small(r, a, 3); }
};

void field_op1(FieldOp op, const Fe& a, const Fe& b, Fe& r, bool& ok) {
    ok = true;
    switch (op) {
        case FieldOp::mul: fe_mul(r, a, b); break;
        case FieldOp::sqr: fe_sqr(r, a); break;
        case FieldOp::add: fe_add(r, a, b); break;
        case FieldOp::sub: fe_sub(r, a, b); break;
        case FieldOp::neg: fe_neg(r, a); break;
        case FieldOp::inv: fe_inv(r, a); break;
        case FieldOp::sqrt_ok: ok = fe_sqrt(r, a); break;
        case FieldOp::chain: {
            Fe x = a, y = b;
            field_chain(x, y, ScalarOps{});
            fe_add(r, x, y);
            break;
        }
    }
}

}  // namespace

void field_op8(Width w, FieldOp op, const Fe* a, const Fe* b, Fe* r, bool* ok) {
    if (w == Width::ifma8 && cpu_has_ifma8()) {
        field_op8_ifma(op, a, b, r, ok);
        return;
    }
    for (int l = 0; l < 8; ++l) {
        bool good;
        field_op1(op, a[l], b[l], r[l], good);
        if (ok) ok[l] = good;
    }
}

void group_op8(Width w, GroupOp op, const Gej* a, const Ge* b, Gej* r, bool* degenerate) {
    if (w == Width::ifma8 && cpu_has_ifma8()) {
        group_op8_ifma(op, a, b, r, degenerate);
        return;
    }
    for (int l = 0; l < 8; ++l) {
        degenerate[l] = false;
        if (op == GroupOp::dbl) {
            gej_double(r[l], a[l]);
            continue;
        }
        if (!a[l].infinity) {
            Ge aa;
            ge_set_gej(aa, a[l]);
            degenerate[l] = fe_equal(aa.x, b[l].x);
        }
        gej_add_ge(r[l], a[l], b[l]);
    }
}

}  // namespace sigverify::kernels::lanes
