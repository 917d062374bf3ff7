#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Offline SASS metrics of sigverifyd's verify_kernel (sm_90), without a GPU or disassembler.

Run by scripts/kernel-metrics.sh (which builds the cubins): decodes the kernel and
probe cubins itself, reads the ptxas -v log and prints the figures that predict
GPU throughput against their targets. Exit status 1 when the kernel has a stack
frame or spills (the CI gate) unless --no-strict; a figure not found prints n/a.
"""
import argparse, bisect, collections, os, re, struct, subprocess, sys

# ---------------------------------------------------------------------------
# sm_90 instruction decoding. Each instruction is a 128-bit little-endian word:
#   bits 0..8    opcode; bits 9..11 the operand form (1: register, 4: immediate,
#                5: constant, 6: uniform register in the second source)
#   bits 12..14  guard predicate (7 = PT: unconditional), bit 15 negates it
#   BRA/CALL     offset in 4-byte units from the next instruction: bits 16..23
#                (low 8 bits) and 34..73 (signed high part)
#   BRA          second predicate operand ("@P0 BRA P2, L"): bits 87..89 (7 = PT).
#                Every BRA ptxas 13 emits for sm_90 here has form 4; one of
#                another form (BRA.U on a uniform predicate) is taken as uniform.
#   LD*/ST*      access size code in bits 73..75 (U8 S8 U16 S16 32 64 128)
#   registers    Rd 16..23, Ra 24..31, Rb 32..39 (form 1)
#   predicates   sources: ISETP/BRA 87..89, ISETP.EX carry 68..70; destinations
#                per opcode in PRED_DEST
# Opcodes, branch targets, predicate fields and sizes were cross-checked against
# nvdisasm (CUDA 11.8, Debian non-free; it decodes all but ~0.2% of these) on the
# kernel at 5ea9387, its probe and test kernels: ~116k instructions, no mismatch.
# ---------------------------------------------------------------------------
OPCODES = {
    0x002: 'MOV', 0x003: 'P2R', 0x005: 'CS2R', 0x006: 'VOTE', 0x007: 'SEL', 0x00c: 'ISETP',
    0x010: 'IADD3', 0x011: 'LEA', 0x012: 'LOP3', 0x013: 'IABS', 0x016: 'PRMT', 0x019: 'SHF',
    0x01c: 'PLOP3', 0x024: 'IMAD', 0x025: 'IMAD.WIDE', 0x027: 'IMAD.HI', 0x035: 'HFMA2',
    0x036: 'VIADD', 0x046: 'VIADDMNMX', 0x048: 'VIMNMX', 0x082: 'UMOV', 0x086: 'VOTEU',
    0x090: 'UIADD3', 0x09c: 'UPLOP3', 0x0b9: 'ULDC', 0x0ca: 'R2UR', 0x118: 'NOP', 0x119: 'S2R',
    0x11d: 'BAR', 0x141: 'BSYNC', 0x142: 'BREAK', 0x144: 'CALL', 0x145: 'BSSY', 0x147: 'BRA',
    0x14d: 'EXIT', 0x150: 'RET', 0x180: 'LD', 0x181: 'LDG', 0x182: 'LDC', 0x183: 'LDL',
    0x184: 'LDS', 0x185: 'ST', 0x186: 'STG', 0x187: 'STL', 0x188: 'STS', 0x1c3: 'S2UR',
}
MEM_OPS = {'LD', 'LDG', 'LDL', 'LDS', 'ST', 'STG', 'STL', 'STS'}
ACCESS_BYTES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 8, 6: 16}
PRED_DEST = {'ISETP': (81, 84), 'PLOP3': (81, 84), 'IADD3': (81, 84), 'LOP3': (81,), 'LEA': (81,),
             'IMAD.WIDE': (81,)}
PT, RZ = 7, 255


def field(w, lo, n=3):
    return (w >> lo) & ((1 << n) - 1)


class Ins:
    __slots__ = ('addr', 'w', 'op', 'cond', 'uniform', 'target', 'nbytes')

    def __init__(self, w, addr):
        self.addr, self.w, self.target, self.nbytes, self.cond, self.uniform = addr, w, None, 0, False, False
        self.op = OPCODES.get(w & 0x1FF, 'OP_%03x' % (w & 0x1FF))
        if self.op in MEM_OPS:
            self.nbytes = ACCESS_BYTES.get(field(w, 73), 4)
        elif self.op in ('BRA', 'CALL'):
            hi = field(w, 34, 40) - (1 << 40 if field(w, 73, 1) else 0)
            self.target = addr + 16 + ((hi << 8) | field(w, 16, 8)) * 4
            self.cond = field(w, 12) != PT or field(w, 87) != PT
            self.uniform = self.op == 'BRA' and field(w, 9) != 4

    def writes_pred(self, p):
        return any(field(self.w, f) == p for f in PRED_DEST.get(self.op, ()))


def read_elf(path):
    """(bytes, sections [name/type/off/size/link], FUNC symbols [(section, value, size, name)])."""
    b = open(path, 'rb').read()
    if b[:4] != b'\x7fELF' or b[4] != 2:
        raise SystemExit(f'{path}: not an ELF64 cubin')
    shoff, = struct.unpack_from('<Q', b, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', b, 0x3A)
    raw = [struct.unpack_from('<IIQQQQIIQQ', b, shoff + k * shentsize) for k in range(shnum)]
    cstr = lambda off: b[off:b.index(0, off)].decode()
    secs = [dict(name=cstr(raw[shstrndx][4] + r[0]), type=r[1], off=r[4], size=r[5], link=r[6]) for r in raw]
    funcs = []
    for s in (s for s in secs if s['type'] == 2):  # SHT_SYMTAB
        for k in range(s['size'] // 24):
            n, info, _, shndx, val, size = struct.unpack_from('<IBBHQQ', b, s['off'] + 24 * k)
            if info & 0xF == 2:  # STT_FUNC
                funcs.append((shndx, val, size, cstr(secs[s['link']]['off'] + n)))
    return b, secs, funcs


def decode_section(b, sec):
    o = sec['off']
    return [Ins(int.from_bytes(b[o + k:o + k + 16], 'little'), k) for k in range(0, sec['size'] - 15, 16)]


def demangle(name):
    try:
        out = subprocess.run(['c++filt', name], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ''
    return (out or name).split('(')[0].replace('sigverify::', '')


# ---------------------------------------------------------------------------
# Code model: the entry function's own code plus the subroutines ptxas kept as
# real calls (symbols "$<entry>$<callee>" in the entry's .text section). Counts
# of a region are "expanded": each CALL adds the callee's expanded counts once
# per call site, so a figure means the same whether ptxas inlined or not.
# Regions and loops are [start, end) byte ranges.
# ---------------------------------------------------------------------------
class Code:
    def __init__(self, ins, subs):
        self.ins, self.subs = ins, sorted(subs)  # subs: (start, end, name)
        self.starts = [s[0] for s in self.subs]
        self.memo = {}

    def region(self, lo, hi):
        return self.ins[lo // 16:hi // 16]

    def callee(self, i):
        k = bisect.bisect_right(self.starts, i.target) - 1 if i.op == 'CALL' and i.target is not None else -1
        return self.subs[k] if k >= 0 and i.target < self.subs[k][1] else None

    def counts(self, lo, hi, expand=True, stack=()):
        """(Counter: 'n' instructions without NOPs, per opcode, 'lbytes' of LDL/STL;
        set of callee names reached)."""
        c, reached = collections.Counter(), set()
        for i in self.region(lo, hi):
            if i.op == 'NOP':
                continue
            c['n'] += 1
            c[i.op] += 1
            c['lbytes'] += i.nbytes if i.op in ('LDL', 'STL') else 0
            sub = self.callee(i) if expand else None
            if sub and sub[2] not in stack:
                if sub[2] not in self.memo:
                    self.memo[sub[2]] = self.counts(sub[0], sub[1], True, stack + (sub[2],))
                c.update(self.memo[sub[2]][0])
                reached |= self.memo[sub[2]][1] | {sub[2]}
        return c, reached


def find_loops(code, lo, hi):
    """Loops in [lo, hi): a backward BRA closes a loop from its target to itself (a
    BRA to itself is the padding after the last EXIT, not a loop); back edges to one
    head are merged. Sorted outer before inner."""
    ends = {}
    for i in code.region(lo, hi):
        if i.op == 'BRA' and i.target is not None and lo <= i.target < i.addr:
            ends[i.target] = max(ends.get(i.target, 0), i.addr + 16)
    return sorted(ends.items(), key=lambda l: (l[0], -l[1]))


def loop_parents(loops):
    """Index of the smallest loop enclosing each loop, or None."""
    def enclosing(k):
        (h, e) = loops[k]
        enc = [j for j, (h2, e2) in enumerate(loops) if j != k and h2 <= h and e <= e2]
        return min(enc, key=lambda j: loops[j][1] - loops[j][0]) if enc else None
    return [enclosing(k) for k in range(len(loops))]


# ---------------------------------------------------------------------------
# Data-dependent branches. A branch on a warp-uniform value does not diverge,
# but ptxas 13 often keeps such values (a window index j, a stream index s) in
# ordinary registers, or copies a uniform predicate into P0 (PLOP3 P0 <- UP0),
# so "if (j != last)" can look like a data-dependent "@!P0 BRA". A branch is
# taken as uniform when each of its predicates is set, in the same basic block
# (or before a loop that keeps it), by
#   - an ISETP comparing only loop counters, RZ, immediates, constants, uniform
#     registers, or registers MOVed from those, or
#   - a PLOP3 of uniform predicates (UP*, PT, or such predicates),
# under a uniform guard. A loop counter is a register its loop steps by an
# immediate (IADD3/VIADD Rx, Rx, imm) and its back edge compares. PLOP3 sources:
# 87..89, 77..79, 68..70 (bit 67: that one is a UP).
# ---------------------------------------------------------------------------
NO_REG_DEST = {'ISETP', 'PLOP3', 'BRA', 'EXIT', 'RET', 'CALL', 'BSSY', 'BSYNC', 'BAR', 'NOP', 'VOTEU', 'R2UR',
               'S2UR'} | {op for op in MEM_OPS if op.startswith('ST')}


def writes_reg(i, r):
    if i.op in NO_REG_DEST or i.op.startswith('U'):
        return False
    width = 2 if i.op == 'IMAD.WIDE' else max(1, i.nbytes // 4)
    return 0 <= r - field(i.w, 16, 8) < width


class Uniformity:
    def __init__(self, code, loops):
        self.code, self.loops = code, loops
        self.labels = {i.target for i in code.ins if i.op == 'BRA' and i.target is not None}
        self.counters = set()
        for h, e in loops:
            back = code.ins[e // 16 - 1]
            isetp = self.writer(back.addr, lambda i: i.writes_pred(field(back.w, 12)))
            if isetp is not None and isetp.op == 'ISETP':
                self.counters |= {r for r in self.sources(isetp) for i in code.region(h, e)
                                  if i.op in ('IADD3', 'VIADD') and field(i.w, 9) == 4
                                  and field(i.w, 16, 8) == r and field(i.w, 24, 8) == r}

    @staticmethod
    def sources(i):
        return {field(i.w, 24, 8)} | ({field(i.w, 32, 8)} if field(i.w, 9) == 1 else set())

    def writer(self, addr, hit):
        """The last instruction before addr for which hit() holds, within its basic
        block or across the head of a loop that never hits; None when unknown."""
        for k in range(addr // 16 - 1, -1, -1):
            i = self.code.ins[k]
            if hit(i):
                return i
            if i.op in ('BRA', 'EXIT', 'RET', 'CALL', 'VOTE', 'UPLOP3') or i.op.startswith('OP_'):
                return None
            if i.addr in self.labels:
                loop = next((l for l in self.loops if l[0] == i.addr), None)
                if loop is None or any(hit(j) for j in self.code.region(*loop)):
                    return None
        return None

    def reg(self, addr, r, depth):
        if r == RZ or r in self.counters:
            return True
        i = self.writer(addr, lambda i: writes_reg(i, r)) if depth < 6 else None
        return (i is not None and i.op == 'MOV' and self.pred(i.addr, field(i.w, 12), depth + 1) and
                (field(i.w, 9) in (4, 5, 6) or field(i.w, 9) == 1 and self.reg(i.addr, field(i.w, 32, 8), depth + 1)))

    def pred(self, addr, p, depth=0):
        if p == PT:
            return True
        i = self.writer(addr, lambda i: i.writes_pred(p)) if depth < 6 else None
        if i is None or not self.pred(i.addr, field(i.w, 12), depth + 1):
            return False
        up = lambda f: self.pred(i.addr, field(i.w, f), depth + 1)
        if i.op == 'PLOP3':
            return up(87) and up(77) and (field(i.w, 67, 1) == 1 or up(68))
        return (i.op == 'ISETP' and field(i.w, 9) in (1, 4, 5, 6) and up(87) and up(68)
                and all(self.reg(i.addr, r, depth + 1) for r in self.sources(i)))

    def branches(self, lo, hi, min_skip):
        """(data-dependent BRAs, count of uniform ones) among the conditional forward
        BRAs in [lo, hi) that skip >= min_skip instructions, BRA.U excluded."""
        cand = [i for i in self.code.region(lo, hi) if i.op == 'BRA' and i.cond and not i.uniform
                and (i.target - i.addr) // 16 - 1 >= min_skip]
        data = [i for i in cand if not (self.pred(i.addr, field(i.w, 12)) and self.pred(i.addr, field(i.w, 87)))]
        return data, len(cand) - len(data)


# ---------------------------------------------------------------------------
def parse_ptxas(path, entry):
    """(registers, stack frame, spill stores, spill loads) of the entry, None when absent."""
    log = open(path, errors='replace').read() if os.path.exists(path) else ''
    m = re.search(r'Function properties for ' + re.escape(entry) + r'\s*\n\s*(\d+) bytes stack frame, '
                  r'(\d+) bytes spill stores, (\d+) bytes spill loads', log)
    r = re.search(r"Compiling entry function '" + re.escape(entry) + r"'.*?Used (\d+) registers", log, re.S)
    return (int(r.group(1)) if r else None,) + (tuple(int(g) for g in m.groups()) if m else (None,) * 3)


# Per-SM limits by architecture (CUDA programming guide, compute capabilities
# table): shared memory per SM (KiB, the largest carve-out), the most a block
# may opt in to (KiB), resident warps and blocks. Every one has 64K 32-bit
# registers per SM in four sub-partitions; a warp's registers (allocated in
# units of 256) come from one sub-partition, so warps by registers =
# 4 x floor(16384 / registers per warp). Since sm_80 the driver reserves 1 KiB
# of shared memory per block.
ARCH_LIMITS = {  # arch: (smem KiB per SM, smem KiB per block, max warps, max blocks)
    75: (64, 64, 32, 16), 80: (164, 163, 64, 32), 86: (100, 99, 48, 16), 89: (100, 99, 48, 24),
    90: (228, 227, 64, 32), 100: (228, 227, 64, 32), 120: (100, 99, 48, 32),
}
OCCUPANCY_TARGET_ARCHS = (89, 90, 120)  # the targets: >= 12 warps per SM


def occupancy(arch, regs, smem_per_thread, tpb):
    """(warps per SM, limiter) of a kernel of `regs` registers and `smem_per_thread`
    bytes of dynamic shared memory per thread launched with `tpb` threads."""
    smem_sm, smem_block, max_warps, max_blocks = ARCH_LIMITS[arch]
    wpb = (tpb + 31) // 32
    reserved = 1024 if arch >= 80 else 0
    block_smem = smem_per_thread * tpb
    if block_smem > smem_block * 1024:
        return 0, f'{block_smem:,} B shared per block > {smem_block} KiB: cannot launch at {tpb} threads'
    per_warp = (regs * 32 + 255) // 256 * 256
    limits = {
        'registers': 4 * (16384 // per_warp) // wpb if per_warp else max_blocks,
        'shared memory': (smem_sm * 1024) // (block_smem + reserved),
        'warps': max_warps // wpb,
        'blocks': max_blocks,
    }
    blocks = min(limits.values())
    return blocks * wpb, ' and '.join(k for k, v in limits.items() if v == blocks)


def parse_smem(spec):
    """--smem-per-thread: one figure for every architecture ("688") or one per
    architecture ("90:592,120:176"); returns (default or None, {arch: bytes})."""
    if ':' not in spec:
        return int(spec), {}
    return None, {int(a): int(v) for a, v in (x.split(':') for x in spec.split(',') if x)}


def report_occupancy(arch_logs, entry_of, smem_spec, tpb):
    """Prints per architecture: registers, stack, spills, shared memory per thread
    and theoretical warps per SM; returns (stack or spills anywhere, {arch: warps})."""
    smem_all, smem_by_arch = parse_smem(smem_spec)
    print(f'occupancy at the launch configuration ({tpb} threads per block):')
    print('   arch    regs  stack  spills  shared B/thread  warps/SM  limited by')
    bad, warps = [], {}
    for arch, log in arch_logs:
        regs, stack, sst, sld = parse_ptxas(log, entry_of)
        smem = smem_by_arch.get(arch, smem_all)
        if regs is None or arch not in ARCH_LIMITS or smem is None:
            print(f'   sm_{arch:<4} n/a (no ptxas report in {log}, or no shared memory figure)')
            bad.append(arch)
            continue
        w, why = occupancy(arch, regs, smem, tpb)
        warps[arch] = w
        spills = (sst or 0) + (sld or 0)
        if stack or spills:
            bad.append(arch)
        print(f'   sm_{arch:<4} {regs:4}  {stack:5}  {spills:6}  {smem:15,}  {w:8}  {why}')
    return bad, warps


def probe_costs(path):
    """Marginal SASS instructions per call: probe kernels probe_<prim>_x1 / _x16 make
    1 and 16 dependent calls, cost = (x16 - x1) / 15. A kernel's size counts its
    non-NOP instructions up to the last EXIT (after it: BRA-to-self padding)."""
    if not path or not os.path.exists(path):
        return {}
    b, secs, _ = read_elf(path)
    size = {}
    for s in (s for s in secs if s['name'].startswith('.text.probe_')):
        ins = decode_section(b, s)
        last = max((k for k, i in enumerate(ins) if i.op == 'EXIT'), default=len(ins) - 1)
        size[s['name'][6:]] = sum(1 for i in ins[:last + 1] if i.op != 'NOP')
    return {n[6:-3]: (size[n + '6'] - size[n]) / 15.0 for n in sorted(size) if n.endswith('_x1') and n + '6' in size}


def fmt(v, spec=',.0f'):
    return 'n/a' if v is None else format(v, spec)


def pick_hot_loop(code, loops, stats, forced):
    """The hot loop is the outermost loop holding the most IMAD.WIDE (the wide
    multiplies of field products, callees included): the window loop of the scalar
    multiplication, enclosing the doubling/addition loops. Passed over: a loop that
    stores to global memory (STG: verdicts) is a loop over rows; a loop calling a
    subroutine that loops itself runs whole procedures per iteration (today: the
    loop over a batch's rows, which calls the fallback ladder), not the window step.
    Returns (index or None, how it was chosen)."""
    if forced:
        k = next((k for k, l in enumerate(loops) if l[0] == int(forced, 16)), None)
        return k, 'forced by HOT_LOOP' if k is not None else f'no loop head at {forced}'
    looping = {n for lo, hi, n in code.subs if find_loops(code, lo, hi)}
    cand = [k for k in range(len(loops)) if not stats[k][0]['STG'] and not stats[k][1] & looping]
    best = max([stats[k][0]['IMAD.WIDE'] for k in cand] or [0])
    if not best:
        return None, 'no loop with IMAD.WIDE'
    k = min((k for k in cand if stats[k][0]['IMAD.WIDE'] == best), key=lambda k: (loops[k][0], -loops[k][1]))
    return k, 'outermost loop with the most IMAD.WIDE, no STG, no looping callee'


def subroutine_loop_extra(code, sub_trips):
    """Passes of the loops inside once-per-row subroutines beyond the one that
    the plain count includes: for each NAME=t1,t2,... (the trip counts of its
    outermost loops in address order, from the source: fixed addition chains and
    fixed batch counts), sum((t - 1) x loop size with callees). A subroutine whose
    loops do not match its list is reported and counted once."""
    extra = []
    for spec in sub_trips or []:
        name, _, trips = spec.partition('=')
        trips = [int(t) for t in trips.split(',') if t]
        sub = next(((lo, hi) for lo, hi, n in code.subs if n == name), None)
        if sub is None:
            print(f'  note: --sub-trips {name}: no such subroutine (inlined or renamed?), ignored')
            continue
        loops = find_loops(code, *sub)
        parent = loop_parents(loops)
        outer = [l for k, l in enumerate(loops) if parent[k] is None]
        if len(outer) != len(trips):
            print(f'  WARNING: --sub-trips {name}: {len(trips)} trip counts for {len(outer)} loops; its loops '
                  f'are counted once')
            continue
        x = sum((t - 1) * code.counts(h, e)[0]['n'] for (h, e), t in zip(outer, trips))
        print(f'  {name}: {len(outer)} loop(s) with trips {",".join(map(str, trips))}: +{x:,} beyond one pass each')
        extra.append((name, x))
    return extra


def pass_costs(code, lo, hi, skip=None, by_products=False):
    """What one pass of the loop [lo, hi) executes, path by path: {LDGs on the
    path: instructions} for the longest path from the head to the back edge (or an
    exit) with that many global loads (up to 63), callees expanded; with
    by_products, {(LDGs, IMAD.WIDEs): instructions} (a pass with one more
    product is another kind of pass). Every
    branch of the body must go forward (no loop inside) but in skip, a loop
    [h, e) inside it that a path crosses at no cost (its passes are counted on
    their own); returns None otherwise. Predicated instructions count as
    issued, as they are."""
    ins = code.region(lo, hi)
    zero = (0, 0) if by_products else 0
    best = [None] * (len(ins) + 1)
    best[len(ins)] = {zero: 0}
    end = {zero: 0}
    for k in range(len(ins) - 1, -1, -1):
        i = ins[k]
        if skip and skip[0] <= i.addr < skip[1]:
            best[k] = best[(skip[1] - lo) // 16]
            continue
        here = code.counts(i.addr, i.addr + 16)[0]
        cost = 0 if i.op == 'NOP' else here['n']
        if i.op in ('EXIT', 'RET'):
            succ = [end]
        elif i.op == 'BRA' and i.target is not None:
            if i.target == lo or not lo <= i.target < hi:
                taken = end  # the back edge (the pass ends) or a branch out of the loop
            elif i.target <= i.addr:
                return None
            else:
                taken = best[(i.target - lo) // 16]
            succ = [taken] + ([best[k + 1]] if i.cond else [])
        else:
            succ = [best[k + 1]]
        res = {}
        for d in succ:
            for key, v in d.items():
                if by_products:
                    f = (min(63, key[0] + (i.op == 'LDG')), key[1] + here['IMAD.WIDE'])
                else:
                    f = min(63, key + (i.op == 'LDG'))
                res[f] = max(res.get(f, -1), v + cost)
        best[k] = res
    return best[0]


def p_and_g_paths(paths):
    """The ladder's stream-loop paths as {False: a P pass, True: a G pass}: a G
    pass reads its entry from the G tables with global loads (4 of 128 bits); a P pass
    reads its entry from the P table, 16 words, none of them global when the table is
    in shared memory and 16 32-bit LDGs when it is in global memory (the
    per-warp [word][lane] layout: a lane's words are not adjacent). So a path
    whose LDG count is a multiple of 16 is a P pass, any other a G pass; each
    side its longest path. paths: pass_costs's {LDGs: instructions} or, by
    products, {(LDGs, IMAD.WIDEs): instructions}."""
    if paths is None:
        return None
    out = {}
    for n, v in paths.items():
        g = (n[0] if isinstance(n, tuple) else n) % 16 != 0
        out[g] = max(out.get(g, -1), v)
    return out


def p_kinds(paths):
    """The P side of the stream loop by kind of pass (pass_costs by products):
    the start value (the first pass copies its entry: the path with the fewest
    products), the P addition and the lambda-P addition (the addition paths,
    at least half the most products: the fewest of them P's, the most
    lambda-P's, which adds x * beta). Paths with products but fewer than half
    are the start's branch through x * beta, a path no pass takes. Returns
    (start, p, lambda_p) instructions, or None."""
    side = {k: v for k, v in (paths or {}).items() if k[0] % 16 == 0}
    if not side:
        return None
    top = max(k[1] for k in side)
    adds = sorted((k[1], v) for k, v in side.items() if 2 * k[1] >= top)
    start = min(side.items(), key=lambda kv: kv[0][1])[1]
    return start, adds[0][1], adds[-1][1]


def table_build_extra(a, code, loops, parent, stats, others):
    """Passes of the P table build beyond the one pass each of its two loops that
    the plain count includes (--table-trips OUTER,INNER: passes per row of the
    build loop and, in all, of the rescaling loop inside it), each pass counted
    as the longest path through its loop (pass_costs; the build loop's path
    crosses the rescaling loop at no cost). The build is the one loop outside
    the hot loop that holds IMAD.WIDE and exactly one loop of its own; returns
    (instructions, loop head) or None when there is not exactly one."""
    if not a.table_trips:
        return None
    kids = {k: [j for j in range(len(loops)) if parent[j] == k] for k in range(len(loops))}
    cand = [k for k in others if len(kids[k]) == 1 and stats[k][0]['IMAD.WIDE'] and not kids[kids[k][0]]]
    if len(cand) != 1:
        print(f'  corrected estimate: P table build not found ({len(cand)} candidate loops); counted once')
        return None
    k, = cand
    j = kids[k][0]
    trips = [int(t) for t in a.table_trips.split(',')]
    outer_t, inner_t = trips[:2]
    catch_t = trips[2] if len(trips) > 2 else 0
    body_paths, inner_paths = pass_costs(code, *loops[k], skip=loops[j]), pass_costs(code, *loops[j])
    by_products = pass_costs(code, *loops[k], skip=loops[j], by_products=True) if catch_t else {}
    if not body_paths or not inner_paths or (catch_t and not by_products):
        print(f'  corrected estimate: P table build 0x{loops[k][0]:x}: no path through it; counted once')
        return None
    body, inner = max(body_paths.values()), max(inner_paths.values())
    # the catch-up pass (no addition): the longest of the paths with the
    # fewest products
    catch = by_products[min(by_products, key=lambda key: (key[1], -by_products[key]))] if catch_t else 0
    x = outer_t * body + catch_t * catch + inner_t * inner - stats[k][0]['n']
    print(f'  P table build 0x{loops[k][0]:x}: {outer_t} passes of {body:,} (its longest path)'
          + (f' + {catch_t} catch-up pass(es) of {catch:,} (the fewest products)' if catch_t else '')
          + f' + {inner_t} rescales of {inner:,}: {x:+,} against one pass of each loop\'s whole body')
    return x, loops[k][0]


def block_shared_extra(a, code, entry_end, loops, others):
    """Code a block runs for all its rows together (issue 30's batch inversion
    of s, kernels/batch_inverse32.hpp), counted by what its warps execute
    rather than once per lane. The estimate counts thread-instructions per row
    (one row per lane, / 32 for warp-instructions); X warp-instructions that
    a block of W warps (32 W rows) executes together are X / W of them. Two
    parts, both from the source (kernel-metrics.sh):
      * --barrier-loop-warps A1,A2,... per loop outside the hot loop that holds
        a barrier (BAR), in address order: pass p runs the node step in A_p of
        the block's W warps (--block-warps); the others take the skip path,
        counted as the loop body without its callees (an upper bound);
      * --sub-weight NAME=F: the callee NAME runs F times per lane at each call
        site (the root inversion: one warp of W, F = 1/W), its loops' extra
        passes (--sub-trips) too.
    Returns (instructions to add to 'outside', {name: factor for sub_extra})."""
    specs = a.barrier_loop_warps or []
    weights = {}
    for spec in a.sub_weight or []:
        name, _, f = spec.partition('=')
        num, _, den = f.partition('/')
        weights[name] = float(num) / float(den or 1)
    if not specs and not weights:
        return 0, {}
    w = a.block_warps
    add = 0
    bar_loops = [k for k in others if any(i.op == 'BAR' for i in code.region(*loops[k]))]
    bar_loops.sort(key=lambda k: loops[k][0])
    if specs and len(specs) != len(bar_loops):
        print(f'  block-shared code: {len(specs)} --barrier-loop-warps for {len(bar_loops)} barrier loops; '
              'those loops are counted once')
    elif specs:
        for k, spec in zip(bar_loops, specs):
            act = [int(x) for x in spec.split(',')]
            full = code.counts(*loops[k])[0]['n']
            bare = code.counts(*loops[k], expand=False)[0]['n']
            per = sum(n * full + (w - n) * bare for n in act) / w
            add += per - full
            print(f'  barrier loop 0x{loops[k][0]:x}: {len(act)} passes, node step in {sum(act)} of '
                  f'{len(act) * w} warp-passes ({full:,} with callees, {bare:,} without): {per:,.0f} per row '
                  f'(counted once: {full:,})')
    for name, f in weights.items():
        sub = next(((lo, hi) for lo, hi, n in code.subs if n == name), None)
        if sub is None:
            print(f'  note: --sub-weight {name}: no such subroutine, ignored')
            continue
        sites = sum(1 for i in code.region(0, entry_end) if i.op == 'CALL' and code.callee(i) and
                    code.callee(i)[2] == name)
        size = code.counts(*sub)[0]['n']
        add += (f - 1) * sites * size
        print(f'  {name}: {sites} call site(s) x {size:,} run {f:g} times a lane (one warp of the block\'s {w}): '
              f'{(f - 1) * sites * size:+,.0f}, its loops\' extra passes x {f:g}')
    return round(add), weights


def corrected_estimate(a, code, loops, stats, inner, rest, outside, sub_extra, table_extra=None):
    """Per row, each inner loop counted by what its passes execute (pass_costs)
    times the passes the source states (--loop-trips, one spec per inner loop in
    address order: "T" passes of its longest path, or "TP,TG" passes of its
    longest P and G passes, p_and_g_paths); the rest of the hot loop body
    once per window. Returns warp-instructions or None when the specs do not
    match the loops."""
    if not a.loop_trips:
        return None
    if len(a.loop_trips) != len(inner):
        print(f'  corrected estimate: n/a ({len(a.loop_trips)} --loop-trips for {len(inner)} inner loops)')
        return None
    total, terms = 0, []
    for k, spec in zip(inner, a.loop_trips):
        trips = [int(t) for t in spec.split(',')]
        paths = p_and_g_paths(pass_costs(code, *loops[k]))
        kinds = p_kinds(pass_costs(code, *loops[k], by_products=True)) if len(trips) == 4 else None
        if (paths is None or len(trips) not in (1, 2, 4) or (len(trips) >= 2 and not (False in paths and True in paths))
                or (len(trips) == 4 and kinds is None)):
            print(f'  corrected estimate: n/a (inner loop 0x{loops[k][0]:x}: paths {paths}, trips {spec})')
            return None
        if len(trips) == 4:
            start, padd, ladd = kinds
            total += trips[0] * start + trips[1] * padd + trips[2] * ladd + trips[3] * paths[True]
            terms.append(f'{trips[0]} x {start:,} (start) + {trips[1]} x {padd:,} (P) + {trips[2]} x {ladd:,} '
                         f'(lambda P) + {trips[3]} x {paths[True]:,} (G)')
        elif len(trips) == 1:
            longest = max(paths.values())
            total += trips[0] * longest
            terms.append(f'{trips[0]} x {longest:,}')
        else:
            total += trips[0] * paths[False] + trips[1] * paths[True]
            terms.append(f'{trips[0]} x {paths[False]:,} (P) + {trips[1]} x {paths[True]:,} (G)')
    tx = table_extra[0] if table_extra else 0
    per_row = total + a.windows * rest + outside + sum(x for _, x in sub_extra) + tx
    print('  corrected (each inner loop pass counted by its own path, the P table build by its passes; issue 30):')
    print(f'    inner loops = {" + ".join(terms)} = {total:,}')
    print(f'    per row     = {total:,} + {a.windows} windows x {rest:,} + {outside:,} outside the loop'
          f'{"".join(f" + {x:,}" for _, x in sub_extra)}' + (f' + {tx:,} (P table build)' if table_extra else '')
          + f' = {per_row:,} thread-instructions')
    print(f'    warp-instructions per row = {per_row:,} / 32 = {per_row / 32:,.0f}')
    return per_row / 32


def report_hot_loop(a, code, entry_end, loops, parent, stats, hot, how):
    """Prints the hot loop and the per-row estimate; returns target figures."""
    h, e = loops[hot]
    c, reached = stats[hot]
    own = code.counts(h, e, expand=False)[0]
    foot = (e - h) + sum(hi - lo for lo, hi, n in code.subs if n in reached)
    print(f'hot loop                     : 0x{h:x}..0x{e - 16:x} ({how}; {len(loops)} loops in the kernel)')
    height = lambda k: 1 + max([height(j) for j in range(len(loops)) if parent[j] == k], default=0)
    if height(hot) > 2:
        print(f'  WARNING: loops nest {height(hot)} deep in it, it may be a loop over rows: check the range; '
              'HOT_LOOP=0x<head> forces another, METRICS_VERBOSE=1 lists the loops')
    print(f'  code size                  : {e - h:,} bytes ({(e - h) / 1024:.1f} KiB)'
          + (f'; with callees {foot:,} bytes ({foot / 1024:.1f} KiB): {", ".join(sorted(reached))}' if reached else ''))
    print(f'  instructions               : {own["n"]:,} in the loop' + (f', {c["n"]:,} with callees' if reached else '')
          + f'  (IMAD.WIDE {c["IMAD.WIDE"]:,})')
    print(f'  LDL / STL                  : {own["LDL"]} / {own["STL"]} in the loop'
          + (f', {c["LDL"]} / {c["STL"]} with callees' if reached else '') + f'  ({c["lbytes"]:,} bytes per lane per pass)')
    uni = Uniformity(code, loops)
    data, uniform = uni.branches(h, e, a.min_skip)
    in_callees = sum(len(uni.branches(lo, hi, a.min_skip)[0]) for lo, hi, n in code.subs if n in reached)
    where = ', '.join(f'0x{i.addr:x}->0x{i.target:x}' for i in data[:6]) + (' ...' if len(data) > 6 else '')
    print(f'  data-dependent branches    : {len(data)} in the loop' + (f' + {in_callees} in its callees' if reached else '')
          + (f' [{where}]' if where else '') + f'; {uniform} more on uniform values')
    print(f'    (heuristic: conditional forward BRA skipping >= {a.min_skip} instructions; not counted: back edges, '
          'BRA.U, predicates computed from loop counters, constants and UR/UP registers only)')
    inner = [k for k in range(len(loops)) if parent[k] == hot]
    for k in inner:
        ih, ie = loops[k]
        print(f'  inner loop 0x{ih:x}..0x{ie - 16:x} : {ie - ih:,} bytes ({(ie - ih) / 1024:.1f} KiB), '
              f'{stats[k][0]["n"]:,} instructions, IMAD.WIDE {stats[k][0]["IMAD.WIDE"]:,}')
    if not inner:
        print('  inner loops                : none')

    # Estimate: WINDOWS passes of the loop, each running every inner loop
    # INNER_TRIPS times; everything else once (callees per call site, all paths:
    # Schnorr's and error paths too, but loops outside the hot loop only once).
    rest = c['n'] - sum(stats[k][0]['n'] for k in inner)
    per_window = rest + a.inner_trips * sum(stats[k][0]['n'] for k in inner)
    outside = code.counts(0, entry_end)[0]['n'] - c['n']
    sub_extra = subroutine_loop_extra(code, a.sub_trips)
    anc, k = set(), parent[hot]
    while k is not None:
        anc.add(k)
        k = parent[k]
    others = [k for k in range(len(loops)) if k != hot and k not in anc and (parent[k] is None or parent[k] in anc)
              and not h <= loops[k][0] < e]
    shared_add, weights = block_shared_extra(a, code, entry_end, loops, others)
    outside += shared_add
    sub_extra = [(n, round(x * weights.get(n, 1))) for n, x in sub_extra]
    per_row = a.windows * per_window + outside + sum(x for _, x in sub_extra)
    print('estimate (one row per lane, 32 rows per warp, no divergence):')
    terms = ' + '.join([f'{stats[k][0]["n"]:,} x {a.inner_trips}' for k in inner] + [f'{rest:,}'])
    print(f'  per window = sum(inner loop body x INNER_TRIPS) + rest of the loop body = {terms} = {per_window:,}'
          if inner else f'  per window = the loop body = {per_window:,}')
    extra_terms = ''.join(f' + {x:,} ({n} loops)' for n, x in sub_extra)
    print(f'  per row    = {a.windows} windows x {per_window:,} + {outside:,} outside the loop (each once)'
          f'{extra_terms} = {per_row:,} thread-instructions')
    print(f'  warp-instructions per row = {per_row:,} / 32 = {per_row / 32:,.0f}  (old method: every inner loop '
          f'body whole, INNER_TRIPS times a window)')
    table_extra = table_build_extra(a, code, loops, parent, stats, others) if a.loop_trips else None
    corrected = corrected_estimate(a, code, loops, stats, inner, rest, outside, sub_extra, table_extra)
    once = [k for k in others if (not table_extra or loops[k][0] != table_extra[1])
            and not (a.barrier_loop_warps and any(i.op == 'BAR' for i in code.region(*loops[k])))]
    if once:
        print(f'  note: {len(once)} other loop(s) outside the hot loop counted once (each extra pass adds its size): '
              + ', '.join(f'0x{loops[k][0]:x} ({stats[k][0]["n"]:,})' for k in once[:8]) + (' ...' if len(once) > 8 else ''))
    return foot / 1024, c['LDL'] + c['STL'], len(data) + in_callees, per_row / 32, corrected


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('cubin')
    ap.add_argument('ptxas_log')
    ap.add_argument('--probe', help='probe cubin (kernels probe_<prim>_x1 / _x16)')
    ap.add_argument('--kernel', default='verify_kernel', help='substring of the entry symbol')
    ap.add_argument('--windows', type=int, default=33, help='hot-loop passes per row')
    ap.add_argument('--inner-trips', type=int, default=4, help='passes of each inner loop per window')
    ap.add_argument('--min-skip', type=int, default=16, help='branch heuristic: instructions skipped')
    ap.add_argument('--hot-loop', help='force the hot loop: hex address of its head')
    ap.add_argument('--loop-trips', action='append', metavar='T | TP,TG | TS,TP,TL,TG',
                    help='passes per row of each inner loop of the hot loop, in address order: T of its longest '
                         'path, TP and TG passes of its longest P and G paths, or TS, TP, TL and TG passes of the '
                         'start, the P addition, the lambda-P addition and the longest G path (p_kinds; the '
                         'corrected estimate)')
    ap.add_argument('--table-trips', metavar='OUTER,INNER[,CATCHUP]',
                    help='passes per row of the P table build loop with an addition, (in all) of its rescaling '
                         'loop, and of the build loop without an addition (the catch-up, its fewest products)')
    ap.add_argument('--sub-trips', action='append', metavar='NAME=T1,T2,...',
                    help='trip counts of the loops of a once-per-row subroutine, in address order')
    ap.add_argument('--block-warps', type=int, default=4, help='warps per block (block-shared code)')
    ap.add_argument('--barrier-loop-warps', action='append', metavar='A1,A2,...',
                    help='per barrier loop outside the hot loop, in address order: warps of the block that run '
                         'the node step in each pass')
    ap.add_argument('--sub-weight', action='append', metavar='NAME=F',
                    help='runs of subroutine NAME per lane at each call site (e.g. 1/4: one warp of four)')
    ap.add_argument('--arch-log', action='append', metavar='ARCH:PTXAS_LOG',
                    help='ptxas -v report of the kernel built for another architecture (occupancy table)')
    ap.add_argument('--smem-per-thread', help='dynamic shared memory per thread, bytes: N for every '
                    'architecture or ARCH:N,ARCH:N,... per architecture')
    ap.add_argument('--tpb', type=int, default=128, help='threads per block of the launch configuration')
    ap.add_argument('--no-strict', action='store_true', help='exit 0 even with stack/spills')
    ap.add_argument('--verbose', action='store_true', help='list every loop of the kernel')
    a = ap.parse_args()

    b, secs, funcs = read_elf(a.cubin)
    entries = [(sh, n) for sh, v, sz, n in funcs if a.kernel in n and not n.startswith('$') and v == 0]
    if not entries:
        print(f'kernel-metrics: WARNING: no entry symbol containing "{a.kernel}" in {a.cubin}: nothing measured')
        return 0
    ti, entry = entries[0]
    ins = decode_section(b, secs[ti])
    code = Code(ins, [(v, v + sz, demangle(n.split('$')[-1])) for sh, v, sz, n in funcs if sh == ti and n.startswith('$')])
    entry_end = min([lo for lo, _, _ in code.subs if lo > 0] or [len(ins) * 16])
    regs, stack, sst, sld = parse_ptxas(a.ptxas_log, entry)
    spills = None if sst is None else sst + sld
    cubin_bytes = os.path.getsize(a.cubin)

    whole = collections.Counter(i.op for i in ins if i.op != 'NOP')
    print('== kernel metrics (sm_90 SASS, decoded offline) ==')
    print(f'kernel                       : {demangle(entry)}  ({entry})')
    print(f'registers                    : {fmt(regs)}')
    print(f'stack frame bytes            : {fmt(stack)}')
    print(f'spill stores / loads bytes   : {fmt(sst)} / {fmt(sld)}')
    print(f'cubin bytes / .text bytes    : {cubin_bytes:,} / {secs[ti]["size"]:,}')
    print(f'SASS instructions (total)    : {sum(whole.values()):,}')
    print('  opcode histogram (top 10)  : ' + ', '.join(f'{op} {n:,}' for op, n in whole.most_common(10)))
    print(f'LDL / STL (whole kernel)     : {whole["LDL"]:,} / {whole["STL"]:,}')
    if code.subs:
        print('subroutines (real CALLs)     : ' + ', '.join(
            f'{n} {code.counts(lo, hi, expand=False)[0]["n"]:,}' for lo, hi, n in code.subs))

    # Loops of the entry's own code only: a subroutine's loops count toward the
    # loops that call it (today's fallback ladder is a subroutine whose loop must
    # not be taken for the hot one).
    loops = find_loops(code, 0, entry_end)
    parent = loop_parents(loops)
    stats = [code.counts(h, e) for h, e in loops]
    if a.verbose:
        print('loops (#, head..back edge, enclosing loop, instructions incl. callees, IMAD.WIDE, STG):')
        for k, (h, e) in enumerate(loops):
            par = '-' if parent[k] is None else f'#{parent[k]}'
            print(f'  #{k:<3} 0x{h:06x}..0x{e - 16:06x}  in {par:5} {stats[k][0]["n"]:9,} '
                  f'{stats[k][0]["IMAD.WIDE"]:7,} {stats[k][0]["STG"]:3}')
    hot, how = pick_hot_loop(code, loops, stats, a.hot_loop)
    hot_kib = hot_ldst = divergent = est = est_corrected = None
    if hot is None:
        print(f'hot loop                     : n/a ({how})')
    else:
        hot_kib, hot_ldst, divergent, est, est_corrected = report_hot_loop(a, code, entry_end, loops, parent, stats, hot, how)

    prim = probe_costs(a.probe)
    print('field primitives (marginal SASS instructions per call, probe (x16 - x1) / 15):')
    for name, v in prim.items():
        print(f'   {name:18s} {v:7.1f}')
    if not prim:
        print('   n/a (no probe cubin)')
    pget = lambda op: prim.get('fe32_' + op, prim.get('fe_' + op))

    arch_bad, arch_warps = [], {}
    if a.smem_per_thread is not None:
        logs = [(90, a.ptxas_log)] + [(int(x.split(':', 1)[0]), x.split(':', 1)[1]) for x in a.arch_log or []]
        arch_bad, arch_warps = report_occupancy(sorted(logs), entry, a.smem_per_thread, a.tpb)

    # every other entry of the module (issue 30's parity_kernel): stack and
    # spills as strictly as the verify kernel's
    others_bad = []
    logs_all = [(90, a.ptxas_log)] + [(int(x.split(':', 1)[0]), x.split(':', 1)[1]) for x in a.arch_log or []]
    for arch, log in logs_all:
        text = open(log, errors='replace').read() if os.path.exists(log) else ''
        for name in sorted(set(re.findall(r"Compiling entry function '([^']+)'", text)) - {entry}):
            _, st, ss, sl = parse_ptxas(log, name)
            if st or ss or sl:
                others_bad.append(f'{demangle(name)} on sm_{arch} ({st} B stack, {ss} + {sl} B spills)')
    print('other entries (stack / spills): ' + ('; '.join(others_bad) if others_bad else 'none on any architecture'))
    if others_bad:
        arch_bad = arch_bad + ['other entries']

    print('== against targets ==')
    rows = [('stack frame bytes', stack, 0), ('spill bytes (stores + loads)', spills, 0),
            ('hot loop code KiB (incl. callees)', hot_kib, 32), ('hot loop LDL + STL', hot_ldst, 0),
            ('hot loop data-dependent branches', divergent, 0), ('fe_mul SASS', pget('mul'), 170),
            ('fe_sqr SASS', pget('sqr'), 110), ('fe_add SASS', pget('add'), 32), ('fe_sub SASS', pget('sub'), 32),
            ('cubin KiB', cubin_bytes / 1024, 256), ('est. warp-instructions per ECDSA row', est, 12000)]
    if est_corrected is not None:
        rows.append(('  corrected (per-path passes)', est_corrected, 12000))
    for name, v, target in rows:
        verdict = 'n/a' if v is None else 'OK' if v <= target else 'MISS'
        spec = ',.1f' if isinstance(v, float) and v < 100 else ',.0f'
        print(f'   {name:38s} {fmt(v, spec):>10}   target <= {target:<8,} {verdict}')
    for arch in OCCUPANCY_TARGET_ARCHS:
        if arch in arch_warps:
            v = arch_warps[arch]
            print(f'   {"warps per SM, sm_" + str(arch):38s} {v:>10}   target >= {12:<8} {"OK" if v >= 12 else "MISS"}')
    if arch_bad:
        print('kernel-metrics: FAIL: stack frame, spills or no report on '
              + ', '.join(f'sm_{x}' if isinstance(x, int) else x for x in arch_bad)
              + (' (not enforced: METRICS_STRICT=0)' if a.no_strict else ''))
        if not a.no_strict:
            return 1
    if stack or spills:
        print(f'kernel-metrics: FAIL: the kernel has a stack frame ({stack} B) or spills ({spills} B)'
              + (' (not enforced: METRICS_STRICT=0)' if a.no_strict else ''))
        return 0 if a.no_strict else 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
