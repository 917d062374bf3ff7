#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generates kernels/generated/fe32_ops.hpp: the hot primitives of the GPU kernel's field
arithmetic mod p = 2^256 - 2^32 - 977 on eight 32-bit limbs, each written
ONCE as a list of PTX instructions and emitted twice from that list:

  * the device form: one inline-asm block per primitive (the carry flag
    never crosses an asm statement);
  * the host twin: the same instructions, one C++ statement each, with the
    carry flag in a variable, so the host tests run the very instruction
    sequence the GPU runs.

Before writing, the generator runs every program through an emulator of
these opcodes (32-bit registers, one carry/borrow flag, PTX ISA semantics) on
random and extreme inputs against Python integers, and checks every bound
the sequence relies on (a non-.cc add that would drop a carry fails).

Primitives (inputs and outputs "weakly reduced": any value < 2^256; the
result is congruent mod p to the exact one):
  mul   r = a * b          mul512 then fe_reduce
  sqr   r = a * a          sqr512 then fe_reduce
  add   r = a + b          256-bit add, the carry folded back twice
  sub   r = a - b          256-bit subtract, the borrow folded back twice
  half  r = a / 2          a + (p if a is odd), shifted right by one
  scmul r = a * b mod n    mul512 then sc_reduce: fully reduced
Each instruction list is emitted once: mul, sqr and scmul are two units
each (a 512-bit product, then a reduction), and a unit that two of them
share is written once for both:
  mul512     t = a * b     product rows as mad.lo/madc.hi pairs (one
                           IMAD.WIDE.U32 with carries each) on even-aligned
                           register pairs in two accumulators
  sqr512     t = a * a     cross products once, in the product's aligned
                           layout (two accumulators), doubled, plus the squares
  fe_reduce  r = t mod p   two folds with 2^256 = 2^32 + 977 (mod p) and a
                           final one
  sc_reduce  r = t mod n   three folds with 2^256 = 2^256 - n (mod n), one
                           conditional subtraction

Usage: scripts/gen-fe32.py [--check-only | --verify-header | --check-emitted HEADER]
  (FE32_TRIALS sets the random trials per primitive, default 30000)
