#!/usr/bin/env python3
"""Generates kernels/field_ptx.hpp: the device-only PTX forms of the two hot
primitives of the kernel math, and proves their instruction sequences on the
host before writing them.

  mul_256x256_ptx   512-bit product of two 256-bit values (32-bit limbs,
                    mad.lo/mad.hi carry chains: 136 instructions)
  sqr_256_ptx       512-bit square (each cross product once, doubled)
  fold_512_ptx      the first fold of the reduction mod p:
                    t_lo + t_hi * (2^32 + 977), as 256 bits plus a small top

Each sequence is emitted from one list of (opcode, operands) tuples; the same
list is run here by a small emulator of those opcodes (32-bit registers, one
carry flag, semantics as the PTX ISA defines them) on random and extreme
inputs against Python integers. The portable C++ twins in sv_hd.hpp /
field.hpp compute the same unique results (a product, a sum), and the GPU
check compares the whole verifier against libsecp256k1.

Usage: scripts/gen-field-ptx.py [--check-only]
"""
import random
import sys
from pathlib import Path

MASK = (1 << 32) - 1


def mul_program():
    """r[0..15] = a[0..7] * b[0..7], operand scanning, one row per limb of a."""
    p = []
    # row 0: the low products need no carries; the high ones are one chain
    for j in range(8):
        p.append(("mul.lo.u32", f"r{j}", "a0", f"b{j}"))
    p.append(("mad.hi.cc.u32", "r1", "a0", "b0", "r1"))
    for j in range(1, 7):
        p.append(("madc.hi.cc.u32", f"r{j + 1}", "a0", f"b{j}", f"r{j + 1}"))
    p.append(("madc.hi.u32", "r8", "a0", "b7", "0"))
    # row i: acc (< 2^(32(i+8))) += a_i * b * 2^(32 i)  (< 2^(32(i+9)) after)
    for i in range(1, 8):
        p.append(("mad.lo.cc.u32", f"r{i}", f"a{i}", "b0", f"r{i}"))
        for j in range(1, 8):
            p.append(("madc.lo.cc.u32", f"r{i + j}", f"a{i}", f"b{j}", f"r{i + j}"))
        p.append(("addc.u32", f"r{i + 8}", "0", "0"))
        p.append(("mad.hi.cc.u32", f"r{i + 1}", f"a{i}", "b0", f"r{i + 1}"))
        for j in range(1, 7):
            p.append(("madc.hi.cc.u32", f"r{i + j + 1}", f"a{i}", f"b{j}", f"r{i + j + 1}"))
        # the total fits in i + 9 limbs: no carry out of the top limb
        p.append(("madc.hi.u32", f"r{i + 8}", f"a{i}", "b7", f"r{i + 8}"))
    return p


def sqr_program():
    """r[0..15] = a^2: cross products once (rows i < j), doubled, plus the squares."""
    p = []
    # row 0: a0 * a[1..7] at limbs 1..8
    for j in range(1, 8):
        p.append(("mul.lo.u32", f"r{j}", "a0", f"a{j}"))
    p.append(("mad.hi.cc.u32", "r2", "a0", "a1", "r2"))
    for j in range(2, 7):
        p.append(("madc.hi.cc.u32", f"r{j + 1}", "a0", f"a{j}", f"r{j + 1}"))
    p.append(("madc.hi.u32", "r8", "a0", "a7", "0"))
    # row i: a_i * a[i+1..7] at limbs 2i+1..i+8 (the sum so far < 2^(32(i+9)))
    for i in range(1, 7):
        js = list(range(i + 1, 8))
        if len(js) == 1:
            p.append(("mad.lo.cc.u32", f"r{2 * i + 1}", f"a{i}", f"a{js[0]}", f"r{2 * i + 1}"))
            p.append(("addc.u32", f"r{i + 8}", "0", "0"))
            p.append(("mad.hi.u32", f"r{i + 8}", f"a{i}", f"a{js[0]}", f"r{i + 8}"))
            continue
        p.append(("mad.lo.cc.u32", f"r{i + js[0]}", f"a{i}", f"a{js[0]}", f"r{i + js[0]}"))
        for j in js[1:]:
            p.append(("madc.lo.cc.u32", f"r{i + j}", f"a{i}", f"a{j}", f"r{i + j}"))
        p.append(("addc.u32", f"r{i + 8}", "0", "0"))
        p.append(("mad.hi.cc.u32", f"r{i + js[0] + 1}", f"a{i}", f"a{js[0]}", f"r{i + js[0] + 1}"))
        for j in js[1:-1]:
            p.append(("madc.hi.cc.u32", f"r{i + j + 1}", f"a{i}", f"a{j}", f"r{i + j + 1}"))
        p.append(("madc.hi.u32", f"r{i + 8}", f"a{i}", "a7", f"r{i + 8}"))
    # double limbs 1..14 (limb 0 is still empty), carry into limb 15
    p.append(("add.cc.u32", "r1", "r1", "r1"))
    for k in range(2, 15):
        p.append(("addc.cc.u32", f"r{k}", f"r{k}", f"r{k}"))
    p.append(("addc.u32", "r15", "0", "0"))
    # add the squares a_i^2 at limbs 2i, 2i+1
    p.append(("mul.lo.u32", "r0", "a0", "a0"))
    p.append(("mad.hi.cc.u32", "r1", "a0", "a0", "r1"))
    for i in range(1, 8):
        p.append(("madc.lo.cc.u32", f"r{2 * i}", f"a{i}", f"a{i}", f"r{2 * i}"))
        last = i == 7
        p.append(("madc.hi.u32" if last else "madc.hi.cc.u32", f"r{2 * i + 1}", f"a{i}", f"a{i}", f"r{2 * i + 1}"))
    return p


