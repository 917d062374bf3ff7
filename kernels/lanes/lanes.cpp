// SPDX-License-Identifier: MIT
// Run-time choice of the lane width and the scalar (64-bit) side of
// kernels/lanes/lanes.hpp. Compiled with the project's ordinary flags.
#include "kernels/lanes/lanes.hpp"

#include <algorithm>
#include <cstdlib>
#include <functional>

#include "kernels/exact_verify.hpp"
#include "kernels/kernel_math.hpp"
#include "kernels/lanes/lanes_ifma.hpp"

namespace sigverify::kernels::lanes {

bool cpu_has_ifma8() {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("avx512ifma");
}

bool cpu_has_ifma4() {
    __builtin_cpu_init();
    return cpu_has_ifma8() && __builtin_cpu_supports("avx512vl");
}

bool cpu_runs(Width w) {
    switch (w) {
        case Width::ifma8: return cpu_has_ifma8();
        case Width::ifma4: return cpu_has_ifma4();
        case Width::scalar: break;
    }
    return true;
}

std::string_view width_name(Width w) {
    switch (w) {
        case Width::ifma8: return "ifma8";
        case Width::ifma4: return "ifma4";
        case Width::scalar: break;
    }
    return "scalar";
}

bool parse_width(std::string_view name, Width& out) {
    if (name == "ifma8") {
        out = Width::ifma8;
    } else if (name == "ifma4") {
        out = Width::ifma4;
    } else if (name == "scalar") {
        out = Width::scalar;
    } else {
        return false;
    }
    return true;
}

Width chosen_width() {
    Width w = cpu_has_ifma8() ? Width::ifma8 : Width::scalar;  // ifma4 never wider where both run
    if (const char* env = std::getenv("SIGVERIFY_LANES")) {
        Width forced;
        if (parse_width(env, forced)) w = forced;
    }
    return cpu_runs(w) ? w : Width::scalar;
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
    if (w != Width::scalar && cpu_runs(w)) {
        (w == Width::ifma8 ? field_op8_ifma8 : field_op8_ifma4)(op, a, b, r, ok);
        return;
    }
    for (int l = 0; l < 8; ++l) {
        bool good;
        field_op1(op, a[l], b[l], r[l], good);
        if (ok) ok[l] = good;
    }
}

void group_op8(Width w, GroupOp op, const Gej* a, const Ge* b, Gej* r, bool* degenerate) {
    if (w != Width::scalar && cpu_runs(w)) {
        (w == Width::ifma8 ? group_op8_ifma8 : group_op8_ifma4)(op, a, b, r, degenerate);
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

namespace sigverify::kernels::lanes {
namespace {

constexpr u8 kInvalid = 0;
constexpr u8 kValid = 1;
constexpr u8 kRecheck = 2;

// The exact path's parse of one ECDSA record (exact_verify.hpp's rules: r,
// s in [1, n), key prefix 02/03 and x < p (whether x is on the curve the
// lanes say), high-S normalised in a copy, hash reduced silently); false:
// invalid.
bool ecdsa_parse(const u8* record, bool compact, Fe& x, bool& odd, Sc& r, Sc& s, Sc& z) {
    const ByteOrder order = compact ? ByteOrder::big : ByteOrder::little;
    bool good = !sc_set_bytes(r, record + kEcdsaSig, order);
    good &= !sc_set_bytes(s, record + kEcdsaSig + 32, order);
    good = good && !sc_is_zero(r) && !sc_is_zero(s);
    const u8 prefix = record[kRecKey];
    good = good && (prefix == 0x02 || prefix == 0x03) && fe_set_b32(x, record + kRecKey + 1);
    if (!good) return false;
    odd = prefix == 0x03;
    if (sc_is_high(s)) sc_neg(s, s);
    sc_set_bytes(z, record + kRecHash, ByteOrder::big);
    return true;
}

// s[0..8) replaced by their inverses: Montgomery's trick, one inversion.
void sc_batch_inv8(Sc s[8]) {
    Sc prefix[8];
    prefix[0] = s[0];
    for (int i = 1; i < 8; ++i) sc_mul(prefix[i], prefix[i - 1], s[i]);
    Sc inv = sc32_inv(prefix[7]);
    for (int i = 7; i > 0; --i) {
        Sc si;
        sc_mul(si, inv, prefix[i - 1]);
        sc_mul(inv, inv, s[i]);
        s[i] = si;
    }
    s[0] = inv;
}

void put_limbs(u64* out, const Fe& a) {
    const u64* w = a.v;
    const u64 m = (1ull << 52) - 1;
    out[0] = w[0] & m;
    out[1] = ((w[0] >> 52) | (w[1] << 12)) & m;
    out[2] = ((w[1] >> 40) | (w[2] << 24)) & m;
    out[3] = ((w[2] >> 28) | (w[3] << 36)) & m;
    out[4] = w[3] >> 16;
}

// The 128 / bits digits of bits bits each of the 128-bit value hi:lo, most
// significant first (bits divides 64).
void put_digits(u8 (*d)[8], int lane, u64 lo, u64 hi, int bits) {
    const int per_word = 64 / bits, count = 128 / bits;
    const u64 mask = (1ull << bits) - 1;
    for (int w = 0; w < count; ++w)
        d[count - 1 - w][lane] = static_cast<u8>(((w < per_word ? lo : hi) >> (bits * (w % per_word))) & mask);
}

// The multiples of base, for a static table (no large copy on the stack).
void make_table(GTable8& t, const Ge& base) {
    Gej acc = gej_from_ge(base);
    for (int d = 1; d < kGEntries; ++d) {
        Ge a;
        ge_set_gej(a, acc);
        put_limbs(&t.e[d][0], a.x);
        put_limbs(&t.e[d][5], a.y);
        gej_add_ge(acc, acc, base);
    }
}

}  // namespace

const GTable8& g_table8() {
    static const GTable8& tab = [] {
        static GTable8 t{};
        make_table(t, ge_generator());
        return std::cref(t);
    }();
    return tab;
}

const GTable8& g128_table8() {
    static const GTable8& tab = [] {
        static GTable8 t{};
        Gej j = gej_from_ge(ge_generator());
        for (int i = 0; i < 128; ++i) gej_double(j, j);
        Ge g128;
        ge_set_gej(g128, j);
        make_table(t, g128);
        return std::cref(t);
    }();
    return tab;
}

namespace {

// Fills the ladder's digit streams for R = na[l] P[l] + ng[l] G per lane;
// fits[l] false where a GLV half would not fit 128 bits (never, by the
// split's bounds: the lane is then left to the exact path).
void set_scalars(Ecmult8In& in, const Sc na[8], const Sc ng[8], bool fits[8]) {
    in.g = &g_table8();
    in.g128 = &g128_table8();
    for (int l = 0; l < 8; ++l) {
        Sc k1, k2;
        sc_split_lambda(k1, k2, na[l]);
        in.neg1[l] = sc_is_high(k1);
        in.neg2[l] = sc_is_high(k2);
        if (in.neg1[l]) sc_neg(k1, k1);
        if (in.neg2[l]) sc_neg(k2, k2);
        fits[l] = (k1.v[2] | k1.v[3] | k2.v[2] | k2.v[3]) == 0;
        put_digits(in.dk[0], l, k1.v[0], k1.v[1], 4);
        put_digits(in.dk[1], l, k2.v[0], k2.v[1], 4);
        put_digits(in.dg[0], l, ng[l].v[0], ng[l].v[1], kGWindow);
        put_digits(in.dg[1], l, ng[l].v[2], ng[l].v[3], kGWindow);
    }
}

// The parse of one BIP-340 record (exact_schnorr_verify's rules: R.x < p,
// s < n, key x < p; whether x is on the curve the lanes say); e = -challenge
// (eb: the challenge hash, bip340_challenge8_ifma8).
bool schnorr_parse(const u8* record, const u8 eb[32], Fe& rx, Fe& px, Sc& s, Sc& e) {
    if (!fe_set_b32(rx, record + kSchnorrSig)) return false;
    if (sc_set_bytes(s, record + kSchnorrSig + 32, ByteOrder::big)) return false;
    if (!fe_set_b32(px, record + kRecKey)) return false;
    sc_set_bytes(e, eb, ByteOrder::big);  // reduced mod n, as the exact path
    sc_neg(e, e);
    return true;
}

// The verdict a lane's parse and ladder already decide (invalid: no row or
// an off-curve key; recheck: a case the lanes do not decide), else kDecide:
// the kind's final check on R decides.
constexpr u8 kDecide = 0xFF;
u8 ladder_verdict(bool parsed, bool fits, const Ecmult8Out& out, int l) {
    if (!parsed || out.off_curve[l]) return kInvalid;
    if (!fits || out.degenerate[l] || out.r[l].infinity) return kRecheck;
    return kDecide;
}

}  // namespace

void ecdsa_verify8(Width w, const u8* const records[8], bool compact, u8 verdicts[8]) {
    if (w == Width::scalar || !cpu_runs(w)) {
        for (int l = 0; l < 8; ++l)
            verdicts[l] = exact_ecdsa_verify(records[l], compact, host_exact_g_table()) ? kValid : kInvalid;
        return;
    }
    Ecmult8In in;
    Sc r[8], s[8], z[8];
    bool parsed[8];
    for (int l = 0; l < 8; ++l) {
        parsed[l] = ecdsa_parse(records[l], compact, in.px[l], in.odd[l], r[l], s[l], z[l]);
        if (!parsed[l]) {  // a harmless stand-in: G's x with scalars 1, 0 (never read)
            in.px[l] = ge_generator().x;
            in.odd[l] = false;
            s[l] = sc_one();
            z[l] = sc_one();
            r[l] = sc_zero();
        }
    }
    if (std::none_of(parsed, parsed + 8, [](bool p) { return p; })) {
        // Nothing to run the ladder for (zero-filled or garbage rows): libsecp256k1
        // rejects such rows at their parse, and so do the lanes, at that cost.
        std::fill_n(verdicts, 8, kInvalid);
        return;
    }
    sc_batch_inv8(s);
    Sc u1[8], u2[8];
    for (int l = 0; l < 8; ++l) {
        sc_mul(u1[l], z[l], s[l]);
        sc_mul(u2[l], r[l], s[l]);
    }
    bool fits[8];
    set_scalars(in, u2, u1, fits);
    Ecmult8Out out;
    (w == Width::ifma8 ? ecmult8_ifma8 : ecmult8_ifma4)(in, out);
    for (int l = 0; l < 8; ++l) {
        verdicts[l] = ladder_verdict(parsed[l], fits[l], out, l);
        if (verdicts[l] == kDecide) verdicts[l] = ecdsa_check_rx(out.r[l], r[l]) ? kValid : kInvalid;
    }
}

void schnorr_verify8(Width w, const u8* const records[8], u8 verdicts[8]) {
    if (w == Width::scalar || !cpu_runs(w)) {
        for (int l = 0; l < 8; ++l)
            verdicts[l] = exact_schnorr_verify(records[l], host_exact_g_table()) ? kValid : kInvalid;
        return;
    }
    Ecmult8In in;
    in.affine = true;
    Fe rx[8];
    Sc s[8], e[8];
    bool parsed[8];
    u8 eb[8][32];
    (w == Width::ifma8 ? bip340_challenge8_ifma8 : bip340_challenge8_ifma4)(records, eb);
    for (int l = 0; l < 8; ++l) {
        in.odd[l] = false;  // the x-only key's lift has even y
        parsed[l] = schnorr_parse(records[l], eb[l], rx[l], in.px[l], s[l], e[l]);
        if (!parsed[l]) {  // a harmless stand-in: G's x with scalars 0, 1 (never read)
            in.px[l] = ge_generator().x;
            s[l] = sc_one();
            e[l] = sc_zero();
        }
    }
    if (std::none_of(parsed, parsed + 8, [](bool p) { return p; })) {
        // Nothing to run the ladder for (zero-filled or garbage rows): libsecp256k1
        // rejects such rows at their parse, and so do the lanes, at that cost.
        std::fill_n(verdicts, 8, kInvalid);
        return;
    }
    bool fits[8];
    set_scalars(in, e, s, fits);
    Ecmult8Out out;
    (w == Width::ifma8 ? ecmult8_ifma8 : ecmult8_ifma4)(in, out);
    for (int l = 0; l < 8; ++l) {
        verdicts[l] = ladder_verdict(parsed[l], fits[l], out, l);
        if (verdicts[l] == kDecide)
            verdicts[l] = fe_equal(out.ax[l], rx[l]) && !fe_is_odd(out.ay[l]) ? kValid : kInvalid;
    }
}

}  // namespace sigverify::kernels::lanes