"""
import random
import re
import sys
from pathlib import Path

MASK = (1 << 32) - 1
P = (1 << 256) - (1 << 32) - 977
C = (1 << 32) + 977
NN = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141


# ---------------------------------------------------------------------------
# programs: lists of (opcode, dest, src...) over named 32-bit registers;
# sources are register names or decimal/hex literals
# ---------------------------------------------------------------------------
def aligned_rows(a, b, t, row_js, tops_want):
    """t[0..15] = a * b with every (lo, hi) pair on an even-aligned register
    pair, so that ptxas needs no moves to feed IMAD.WIDE's 64-bit addend: row i
    adds the limbs a_j with j = i (mod 2) into A (pairs at even positions i + j)
    and the others into B, kept shifted down one limb (B'[k] = B[k + 1], pairs
    again at even k). Then t = A + B' 2^32. A (mad.lo.cc, madc.hi.cc) pair on
    the same operands is one IMAD.WIDE.U32 with carry in and out in SASS. Each
    accumulator holds part of rows 0..i, so it is < 2^(32 (i + 9)) and its
    carries stop where stated (the emulator checks every one)."""
    p = []
    A = [f"{t}{k}" for k in range(16)]
    B = [f"q{k}" for k in range(15)]
    tops = {"A": -1, "B": -1}

    def chain(acc, name, pairs, bound, b_i):
        # pairs: (j, position of lo) in order; bound: highest limb the sum may use
        top = tops[name]
        if all(pos > top for _, pos in pairs):  # disjoint plain products
            for j, pos in pairs:
                p.append(("mul.lo.u32", acc[pos], f"{a}{j}", b_i))
                p.append(("mul.hi.u32", acc[pos + 1], f"{a}{j}", b_i))
            tops[name] = max(top, pairs[-1][1] + 1)
            return
        for k, (j, pos) in enumerate(pairs):
            lo_add = acc[pos] if pos <= top else "0"
            hi_add = acc[pos + 1] if pos + 1 <= top else "0"
            last = k == len(pairs) - 1
            p.append(("mad.lo.cc.u32" if k == 0 else "madc.lo.cc.u32", acc[pos], f"{a}{j}", b_i, lo_add))
            final = last and pos + 1 == bound
            p.append(("madc.hi.u32" if final else "madc.hi.cc.u32", acc[pos + 1], f"{a}{j}", b_i, hi_add))
        last_hi = pairs[-1][1] + 1
        if last_hi < bound:
            assert last_hi + 1 > top, "the carry limb must be fresh"
            p.append(("addc.u32", acc[last_hi + 1], "0", "0"))
            tops[name] = last_hi + 1
        else:
            tops[name] = max(top, last_hi)

    for i in range(8):
        js = row_js(i)
        same = [j for j in js if j % 2 == i % 2]
        other = [j for j in js if j % 2 != i % 2]
        if same:
            chain(A, "A", [(j, i + j) for j in same], i + 8, f"{b}{i}")
        if other:
            chain(B, "B", [(j, i + j - 1) for j in other], i + 7, f"{b}{i}")
    assert (tops["A"], tops["B"]) == tops_want, tops
    # t = A + B' 2^32: limbs 1 .. last (A's limbs 0 and 1 are unwritten when
    # row 0 has no a_0 term, as in a square)
    top_a, top_b = tops_want
    first_a = 0 if 0 in row_js(0) else 2
    last = max(top_a, top_b + 1)
    for k in range(1, last + 1):
        a_k = A[k] if first_a <= k <= top_a else "0"
        b_k = B[k - 1] if k - 1 <= top_b else "0"
        op = "add.cc.u32" if k == 1 else ("addc.u32" if k == last else "addc.cc.u32")
        p.append((op, A[k], a_k, b_k))
    return p


def product_rows_aligned(a, b, t):
    """t[0..15] = a * b, every row of a_j b_i (aligned_rows)."""
    return aligned_rows(a, b, t, lambda i: list(range(8)), (15, 14))


def square_rows(a, t):
    """t[0..15] = a^2: the cross products a_i a_j (i < j) once, in the
    register-pair-aligned layout of the product (aligned_rows: pairs at even
    limbs i + j in t, the others in q shifted down one limb, joined by one add
    chain), doubled by a shift, then the squares a_i^2 added (even limbs:
    aligned too). Row i's cross products sum with the rows before to
    < 2^(32 (i + 9)), as in a product: no carry leaves limb i + 8."""
    p = aligned_rows(a, a, t, lambda i: list(range(i + 1, 8)), (13, 13))
    # t1 .. t14 hold the cross products (t0 is not written: no pair at limb 0)
    # double t[1..14] into t[1..15]
    p.append(("shf.l.clamp.b32", f"{t}15", f"{t}14", "0", "1"))
    for k in range(14, 1, -1):
        p.append(("shf.l.clamp.b32", f"{t}{k}", f"{t}{k - 1}", f"{t}{k}", "1"))
    p.append(("shl.b32", f"{t}1", f"{t}1", "1"))
    # squares at limbs 2i, 2i+1
    p.append(("mul.lo.u32", f"{t}0", f"{a}0", f"{a}0"))
    p.append(("mad.hi.cc.u32", f"{t}1", f"{a}0", f"{a}0", f"{t}1"))
    for i in range(1, 8):
        p.append(("madc.lo.cc.u32", f"{t}{2 * i}", f"{a}{i}", f"{a}{i}", f"{t}{2 * i}"))
        last = i == 7
        p.append(("madc.hi.u32" if last else "madc.hi.cc.u32", f"{t}{2 * i + 1}", f"{a}{i}", f"{a}{i}",
                  f"{t}{2 * i + 1}"))
    return p


def reduce_rows(t, r):
    """r[0..7] (< 2^256, = t mod p) from t[0..15], with w/x temporaries."""
    p = []
    # fold 1: w = t_lo + t_hi * 977 + t_hi * 2^32; as even/odd pair chains
    for k, j in enumerate(range(0, 8, 2)):
        p.append(("mad.lo.cc.u32" if k == 0 else "madc.lo.cc.u32", f"w{j}", f"{t}{8 + j}", "977", f"{t}{j}"))
        p.append(("madc.hi.cc.u32", f"w{j + 1}", f"{t}{8 + j}", "977", f"{t}{j + 1}"))
    p.append(("addc.u32", "w8", "0", "0"))
    for k, j in enumerate(range(1, 8, 2)):
        p.append(("mad.lo.cc.u32" if k == 0 else "madc.lo.cc.u32", f"w{j}", f"{t}{8 + j}", "977", f"w{j}"))
        last = j == 7
        p.append(("madc.hi.u32" if last else "madc.hi.cc.u32", f"w{j + 1}", f"{t}{8 + j}", "977", f"w{j + 1}"))
    p.append(("add.cc.u32", "w1", "w1", f"{t}8"))
    for j in range(2, 9):
        p.append(("addc.cc.u32", f"w{j}", f"w{j}", f"{t}{7 + j}"))
    p.append(("addc.u32", "w9", "0", "0"))
    # value = w[0..8) + T 2^256 with T = w8 + w9 2^32 <= 2^32 + 978;
    # fold 2: add T * C = x0 + x1 2^32 + x2 2^64
    p.append(("mul.lo.u32", "x0", "w8", "977"))
    p.append(("mul.hi.u32", "x1", "w8", "977"))
    p.append(("mad.lo.u32", "x1", "w9", "977", "x1"))
    p.append(("add.cc.u32", "x1", "x1", "w8"))
    p.append(("addc.u32", "x2", "w9", "0"))
    p.append(("add.cc.u32", f"{r}0", "w0", "x0"))
    p.append(("addc.cc.u32", f"{r}1", "w1", "x1"))
    p.append(("addc.cc.u32", f"{r}2", "w2", "x2"))
    for j in range(3, 8):
        p.append(("addc.cc.u32", f"{r}{j}", f"w{j}", "0"))
    p.append(("addc.u32", "x3", "0", "0"))
    # fold 3: a carry out (x3 = 1) leaves r = w + x - 2^256 < x < 2^66, so
    # r + C < 2^67 stays in limbs 0..2 and limbs 3..7 (zero then) are final;
    # with x3 = 0 nothing is added. The chain ends at limb 2 (the emulator
    # checks that no carry leaves it; check_fe_reduce_edges reaches x3 = 1).
    p.append(("mul.lo.u32", "x0", "x3", "977"))
    p.append(("add.cc.u32", f"{r}0", f"{r}0", "x0"))
    p.append(("addc.cc.u32", f"{r}1", f"{r}1", "x3"))
    p.append(("addc.u32", f"{r}2", f"{r}2", "0"))
    return p


def mul_rows(A, B, T):
    """T[0..len(A)+len(B)) = A * B for operand lists (registers or
    constants), as chains of (lo, hi) pairs for any sizes.
    Row i touches limbs up to i + len(A), a fresh one: the chain without
    a[-1] runs first and its carry opens that limb; the chain with a[-1] ends
    there. After row i the sum is < 2^(32 (len(A) + i + 1)): no carry leaves."""
    p, na = [], len(A)
    ev, od = list(range(0, na, 2)), list(range(1, na, 2))
    x_chain, y_chain = (ev, od) if (na - 1) % 2 == 0 else (od, ev)

    def pair(k, j, i, last_hi_op=None, hi_addend=None):
        p.append(("mad.lo.cc.u32" if k == 0 else "madc.lo.cc.u32", T[i + j], A[j], B[i], T[i + j]))
        p.append((last_hi_op or "madc.hi.cc.u32", T[i + j + 1], A[j], B[i], hi_addend or T[i + j + 1]))

    # row 0: the even pairs are disjoint plain products; the odd chain adds on
    for j in ev:
        p.append(("mul.lo.u32", T[j], A[j], B[0]))
        p.append(("mul.hi.u32", T[j + 1], A[j], B[0]))
    for k, j in enumerate(od):
        if j == na - 1:  # ends on the fresh top limb
            pair(k, j, 0, "madc.hi.u32", "0")
        else:
            pair(k, j, 0)
    if od and od[-1] != na - 1:
        p.append(("addc.u32", T[na], T[na], "0"))
    for i in range(1, len(B)):
        for k, j in enumerate(y_chain):
            pair(k, j, i)
        if y_chain:
            p.append(("addc.u32", T[i + na], "0", "0"))
        for k, j in enumerate(x_chain):
            if j == na - 1:
                pair(k, j, i, "madc.hi.u32", T[i + na] if y_chain else "0")
            else:
                pair(k, j, i)
    return p


def add_into(p, dst, src, carry_in=False, carry_out=None):
    """dst[k] += src[k] as one carry chain. carry_in: start from the carry
    flag; carry_out: None (no carry may leave: the emulator checks), "keep"
    (leave it in the flag) or a fresh register that receives it."""
    for k, (d, x) in enumerate(zip(dst, src)):
        use_c = carry_in or k > 0
        set_c = k < len(dst) - 1 or carry_out is not None
        op = ("addc" if use_c else "add") + (".cc" if set_c else "") + ".u32"
        p.append((op, d, d, x))
    if carry_out not in (None, "keep"):
        p.append(("addc.u32", carry_out, "0", "0"))


NC = ["0x2fc9bebf", "0x402da173", "0x50b75fc4", "0x45512319"]  # (2^256 - n) mod 2^128; bit 128 is 1
N = ["0xd0364141", "0xbfd25e8c", "0xaf48a03b", "0xbaaedce6", "0xfffffffe", "0xffffffff", "0xffffffff",
     "0xffffffff"]


def sc_reduce_rows(t, r):
    """r[0..7] = t mod n (fully reduced), t[0..15]: folds with
    2^256 = NC (mod n), NC = 2^256 - n < 2^129, then one conditional
    subtraction of n."""
    p = []
    h = [f"{t}{8 + i}" for i in range(8)]
    m = [f"m{i}" for i in range(13)]
    # m = t_lo + h NC_lo + h 2^128  (< 2^386)
    p += mul_rows(h, NC, m[:12])
    add_into(p, m[:8], [f"{t}{i}" for i in range(8)], carry_out="keep")
    add_into(p, m[8:12], ["0"] * 4, carry_in=True, carry_out="m12")
    add_into(p, m[4:12], h, carry_out="keep")
    p.append(("addc.u32", "m12", "m12", "0"))
    # q = m_lo + m_hi NC_lo + m_hi 2^128  (m_hi < 2^130; q < 2^260)
    mh = m[8:13]
    q = [f"q{i}" for i in range(9)]
    p += mul_rows(mh, NC, q)
    add_into(p, q[:8], m[:8], carry_out="keep")
    p.append(("addc.u32", "q8", "q8", "0"))
    add_into(p, q[4:9], mh)
    # s = q_lo + q8 NC  (q8 < 16; s < 2^256 + 2^134)
    s = [f"s{i}" for i in range(9)]
    p += mul_rows(["q8"], NC, s[:5])
    add_into(p, s[:5], q[:5], carry_out="keep")
    for k in range(5, 8):
        p.append(("addc.cc.u32", s[k], q[k], "0"))
    p.append(("addc.u32", "s8", "0", "0"))
    add_into(p, s[4:9], ["q8", "0", "0", "0", "0"])
    # w = s_lo + s8 NC: s8 = 1 leaves s_lo < 2^134, so no carry
    p.append(("sub.u32", "k", "0", "s8"))  # mask
    for k in range(4):
        p.append(("and.b32", f"c{k}", "k", NC[k]))
    add_into(p, s[:8], ["c0", "c1", "c2", "c3", "s8", "0", "0", "0"])
    # r = s - n if s >= n (s + NC overflows), else s
    u = [f"u{i}" for i in range(8)]
    p.append(("add.cc.u32", "u0", "s0", NC[0]))
    for k in range(1, 4):
        p.append(("addc.cc.u32", u[k], s[k], NC[k]))
    p.append(("addc.cc.u32", "u4", "s4", "1"))
    for k in range(5, 8):
        p.append(("addc.cc.u32", u[k], s[k], "0"))
    p.append(("addc.u32", "k", "0", "0"))
    p.append(("sub.u32", "k", "0", "k"))
    for k in range(8):
        p.append(("xor.b32", u[k], u[k], s[k]))
        p.append(("and.b32", u[k], u[k], "k"))
        p.append(("xor.b32", f"{r}{k}", u[k], s[k]))
    return p


def mul512_program():
    return product_rows_aligned("a", "b", "t")


def sqr512_program():
    return square_rows("a", "t")


def fe_reduce_program():
    return reduce_rows("t", "r")


def sc_reduce_program():
    return sc_reduce_rows("t", "r")


def carry_fold_program(kind):
    """r = a + b or a - b (mod p), weakly reduced: the 256-bit add (subtract),
    then its carry (borrow) folded back twice as + (-) C, C = 2^256 mod p. A
    second carry (borrow) can only follow a wrap to a value < C (> 2^256 - C),
    after which none is possible -- and so the second fold touches limbs 0 and
    1 only: r < C gives r + C < 2^34 (r > 2^256 - 2C gives r - C with limb 1
    at least 2^32 - 3 before, no borrow out of it). check_carry_fold_edges
    reaches both second folds."""
    op, opc = ("add", "addc") if kind == "add" else ("sub", "subc")
    p = [(f"{op}.cc.u32", "r0", "a0", "b0")]
    p += [(f"{opc}.cc.u32", f"r{j}", f"a{j}", f"b{j}") for j in range(1, 8)]
    p.append((f"{opc}.u32", "c", "0", "0"))  # add: the carry, 0 or 1; sub: the borrow as a mask
    for rnd in range(2):
        if kind == "add":
            p.append(("mul.lo.u32", "k", "c", "977"))
            low = "c"
        else:
            p.append(("and.b32", "k", "c", "977"))
            p.append(("and.b32", "d", "c", "1"))
            low = "d"
        p.append((f"{op}.cc.u32", "r0", "r0", "k"))
        if rnd == 0:
            p.append((f"{opc}.cc.u32", "r1", "r1", low))
            p += [(f"{opc}.cc.u32", f"r{j}", f"r{j}", "0") for j in range(2, 8)]
            p.append((f"{opc}.u32", "c", "0", "0"))
        else:
            p.append((f"{opc}.u32", "r1", "r1", low))
    return p


def add_program():
    return carry_fold_program("add")


def sub_program():
    return carry_fold_program("sub")


def half_program():
    p = [("and.b32", "m", "a0", "1"), ("sub.u32", "m", "0", "m")]  # 0 or all ones
    p.append(("and.b32", "k", "m", "0xfffffc2f"))
    p.append(("and.b32", "c", "m", "0xfffffffe"))
    p.append(("add.cc.u32", "t0", "a0", "k"))
    p.append(("addc.cc.u32", "t1", "a1", "c"))
    p += [("addc.cc.u32", f"t{j}", f"a{j}", "m") for j in range(2, 8)]
    p.append(("addc.u32", "t8", "0", "0"))
    for j in range(8):
        p.append(("shf.r.clamp.b32", f"r{j}", f"t{j}", f"t{j + 1}", "1"))
    return p


# ---------------------------------------------------------------------------
# the emulator
# ---------------------------------------------------------------------------
# Instructions whose dropped high part is intended: low halves of products,
# masks (0 - x), and the borrow read as a mask (subc 0, 0).
WRAP_OK = {"mul.lo.u32", "mad.lo.u32", "sub.u32"}


def emulate(program, regs):
    cf = None  # carry (add) or borrow (sub) flag; undefined until set

    def val(x):
        if x[0].isdigit():
            return int(x, 0)
        return regs[x]

    for ins in program:
        op, d, *src = ins
        base = op.split(".")[0]
        uses_carry = base in ("madc", "addc", "subc")
        sets_carry = ".cc" in op
        if uses_carry and cf is None:
            raise AssertionError(f"{ins}: reads the carry flag before anything set it")
        cin = cf if uses_carry else 0
        if base in ("mad", "madc", "mul"):
            prod = val(src[0]) * val(src[1])
            part = prod & MASK if ".lo" in op else prod >> 32
            total = part + (val(src[2]) if base != "mul" else 0) + cin
            out = total >> 32
        elif base in ("add", "addc"):
            total = val(src[0]) + val(src[1]) + cin
            out = total >> 32
        elif base in ("sub", "subc"):
            total = val(src[0]) - val(src[1]) - cin
            out = 1 if total < 0 else 0
        elif base == "and":
            total, out = val(src[0]) & val(src[1]), 0
        elif base == "xor":
            total, out = val(src[0]) ^ val(src[1]), 0
        elif base == "shl":
            total, out = (val(src[0]) << val(src[1])) & MASK, 0
        elif op == "shf.l.clamp.b32":  # d = high word of (b:a) << n
            total, out = ((((val(src[1]) << 32) | val(src[0])) << val(src[2])) >> 32) & MASK, 0
        elif op == "shf.r.clamp.b32":  # d = low word of (b:a) >> n
            total, out = (((val(src[1]) << 32) | val(src[0])) >> val(src[2])) & MASK, 0
        else:
            raise AssertionError(f"unknown opcode {op}")
        wraps = op in WRAP_OK or (op == "subc.u32" and src == ["0", "0"])
        if out and not sets_carry and not wraps:
            raise AssertionError(f"{ins}: carry out lost ({total:#x})")
        regs[d] = total & MASK
        if sets_carry:
            cf = out
        elif uses_carry:
            cf = None
    return regs


def limbs(x, n=8):
    return [(x >> (32 * i)) & MASK for i in range(n)]


def join(regs, name, n=8):
    return sum(regs[f"{name}{i}"] << (32 * i) for i in range(n))


def run(programs, **ins):
    """Runs the units (program, inputs, outputs) one after the other, as a
    primitive of two executes them: each emulated on its own (the carry flag
    does not cross from one to the next) on a register file that holds only
    its inputs, so a unit that read a register it did not write would fail
    (its host twin's temporaries are its own)."""
    regs = {}
    for name, v in ins.items():
        regs.update({f"{name}{i}": x for i, x in enumerate(limbs(v))})
    for program, ins_spec, outs_spec in programs:
        out = emulate(program, {n: regs[n] for n in reg_names(ins_spec)})
        regs.update({n: out[n] for n in reg_names(outs_spec)})
    return regs


def check(trials=int(__import__("os").environ.get("FE32_TRIALS", "30000"))):
    rng = random.Random(7)
    top = (1 << 256) - 1
    special = [0, 1, 2, top, top - 1, NN, NN - 1, NN + 1, P, P - 1, P + 1, P + 977, top - C, top - C + 1, 1 << 255, (1 << 255) - 1,
               MASK, top ^ MASK, C, C - 1, 2 * P - top, (top // 2) + 1]
    units = {name: (fn(), ins_spec, outs_spec) for name, (fn, ins_spec, outs_spec, _) in UNITS.items()}
    # every primitive as the header runs it: a unit, or a composite's units in order
    progs = {short: [units[u] for u in parts] for short, (_, parts, _) in PRIMITIVES.items()}
    n = len(special)
    for t in range(trials):
        if t < n * n:
            a, b = special[t % n], special[t // n]
        elif t % 3 == 0:  # values near the top: the carry paths
            a, b = top - rng.getrandbits(rng.randrange(1, 80)), top - rng.getrandbits(rng.randrange(1, 80))
        else:
            a, b = rng.getrandbits(256), rng.getrandbits(256)
        r = join(run(progs["mul"], a=a, b=b), "r")
        assert r < 1 << 256 and r % P == a * b % P, ("mul", hex(a), hex(b))
        r = join(run(progs["sqr"], a=a), "r")
        assert r < 1 << 256 and r % P == a * a % P, ("sqr", hex(a))
        r = join(run(progs["add"], a=a, b=b), "r")
        assert r < 1 << 256 and r % P == (a + b) % P, ("add", hex(a), hex(b))
        r = join(run(progs["sub"], a=a, b=b), "r")
        assert r < 1 << 256 and r % P == (a - b) % P, ("sub", hex(a), hex(b))
        r = join(run(progs["scmul"], a=a, b=b), "r")
        assert r == a * b % NN, ("scmul", hex(a), hex(b))
        r = join(run(progs["half"], a=a), "r")
        assert r < 1 << 256 and (2 * r - a) % P == 0, ("half", hex(a))
    check_sc_reduce_edges(rng)
    check_fe_reduce_edges(rng)
    check_carry_fold_edges(rng)
    return {k: sum(len(u[0]) for u in v) for k, v in progs.items()}


def check_fe_reduce_edges(rng, trials=300):
    """The rare path of reduce_rows, from crafted 512-bit t: fold 2's carry
    out (x3 = 1), where fold 3 adds C in limbs 0..2 only. Fold 1 leaves
    w = t_lo + t_hi C = T 2^256 + W; t is solved for T and a W within T C of
    2^256 (t_lo < C chosen = T 2^256 + W mod C, t_hi the quotient)."""
    prog = fe_reduce_program()
    top = (1 << 256) - 1
    cases = [(1 << 512) - 1, top, (top << 256) | top]
    for _ in range(trials):
        tt = rng.randrange(1, 1 << 33)  # T: what fold 1 carries past 2^256
        w = top - rng.randrange(0, tt * C)  # W + T C >= 2^256: fold 2 carries
        v = (tt << 256) + w
        tl = v % C
        th = (v - tl) // C
        if th <= top:
            cases.append((th << 256) | tl)
    hit = 0
    for t in cases:
        regs = {f"t{i}": x for i, x in enumerate(limbs(t, 16))}
        out = emulate(prog, regs)
        r = join(out, "r")
        assert r < 1 << 256 and r % P == t % P, ("fe_reduce", hex(t))
        hit += out["x3"]
    assert hit > trials // 2, f"fold 3 (x3 = 1) was reached {hit} times only"


def check_carry_fold_edges(rng, trials=300):
    """The rare paths of add and sub: the second carry (a + b - 2^256 + C
    >= 2^256, i.e. a + b >= 2^257 - C) and the second borrow (a - b + 2^256 <
    C), where the second fold touches limbs 0 and 1 only."""
    top = (1 << 256) - 1
    progs = {"add": add_program(), "sub": sub_program()}
    hits = {"add": 0, "sub": 0}
    for _ in range(trials):
        a = top - rng.randrange(0, C)
        b = (1 << 257) - C - a + rng.randrange(0, top - ((1 << 257) - C - a) + 1)  # a + b >= 2^257 - C
        b = min(b, top)
        a2 = rng.randrange(0, C)
        b2 = a2 + (1 << 256) - C + rng.randrange(1, C - a2 + 1) if a2 < C else 0  # a - b + 2^256 < C
        for kind, x, y in (("add", a, b), ("sub", a2, min(b2, top))):
            regs = {f"a{i}": v for i, v in enumerate(limbs(x))}
            regs.update({f"b{i}": v for i, v in enumerate(limbs(y))})
            out = emulate(progs[kind], regs)
            r = join(out, "r")
            want = (x + y) % P if kind == "add" else (x - y) % P
            assert r < 1 << 256 and r % P == want, (kind, hex(x), hex(y))
            second = (x + y - (1 << 256) + C >= 1 << 256) if kind == "add" else (x - y + (1 << 256) < C)
            hits[kind] += second
    for kind, n in hits.items():
        assert n > trials // 2, f"{kind}: the second fold was reached {n} times only"


def check_sc_reduce_edges(rng, trials=300):
    """The rare paths of sc_reduce_rows, from crafted 512-bit t: the third
    fold's carry (s8 = 1: t_lo chosen so that q_lo = 2^256 - 1 - d) and the
    final subtraction (t = n + d)."""
    nc = (1 << 256) - NN
    top = (1 << 256) - 1
    prog = sc_reduce_program()
    cases = [NN, NN + 1, top, NN - 1, (NN << 256) + NN, (1 << 512) - 1]
    for _ in range(trials):
        th = top - rng.getrandbits(64)
        d = rng.getrandbits(8)
        for tl in (0, 1 << 255):  # start anywhere, then solve for q_lo
            m = tl + th * nc
            mlo, mhi = m & top, m >> 256
            want = (top - d - (mhi * nc)) & top  # q_lo = m_lo + m_hi NC = top - d (mod 2^256)
            tl2 = (tl + (want - mlo)) & top
            if ((tl2 + th * nc) >> 256) == mhi:
                cases.append((th << 256) | tl2)
                break
    hit = 0
    for t in cases:
        regs = {f"t{i}": v for i, v in enumerate(limbs(t, 16))}
        out = emulate(prog, regs)
        assert join(out, "r") == t % NN, ("sc_reduce", hex(t))
        hit += out["s8"]
    assert hit > trials // 2, f"the s8 path was hit {hit} times only"



# ---------------------------------------------------------------------------
# emission
# ---------------------------------------------------------------------------
def registers(program, inputs, outputs):
    seen = []
    for op, d, *src in program:
        for x in [d] + src:
            if not x[0].isdigit() and x not in seen and x not in inputs and x not in outputs:
                seen.append(x)
    return seen


def ptx_lines(program, names):
    """The program as PTX text lines, C string literals; operands %0.. are the
    names in order (the outputs, then the inputs); other registers keep their
    names (block-local .reg)."""
    idx = {n: i for i, n in enumerate(names)}

    def opnd(x):
        return f"%{idx[x]}" if x in idx else x

    return [f'"{op} {", ".join(opnd(x) for x in [d] + src)};\\n\\t"' for op, d, *src in program]


def device_asm(body, ins, outs, temps):
    """One asm block; body: its lines, C string literals or macros that stand
    for them."""
    lines = ['"{\\n\\t"'] + ([f'".reg .u32 {", ".join(temps)};\\n\\t"'] if temps else [])
    lines += body + ['"}\\n\\t"']
    text = "\n".join(f"        {line}" for line in lines)
    out_c = ", ".join(f'"=&r"({cname(o)})' for o in outs)
    in_c = ", ".join(f'"r"({cname(i)})' for i in ins)
    return f"    asm({text.strip()}\n        : {out_c}\n        : {in_c});"


def cname(reg):
    """Register name -> C expression (a3 -> a[3])."""
    head = reg.rstrip("0123456789")
    return f"{head}[{reg[len(head):]}]"


def host_twin(program, ins, outs, temps):
    """The same program as C++ statements; cf holds the carry/borrow flag."""
    io = set(ins) | set(outs)

    def ref(x):
        if x[0].isdigit():
            return f"u32({x}u)"
        return cname(x) if x in io else x

    lines = []
    if temps:
        lines.append(f"u32 {', '.join(temps)};")
    lines.append("u32 cf = 0;")
    lines.append("(void)cf;")
    for op, d, *src in program:
        base = op.split(".")[0]
        s = [ref(x) for x in src]
        cin = " + cf" if base in ("madc", "addc", "subc") else ""
        if base in ("mul", "mad", "madc"):
            part = f"u64({s[0]}) * {s[1]}"
            part = f"u64(u32({part}))" if ".lo" in op else f"(({part}) >> 32)"
            add = f" + {s[2]}" if base != "mul" else ""
            expr = f"{part}{add}{cin}"
        elif base in ("add", "addc"):
            expr = f"u64({s[0]}) + {s[1]}{cin}"
        elif base in ("sub", "subc"):
            expr = f"u64({s[0]}) - {s[1]}{' - cf' if cin else ''}"
        elif base == "and":
            expr = f"u64({s[0]} & {s[1]})"
        elif base == "xor":
            expr = f"u64({s[0]} ^ {s[1]})"
        elif base == "shl":
            expr = f"u64(u32({s[0]} << {s[1]}))"
        elif op == "shf.l.clamp.b32":
            expr = f"(((u64({s[1]}) << 32 | {s[0]}) << {s[2]}) >> 32)"
        elif op == "shf.r.clamp.b32":
            expr = f"((u64({s[1]}) << 32 | {s[0]}) >> {s[2]})"
        else:
            raise AssertionError(op)
        stmt = f"{{ const u64 w_ = {expr}; {ref(d)} = u32(w_);"
        if ".cc" in op:
            stmt += " cf = u32(w_ >> 32) & 1u;" if base not in ("sub", "subc") else " cf = u32(w_ >> 63);"
        stmt += " }"
        lines.append(stmt)
    return "\n".join(f"    {line}" for line in lines)


# The units: each one instruction list, emitted once (one asm block on the
# device, its host twin) -- name: (program, inputs, outputs, what it computes).
# Limb arrays are (prefix, count); t is the 512-bit product between the units.
UNITS = {
    "mul512_limbs": (mul512_program, [("a", 8), ("b", 8)], [("t", 16)], "t = a * b, the 512-bit product"),
    "sqr512_limbs": (sqr512_program, [("a", 8)], [("t", 16)], "t = a^2, the 512-bit square"),
    "fe32_reduce512_limbs": (fe_reduce_program, [("t", 16)], [("r", 8)],
                             "r = t (mod p) for a 512-bit t, weakly reduced"),
    "sc32_reduce512_limbs": (sc_reduce_program, [("t", 16)], [("r", 8)],
                             "r = t (mod n) for a 512-bit t, fully reduced (< n)"),
    "fe32_add_limbs": (add_program, [("a", 8), ("b", 8)], [("r", 8)], "r = a + b (mod p), weakly reduced"),
    "fe32_sub_limbs": (sub_program, [("a", 8), ("b", 8)], [("r", 8)], "r = a - b (mod p), weakly reduced"),
    "fe32_half_limbs": (half_program, [("a", 8)], [("r", 8)], "r = a / 2 (mod p), weakly reduced"),
}

# The primitives the kernel calls, as the emulator proves them: short name ->
# (function, the units it runs in order, what it computes). A primitive of
# one unit is that unit; one of two is a function that runs a product unit
# into t[16] and a reduction unit from it (the product and each reduction
# are written once, whoever uses them).
PRIMITIVES = {
    "mul": ("fe32_mul_limbs", ["mul512_limbs", "fe32_reduce512_limbs"], "r = a * b (mod p), weakly reduced"),
    "sqr": ("fe32_sqr_limbs", ["sqr512_limbs", "fe32_reduce512_limbs"], "r = a^2 (mod p), weakly reduced"),
    "add": ("fe32_add_limbs", ["fe32_add_limbs"], None),
    "sub": ("fe32_sub_limbs", ["fe32_sub_limbs"], None),
    "half": ("fe32_half_limbs", ["fe32_half_limbs"], None),
    "scmul": ("sc32_mul_limbs", ["mul512_limbs", "sc32_reduce512_limbs"],
              "r = a * b (mod n), fully reduced (< n) for any 256-bit inputs"),
}

HEADER = """// SPDX-License-Identifier: MIT
// GENERATED by scripts/gen-fe32.py -- do not edit; edit the generator.
//
// The GPU kernel's hot field primitives on eight 32-bit limbs (little-endian),
// each from ONE instruction list: an inline-PTX block on the device and the
// same instructions as C++ statements on the host (the carry flag in `cf`),
// so the host tests run exactly what the GPU runs. The generator proves each
// list with an emulator of the opcodes against exact integers before
// writing this file (instruction counts below are PTX instructions).
//
// "Weakly reduced": inputs and outputs are any 256-bit values; a result is
// congruent mod p = 2^256 - 2^32 - 977 to the exact one, not necessarily < p.
#pragma once

#include "kernels/sv_hd.hpp"

namespace sigverify::kernels {
"""


def params(ins_spec, outs_spec):
    return ", ".join([f"u32 {p}[{n}]" for p, n in outs_spec] + [f"const u32 {p}[{n}]" for p, n in ins_spec])


def reg_names(spec):
    return [f"{p}{i}" for p, n in spec for i in range(n)]


# The operands of every two-unit primitive's asm block: the result r, then
# the inputs a and b (a square has no b). The shared PTX of its units is
# written against this one numbering.
COMPOSITE_OPERANDS = reg_names([("r", 8), ("a", 8), ("b", 8)])


def ptx_macro(name):
    return "SV_PTX_" + name.removesuffix("_limbs").upper()


def emit_single(name, prog_fn, ins_spec, outs_spec, comment):
    """A primitive of one unit: one function, its asm block and its host twin."""
    prog = prog_fn()
    ins, outs = reg_names(ins_spec), reg_names(outs_spec)
    temps = registers(prog, set(ins), set(outs))
    text = [f"// {comment}. {len(prog)} instructions.",
            f"SV_HD void {name}({params(ins_spec, outs_spec)}) {{",
            "#if defined(__CUDA_ARCH__)",
            device_asm(ptx_lines(prog, outs + ins), ins, outs, temps),
            "#else",
            host_twin(prog, ins, outs, temps),
            "#endif",
            "}"]
    return "\n".join(text)


def emit_shared_unit(name, prog_fn, ins_spec, outs_spec, comment):
    """A unit that two-unit primitives share: its PTX once, as a macro that
    their asm blocks paste in, and its host twin once, a host function that
    their host forms call."""
    prog = prog_fn()
    ins, outs = reg_names(ins_spec), reg_names(outs_spec)
    temps = registers(prog, set(ins), set(outs))
    lines = ptx_lines(prog, COMPOSITE_OPERANDS)
    text = [f"// {comment}. {len(prog)} instructions.",
            f"#define {ptx_macro(name)} \\",
            " \\\n".join(f"    {line}" for line in lines),
            "#if !defined(__CUDA_ARCH__)",
            f"inline void {name}({params(ins_spec, outs_spec)}) {{",
            host_twin(prog, ins, outs, temps),
            "}",
            "#endif"]
    return "\n".join(text)


def emit_composite(name, parts, comment):
    """A product unit into t[16], then a reduction unit from it. On the
    device both units' PTX in ONE asm block, t in its block-local registers:
    the code the single list gave (two asm blocks with t between them cost
    ptxas two registers more in the kernel). On the host the units' twins
    one after the other."""
    (product, reduction) = parts
    ins_spec = UNITS[product][1]
    ins, outs = reg_names(ins_spec), reg_names([("r", 8)])
    assert outs + ins == COMPOSITE_OPERANDS[:len(outs + ins)], "the shared PTX's operand numbering"
    progs = [UNITS[u][0]() for u in parts]
    temps = registers(progs[0] + progs[1], set(ins), set(outs))
    args = ", ".join(p for p, _ in ins_spec)
    text = [f"// {comment}:",
            f"// {product} then {reduction}, {sum(len(q) for q in progs)} instructions.",
            f"SV_HD void {name}({params(ins_spec, [('r', 8)])}) {{",
            "#if defined(__CUDA_ARCH__)",
            device_asm([ptx_macro(u) for u in parts], ins, outs, temps),
            "#else",
            "    u32 t[16];",
            f"    {product}(t, {args});",
            f"    {reduction}(r, t);",
            "#endif",
            "}"]
    return "\n".join(text)


def occurrences(seq, run):
    """How many times run stands in seq as a contiguous piece."""
    n = len(run)
    return sum(1 for i in range(len(seq) - n + 1) if seq[i] == run[0] and seq[i:i + n] == run)


def check_each_list_once(text):
    """Every unit's instruction list stands in the header exactly once, in
    its PTX and in its host twin: a primitive reuses a unit, it does not
    repeat it."""
    ptx = re.findall(r'"([a-z][a-z0-9.]* [^"]*;)\\n\\t"', text)
    host = [line.strip() for line in text.splitlines() if line.strip().startswith("{ const u64 w_")]
    for name, (prog_fn, ins_spec, outs_spec, _) in UNITS.items():
        prog = prog_fn()
        ins, outs = reg_names(ins_spec), reg_names(outs_spec)
        unit_ptx = [line[1:-len('\\n\\t"')] for line in ptx_lines(prog, COMPOSITE_OPERANDS)]
        twin = [line.strip() for line in host_twin(prog, ins, outs, registers(prog, set(ins), set(outs))).splitlines()
                if line.strip().startswith("{ const u64 w_")]
        for form, seq, run in (("PTX", ptx, unit_ptx), ("host twin", host, twin)):
            count = occurrences(seq, run)
            if count != 1:
                raise AssertionError(f"{name}: its {form} stands in the header {count} times, not once")


def main():
    if "--check-emitted" in sys.argv:  # the once-only rule on a given header
        check_each_list_once(Path(sys.argv[-1]).read_text())
        print("each unit's instructions stand once")
        return
    counts = check()
    print("emulated and exact: " + ", ".join(f"{k} {v}" for k, v in counts.items()) + " instructions")
    if "--check-only" in sys.argv:
        return
    parts = [HEADER]
    shared = {u for _, units, _ in PRIMITIVES.values() if len(units) > 1 for u in units}
    for name, spec in UNITS.items():
        parts.append((emit_shared_unit if name in shared else emit_single)(name, *spec))
        parts.append("")
    for name, units, comment in PRIMITIVES.values():
        if len(units) > 1:
            parts.append(emit_composite(name, units, comment))
            parts.append("")
    parts.append("}  // namespace sigverify::kernels\n")
    text = "\n".join(parts)
    check_each_list_once(text)
    out = Path(__file__).resolve().parent.parent / "kernels" / "generated" / "fe32_ops.hpp"
    if "--verify-header" in sys.argv:  # ctest: the committed header is what this writes
        if out.read_text() != text:
            print(f"{out} differs from what scripts/gen-fe32.py writes: run it and commit")
            sys.exit(1)
        print(f"{out} is up to date")
        return
    out.write_text(text)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