def fold_program():
    """w[0..9] = l[0..7] + h[0..7] * 977 + h[0..7] * 2^32  (< 2^289)."""
    p = [("mad.lo.cc.u32", "w0", "h0", "k", "l0")]
    for j in range(1, 8):
        p.append(("madc.lo.cc.u32", f"w{j}", f"h{j}", "k", f"l{j}"))
    p.append(("addc.u32", "w8", "0", "0"))
    p.append(("mad.hi.cc.u32", "w1", "h0", "k", "w1"))
    for j in range(1, 8):
        p.append(("madc.hi.cc.u32", f"w{j + 1}", f"h{j}", "k", f"w{j + 1}"))
    p.append(("addc.u32", "w9", "0", "0"))
    p.append(("add.cc.u32", "w1", "w1", "h0"))
    for j in range(1, 8):
        p.append(("addc.cc.u32", f"w{j + 1}", f"w{j + 1}", f"h{j}"))
    p.append(("addc.u32", "w9", "w9", "0"))
    return p


def emulate(program, regs):
    """Runs a program over a dict of 32-bit registers; returns the dict."""
    cf = None  # carry flag: undefined until an instruction sets it

    def val(x):
        return int(x) if x.isdigit() else regs[x]

    for ins in program:
        op, d, *src = ins
        base = op.split(".")[0]
        uses_carry = base in ("madc", "addc")
        sets_carry = ".cc" in op
        if uses_carry and cf is None:
            raise AssertionError(f"{ins}: reads the carry flag before anything set it")
        cin = cf if uses_carry else 0
        if base in ("mad", "madc", "mul"):
            prod = val(src[0]) * val(src[1])
            part = prod & MASK if ".lo" in op else prod >> 32
            addend = val(src[2]) if base != "mul" else 0
            total = part + addend + cin
        elif base in ("add", "addc"):
            total = val(src[0]) + val(src[1]) + cin
        else:
            raise AssertionError(f"unknown opcode {op}")
        if not sets_carry and total >> 32 and base in ("madc", "addc", "mad", "add"):
            # a carry out that the sequence drops: the bound argument was wrong
            raise AssertionError(f"{ins}: carry out lost ({total:#x})")
        regs[d] = total & MASK
        if sets_carry:
            cf = total >> 32
        elif uses_carry:
            cf = None  # consumed
    return regs


def limbs(x, n):
    return [(x >> (32 * i)) & MASK for i in range(n)]


def join(regs, name, n):
    return sum(regs[f"{name}{i}"] << (32 * i) for i in range(n))


def check(trials=20000):
    rng = random.Random(1)
    top = (1 << 256) - 1
    special = [0, 1, top, top - 1, 1 << 255, (1 << 256) - (1 << 32) - 977, MASK, top ^ MASK]
    mul, sqr, fold = mul_program(), sqr_program(), fold_program()
    for t in range(trials):
        a = special[t % len(special)] if t < 64 else rng.getrandbits(256)
        b = special[(t // len(special)) % len(special)] if t < 64 else rng.getrandbits(256)
        regs = {f"a{i}": v for i, v in enumerate(limbs(a, 8))}
        regs.update({f"b{i}": v for i, v in enumerate(limbs(b, 8))})
        out = emulate(mul, regs)
        assert join(out, "r", 16) == a * b, (hex(a), hex(b))
        out = emulate(sqr, {f"a{i}": v for i, v in enumerate(limbs(a, 8))})
        assert join(out, "r", 16) == a * a, hex(a)
        x = (a << 256) | b if t % 2 else a * b
        regs = {f"l{i}": v for i, v in enumerate(limbs(x & top, 8))}
        regs.update({f"h{i}": v for i, v in enumerate(limbs(x >> 256, 8))})
        regs["k"] = 977
        out = emulate(fold, regs)
        w = join(out, "w", 10)
        assert w == (x & top) + (x >> 256) * ((1 << 32) + 977), hex(x)
        assert w < (1 << 289)
    return len(mul), len(sqr), len(fold)


def asm_text(regs, inputs, program, outputs, indent="        "):
    """The asm string: register declarations, the 64-bit operands split into
    32-bit limbs (inputs: (limb prefix, first operand number, operand count)),
    the program, and the limbs packed back (outputs: (limb prefix, limbs))."""
    lines = ["{", f".reg .u32 {regs};"]
    if "k" in regs.split(", "):
        lines.append("mov.u32 k, 977;")
    for prefix, first, count in inputs:
        for i in range(count):
            lines.append(f"mov.b64 {{{prefix}{2 * i}, {prefix}{2 * i + 1}}}, %{first + i};")
    for op, d, *src in program:
        lines.append(f"{op} {', '.join([d] + src)};")
    n = 0
    for prefix, limbs in outputs:
        for i in range(0, limbs, 2):
            lines.append(f"mov.b64 %{n}, {{{prefix}{i}, {prefix}{i + 1}}};")
            n += 1
    body = "\n".join(f'{indent}"{line}\\n\\t"' for line in lines)
    return body + f'\n{indent}"}}"'


HEADER = """// GENERATED by scripts/gen-field-ptx.py -- do not edit; edit the generator.
//
// Device-only PTX forms of the two hot primitives of the field and scalar
// math, on 32-bit limbs with the hardware carry chains (mad.lo/mad.hi .cc).
// Their portable twins are mul_256x256 (sv_hd.hpp) and the first fold of
// fe_reduce512 (field.hpp): the results are unique integers (a product; a
// sum split at bit 256), so twin and PTX agree bit for bit when both are
// right. The generator proves each instruction sequence on the host with an
// emulator of these opcodes before writing this file; the GPU check proves
// the whole verifier against libsecp256k1 on the device.
//
// Included by sv_hd.hpp (after u64 is defined), which picks these or the
// portable forms in mul_wide / sqr_wide. Opt-in (SV_USE_PTX, CMake option
// SIGVERIFY_GPU_PTX) until a GPU run has measured it and checked it against
// libsecp256k1 on the device: scripts/gpu-check.sh builds it as a variant.
#pragma once

#if defined(__CUDA_ARCH__) && defined(SV_USE_PTX)
#define SV_FIELD_PTX 1

namespace sigverify::kernels {

// r = a * b (512 bits), little-endian 64-bit limbs. {N} instructions.
__device__ __forceinline__ void mul_256x256_ptx(u64 r[8], const u64 a[4], const u64 b[4]) {
    asm(
{MUL}
        : "=l"(r[0]), "=l"(r[1]), "=l"(r[2]), "=l"(r[3]), "=l"(r[4]), "=l"(r[5]), "=l"(r[6]), "=l"(r[7])
        : "l"(a[0]), "l"(a[1]), "l"(a[2]), "l"(a[3]), "l"(b[0]), "l"(b[1]), "l"(b[2]), "l"(b[3]));
}

// r = a * a (512 bits): each cross product once, doubled, plus the squares.
// {S} instructions.
__device__ __forceinline__ void sqr_256_ptx(u64 r[8], const u64 a[4]) {
    asm(
{SQR}
        : "=l"(r[0]), "=l"(r[1]), "=l"(r[2]), "=l"(r[3]), "=l"(r[4]), "=l"(r[5]), "=l"(r[6]), "=l"(r[7])
        : "l"(a[0]), "l"(a[1]), "l"(a[2]), "l"(a[3]));
}

// w + top * 2^256 = t_lo + t_hi * (2^32 + 977), t = t_lo + t_hi * 2^256;
// top < 2^33. {F} instructions.
__device__ __forceinline__ void fold_512_ptx(u64 w[4], u64& top, const u64 t[8]) {
    asm(
{FOLD}
        : "=l"(w[0]), "=l"(w[1]), "=l"(w[2]), "=l"(w[3]), "=l"(top)
        : "l"(t[0]), "l"(t[1]), "l"(t[2]), "l"(t[3]), "l"(t[4]), "l"(t[5]), "l"(t[6]), "l"(t[7]));
}

}  // namespace sigverify::kernels

#endif
"""


def main():
    n_mul, n_sqr, n_fold = check()
    print(f"emulated: mul {n_mul}, sqr {n_sqr}, fold {n_fold} instructions: all results exact")
    if "--check-only" in sys.argv:
        return
    text = (HEADER.replace("{MUL}", asm_text("a<8>, b<8>, r<16>", [("a", 8, 4), ("b", 12, 4)], mul_program(),
                                             [("r", 16)]))
            .replace("{SQR}", asm_text("a<8>, r<16>", [("a", 8, 4)], sqr_program(), [("r", 16)]))
            .replace("{FOLD}", asm_text("l<8>, h<8>, w<10>, k", [("l", 5, 4), ("h", 9, 4)], fold_program(),
                                        [("w", 10)]))
            .replace("{N}", str(n_mul)).replace("{S}", str(n_sqr)).replace("{F}", str(n_fold)))
    out = Path(__file__).resolve().parent.parent / "kernels" / "field_ptx.hpp"
    out.write_text(text)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
