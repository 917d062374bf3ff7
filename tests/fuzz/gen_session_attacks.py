#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the hostile-client seeds of fuzz_session into
tests/fuzz/corpus/session/ (files named attack-*): the entry shapes and
control-socket abuse of issue 17's attacks and of docs/security.md, each as
one input of the harness, so that every CI fuzzing run starts from them and
ctest fuzz_replay checks each one's invariants (the status check_submission
gives, the session going on after a stray packet, no descriptor leaked, no
arena byte written outside the accepted ranges).

The attacks that need more than one session or a second process (retaining
segment descriptors across connections, connect/close loops, EMFILE, stats
siege) are not expressible as one input; tests/reliability covers them.

Input format: tests/fuzz/fuzz_session.cpp reads its input through
FuzzedDataProvider, which takes byte strings from the front of the input and
integers from the back (the first integer from the last byte, most
significant byte first; a value in [lo, hi] takes as many bytes as hi - lo
needs). Input below mirrors that: it queues both and joins them.
Run: python3 tests/fuzz/gen_session_attacks.py (idempotent)."""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "session")
M64 = (1 << 64) - 1
ARENA = 64 * 1024  # the harness's arena (--arena-size 64 KiB)

# Client::operations's op codes (ConsumeIntegralInRange(0, OP_LAST)).
OP_RAW, OP_REAP, OP_SQ_TAIL, OP_CQ_HEAD, OP_PACKET, OP_CANCEL, OP_SHUTDOWN, OP_TRUNCATE = 3, 6, 7, 8, 10, 11, 12, 13
OP_MORE = OP_LAST = 14  # one more byte: the doorbell (0) or a registered-buffer operation
# The registered-buffer operations behind OP_MORE (that byte % 8).
SUB_BELL, SUB_REGISTER, SUB_UNREGISTER, SUB_SUBMIT_REGISTERED, SUB_SUBMIT_SET, SUB_SHRINK, SUB_REWRITE = 0, 1, 3, 4, 5, 6, 7
# register_buffer's descriptor kinds (how % 16) and range shapes (shape >> 5).
DESC_MEMFD, DESC_NONE, DESC_SOCKET, DESC_PIPE, DESC_DIRECTORY, DESC_READ_ONLY, DESC_WRITE_ONLY, DESC_SEALED = (
    0, 9, 10, 11, 12, 13, 14, 15)
RANGE_PAGE, RANGE_INSIDE, RANGE_PAST_END, RANGE_WRAPS, RANGE_RAW, RANGE_FLAGS = 0, 3, 4, 5, 6, 7
MAX_FILE = 2 << 20  # the harness's largest registered file


class Input:
    def __init__(self):
        self.front = bytearray()
        self.back = []  # integer bytes in the order the harness consumes them

    def integer(self, value, lo=0, hi=M64):
        span, v, n = hi - lo, value - lo, 0
        assert 0 <= v <= span
        while n < 8 and (span >> (8 * n)) > 0:
            n += 1
        self.back += list(v.to_bytes(n, "big"))
        return self

    def u8(self, v):
        return self.integer(v, 0, 255)

    def u32(self, v):
        return self.integer(v & 0xFFFFFFFF, 0, 0xFFFFFFFF)

    def bytes(self, b):
        self.front += b
        return self

    def data(self):
        return bytes(self.front) + bytes(reversed(self.back))

    # Client::handshake: a well-formed hello (how 0: default magic, version,
    # arena, ring) named `name`, then a valid ack.
    def hello(self, name):
        self.u8(0)                      # how
        self.integer(0, 0, 3)           # requested arena: 0 (the daemon's)
        self.integer(0, 0, 7)           # requested ring entries: 0 (the daemon's)
        self.bytes(name.encode().ljust(64, b"\0"))
        self.u8(0)                      # ack: valid
        return self

    # op 3: a raw 64-byte entry (the harness sets user_tag), then the doorbell.
    def entry(self, e):
        assert len(e) == 64
        self.integer(OP_RAW, 0, OP_LAST)
        self.bytes(e)
        self.u8(0)                      # push: ring the doorbell
        return self

    def op(self, code):
        return self.integer(code, 0, OP_LAST)

    def bell(self):
        return self.op(OP_MORE).u8(SUB_BELL)

    # Registered buffers (ABI 1.4), behind OP_MORE. register: a file of
    # `rows` pool rows of `table` from row `first` as columns at byte `pad`
    # (rows=None: `raw` fuzz bytes there), `extra` bytes after them (or a
    # sparse file of `file_size`), a descriptor kind and a range shape
    # (`range_args`: the integers that shape consumes). Returns the file size.
    def register(self, desc=DESC_MEMFD, table=0, first=0, rows=8, pad=0, extra=0, file_size=None, rng=RANGE_PAGE,
                 from_pad=False, whole_file=False, range_args=(), raw=b""):
        how = desc | (0x10 if rows is None else 0) | (0x20 if file_size is not None else 0)
        shape = (rng << 5) | (1 if from_pad else 0) | (2 if whole_file else 0)
        self.op(OP_MORE).u8(SUB_REGISTER).u8(how).u8(shape).integer(pad, 0, 8192)
        if rows is None:
            self.integer(len(raw), 0, 512).bytes(raw)
            end = pad + len(raw)
        else:
            self.integer(table, 0, 3).integer(first, 0, 31).integer(rows, 1, 32 - first)
            end = pad + rows * (32 + (33 if table < 2 else 32) + 64)
        if file_size is not None:
            self.integer(file_size, 0, MAX_FILE)
        else:
            self.integer(extra, 0, 8192)
            file_size = end + extra
        for value, lo, hi in range_args:
            self.integer(value, lo, hi)
        return self

    # unregister: how 0 a live buffer (pick-th), 2 any known, 3 the next id
    # (or `raw_id`); flags: reserved flags set.
    def unregister(self, how=0, pick=0, raw_id=None, flags=None):
        f = how | ((pick & 0xF) << 2) | (0x80 if raw_id is not None else 0) | (0x40 if flags is not None else 0)
        self.op(OP_MORE).u8(SUB_UNREGISTER).u8(f)
        if raw_id is not None:
            self.integer(raw_id)
        if flags is not None:
            self.u32(flags)
        return self

    # A verify_registered_columns entry on the pick-th live buffer (how 0),
    # any known (2), or id `raw_id` (3). exact: rows [start, start + count) of
    # its columns (over=True lets count pass them by up to 2); otherwise the
    # fuzzed form with `count` and the three offsets. bell: ring after it.
    def submit_registered(self, how=0, pick=0, raw_id=None, exact=True, start=0, count=1, rows=8, over=False,
                          offsets=(0, 0, 0), results=32768, table_label=False, bell=True):
        f = how | (0 if exact else 4) | (8 if table_label else 0) | (0x10 if over else 0)
        self.op(OP_MORE).u8(SUB_SUBMIT_REGISTERED).u8(f)
        if how == 3:
            self.u8(1).integer(raw_id)
        else:
            self.u8(pick)
        if exact:
            self.integer(start, 0, rows).integer(count, 0, rows - start + (2 if over else 0))
        else:
            self.u8(0).integer(count)
            for o in offsets:
                self.u8(0).integer(o)
        self.u8(1).integer(results, 0, ARENA + 8)
        self.u8(0 if bell else 1)
        return self

    # A verify_registered_column_set entry (ABI 1.6), its set written at
    # arena offset `at` (aligned down to 8 unless unaligned), the results at
    # `results`. picks: the live buffers of the three columns; pool=True:
    # rows [start, start + count) of the first one's `rows` rows; otherwise
    # `count` rows at the fuzzed offsets, ids 0..8 when raw_ids.
    def submit_set(self, picks=(0, 0, 0), pool=True, start=0, count=1, rows=8, over=False, raw_ids=None,
                   offsets=(0, 0, 0), reserved=None, unaligned=False, at=16384, results=32768):
        f = ((1 if raw_ids is not None else 0) | (0 if pool else 2) | (4 if over else 0) |
             (0x10 if reserved is not None else 0) | (0 if unaligned else 0x20))
        if reserved is not None:
            f |= (reserved[0] & 1) << 7
        self.op(OP_MORE).u8(SUB_SUBMIT_SET).u8(f)
        for i in range(3):
            if raw_ids is not None:
                self.integer(raw_ids[i], 0, 8)
            else:
                self.u8(picks[i])
        if pool:
            self.integer(start, 0, rows).integer(count, 0, rows - start + (2 if over else 0))
        else:
            self.integer(count, 0, 40).integer(offsets[0], 0, 8192).integer(offsets[1], 0, 8192).integer(offsets[2])
            if reserved is not None:
                self.integer(reserved[1])
        self.integer(at, 0, ARENA - 1).integer(results, 0, ARENA)
        self.u8(1)  # ring the doorbell
        return self

    # shrink the pick-th known buffer's file (of file_size bytes) to keep bytes.
    def shrink(self, keep, file_size, pick=0, bell=True):
        self.op(OP_MORE).u8(SUB_SHRINK).u8(pick).u8(2 if bell else 0).integer(keep, 0, file_size)
        return self

    # rewrite bytes of the pick-th known buffer at `at` (inside its range of `size` bytes).
    def rewrite(self, data, at, size, pick=0):
        self.op(OP_MORE).u8(SUB_REWRITE).u8(pick).integer(len(data), 1, 64).bytes(data).integer(at, 0, size - 1)
        return self

    # op 10: a packet on the control socket; size 2^exp (+1), with a descriptor or not.
    def packet(self, size_exp=None, plus_one=False, with_fd=False, small=8):
        self.op(OP_PACKET)
        self.integer(small, 1, 32)
        shape = (1 if size_exp is not None else 0) | (2 if plus_one else 0) | (4 if with_fd else 0)
        self.u8(shape)
        n = small
        if size_exp is not None:
            self.integer(size_exp, 9, 12)
            n = 1 << size_exp
        n += 1 if plus_one else 0
        self.bytes(bytes((i * 7 + 1) & 0xFF for i in range(n)))
        return self

    # op 11: cancel. how 0: the last tag submitted (or 0), 2: a tag never
    # submitted, 3: any tag; stray_count: a non-zero field (bad_entry).
    def cancel(self, how, tag=0, stray_count=None, back=0):
        self.op(OP_CANCEL)
        f = (how & 3) | ((back & 0x1F) << 2) | (0x80 if stray_count is not None else 0)
        self.u8(f)
        if how == 3:
            self.integer(tag)
        if stray_count is not None:
            self.u8(stray_count)
        self.u8(0)                      # push: ring the doorbell
        return self


def verify(rows_offset=0, results_offset=32768, row_count=1, kind=0, key_size=3, encoding=0, mode=0,
           table=0xFF, flags=0, reserved=(0, 0, 0)):
    return struct.pack("<QQQQBBBBBBHQQQ", 0, rows_offset & M64, results_offset & M64, row_count & M64, 1, kind,
                       key_size, encoding, mode, table, flags, *reserved)


def columns(message=0, results_offset=32768, row_count=1, key=4096, sig=8192, corr=0, tail=0, mode=0):
    return struct.pack("<QQQQBBBBBBHQQQ", 0, message & M64, results_offset & M64, row_count & M64, 3, 0, tail,
                       0, mode, 0xFF, 0, key & M64, sig & M64, corr & M64)


def session(name, *entries):
    i = Input().hello(name)
    for e in entries:
        i.entry(e)
    return i.op(OP_REAP)


INPUTS = {}
# Oversized counts: whole-arena, one row over, 2^32, 2^64 - 1 (the byte size wraps).
INPUTS["attack-count-max"] = session("count-max", verify(row_count=M64))
INPUTS["attack-count-2-32"] = session("count-2-32", verify(row_count=1 << 32))
INPUTS["attack-count-wraps"] = session("count-wraps", verify(row_count=(1 << 64) // 131 + 1))
INPUTS["attack-count-over-arena"] = session("count-arena", verify(row_count=ARENA // 132 + 1, results_offset=0,
                                                                      mode=1))
INPUTS["attack-count-columns-max"] = session("count-columns", columns(row_count=M64))
# Overlapping ranges: results over the rows, results over a column, collect
# correlate over the key column, columns over each other (allowed: read only).
INPUTS["attack-overlap-results-rows"] = session("overlap-rows", verify(row_count=8, results_offset=100))
INPUTS["attack-overlap-results-key"] = session("overlap-key", columns(row_count=4, results_offset=4096 + 10))
INPUTS["attack-overlap-collect-key"] = session("overlap-collect", columns(row_count=4, mode=1, results_offset=0,
                                                                          tail=4, corr=4096 + 33))
INPUTS["attack-overlap-columns-shared"] = session("columns-shared", columns(row_count=4, key=0, sig=0))
# Bad column offsets: past the end, one byte over, wrapping past 2^64.
INPUTS["attack-columns-key-past-end"] = session("col-key-end", columns(key=ARENA))
INPUTS["attack-columns-sig-one-over"] = session("col-sig-over", columns(sig=ARENA - 63))
INPUTS["attack-columns-corr-wraps"] = session("col-corr-wrap", columns(tail=8, corr=M64 - 3, mode=1,
                                                                       results_offset=0))
INPUTS["attack-columns-results-wraps"] = session("col-res-wrap", columns(results_offset=M64))
# Offsets past the arena and wrapping, reserved words and unknown flags set.
INPUTS["attack-rows-offset-wraps"] = session("rows-wrap", verify(rows_offset=M64 - 10, row_count=1))
INPUTS["attack-results-at-end"] = session("results-end", verify(row_count=2, results_offset=ARENA - 1))
INPUTS["attack-reserved-nonzero"] = session("reserved", verify(reserved=(1, 0, 0)))
INPUTS["attack-unknown-flags"] = session("flags", verify(flags=0x8000))
INPUTS["attack-schnorr-encoding"] = session("schnorr-enc", verify(kind=1, encoding=1))
INPUTS["attack-bad-opcode"] = session("opcode", struct.pack("<QQQQB", 0, 0, 0, 1, 0x7F) + bytes(31))
# Cancels: of a tag never submitted, of the batch just submitted, of a
# completed one, of an arbitrary tag, with a stray field (bad_entry).
INPUTS["attack-cancel-unknown"] = Input().hello("cancel-unknown").cancel(2, back=5).op(OP_REAP).data()
INPUTS["attack-cancel-any-tag"] = Input().hello("cancel-any").cancel(3, tag=M64).cancel(3, tag=0).op(OP_REAP).data()
INPUTS["attack-cancel-live"] = (Input().hello("cancel-live").entry(verify(row_count=200, results_offset=40000))
                                .cancel(0).op(OP_REAP).data())
INPUTS["attack-cancel-twice"] = (Input().hello("cancel-twice").entry(verify(row_count=200, results_offset=40000))
                                 .cancel(0).cancel(0, back=1).op(OP_REAP).data())
INPUTS["attack-cancel-stray-field"] = Input().hello("cancel-stray").cancel(3, tag=1, stray_count=5).op(OP_REAP).data()
# Packets after the handshake: small, 512 exactly, 513, 4 KiB, with a
# descriptor, more than the reader drains per check (16); entries still served after.
INPUTS["attack-packet-513"] = session("packet-513").packet(9, plus_one=True).entry(verify()).op(OP_REAP).data()
INPUTS["attack-packet-4096-fd"] = session("packet-4k-fd").packet(12, with_fd=True).entry(verify()).op(OP_REAP).data()
INPUTS["attack-packet-fd-small"] = session("packet-fd").packet(with_fd=True, small=1).op(OP_REAP).data()
flood = session("packet-flood")
for k in range(20):
    flood.packet(9 + k % 4, plus_one=k % 2 == 1, with_fd=k % 3 == 0)
INPUTS["attack-packet-flood"] = flood.entry(verify()).op(OP_REAP).data()
# The daemon begins to shut down between two batches: the first is verified,
# the second (and a cancel after it) answered shutting_down.
INPUTS["attack-shutdown-between"] = (Input().hello("shutdown").entry(verify()).op(OP_REAP).op(OP_SHUTDOWN)
                                     .entry(verify()).cancel(0).op(OP_REAP).data())
# The client shrinks its segment under a batch in flight (to 0 bytes, and to
# the header page only): the SIGBUS guard ends that session, nothing else.
INPUTS["attack-truncate-to-zero"] = (Input().hello("truncate-0").entry(verify(row_count=200, results_offset=40000))
                                     .op(OP_TRUNCATE).integer(0, 0, 73727).bell().data())
INPUTS["attack-truncate-to-header"] = (Input().hello("truncate-hdr").entry(verify(row_count=200, results_offset=40000))
                                       .op(OP_TRUNCATE).integer(4096, 0, 73727).entry(verify()).op(OP_REAP).data())
# Ring indices: submission tail far ahead, completion head ahead of the tail.
INPUTS["attack-sq-tail-ahead"] = session("sq-ahead").op(OP_SQ_TAIL).u32(1 << 31).data()
INPUTS["attack-cq-head-ahead"] = (Input().hello("cq-ahead").entry(verify()).op(OP_CQ_HEAD).u32(12345)
                                  .entry(verify()).data())
# Handshakes: bad magic, version mismatch, ring not a power of two, huge
# arena request, a descriptor passed with the hello, raw short and long
# hellos, a refusing ack, an empty ack (keeps the segment, never acks).
INPUTS["attack-hello-bad-magic"] = Input().u8(0x10).u32(0xDEADBEEF).integer(0, 0, 3).integer(0, 0, 7).data()
INPUTS["attack-hello-version"] = Input().u8(0x20).u32(2).integer(0, 0, 3).integer(0, 0, 7).data()
INPUTS["attack-hello-ring-not-pow2"] = Input().u8(0x40).integer(0, 0, 3).u32(12).u8(0).data()
INPUTS["attack-hello-huge-arena"] = (Input().u8(0).integer(3, 0, 3).integer(M64).integer(7, 0, 7)
                                     .bytes(b"huge".ljust(64, b"\0")).u8(0).entry(verify()).op(OP_REAP).data())
INPUTS["attack-hello-with-fd"] = Input().u8(7).integer(0, 0, 3).integer(0, 0, 7).bytes(b"fd".ljust(64, b"\0")).data()
INPUTS["attack-hello-raw-short"] = Input().u8(5).integer(3, 0, 200).bytes(b"SVH").data()
INPUTS["attack-hello-raw-long"] = Input().u8(5).integer(200, 0, 200).bytes(bytes(200)).data()
INPUTS["attack-ack-refused"] = Input().u8(0).integer(0, 0, 3).integer(0, 0, 7).bytes(bytes(64)).u8(6).data()
INPUTS["attack-ack-empty"] = (Input().u8(0).integer(0, 0, 3).integer(0, 0, 7).bytes(bytes(64)).u8(7)
                              .integer(0, 0, 16).data())

# Registered buffers (ABI 1.4): each new operation of the harness at least once.
ECDSA_ROWS = 8 * (32 + 33 + 64)
INPUTS["attack-reg-columns"] = (Input().hello("reg-columns").register(rows=8)
                                .submit_registered(start=0, count=8).submit_registered(start=3, count=4, table_label=True)
                                .op(OP_REAP).data())
INPUTS["attack-reg-schnorr-at-offset"] = (Input().hello("reg-schnorr").register(table=2, first=4, rows=12, pad=5000,
                                                                                extra=100, from_pad=True)
                                          .submit_registered(start=2, count=10, rows=12)
                                          .submit_registered(start=5, count=9, rows=12, over=True)
                                          .op(OP_REAP).data())
INPUTS["attack-reg-descriptors"] = (Input().hello("reg-descriptors")
                                    .register(desc=DESC_NONE).register(desc=DESC_SOCKET).register(desc=DESC_PIPE)
                                    .register(desc=DESC_DIRECTORY).register(desc=DESC_WRITE_ONLY)
                                    .register(desc=DESC_READ_ONLY, table=1).register(desc=DESC_SEALED, table=3)
                                    .submit_registered(pick=0, start=0, count=8).submit_registered(pick=1, count=8)
                                    .op(OP_REAP).data())
INPUTS["attack-reg-ranges"] = (Input().hello("reg-ranges")
                               .register(rng=RANGE_PAST_END, range_args=((ECDSA_ROWS, 0, ECDSA_ROWS + 1), (1, 1, 4096)))
                               .register(rng=RANGE_WRAPS, range_args=((0, 0, 4096), (ECDSA_ROWS, 1, ECDSA_ROWS + 1)))
                               .register(rng=RANGE_WRAPS, from_pad=True, range_args=((7, 0, 4096), (1, 1, ECDSA_ROWS + 1)))
                               .register(rng=RANGE_INSIDE, range_args=((100, 0, ECDSA_ROWS), (0, 0, ECDSA_ROWS - 100)))
                               .register(rng=RANGE_RAW, range_args=((M64, 0, M64), (2, 0, M64)))
                               .register(rng=RANGE_FLAGS, range_args=((0x80000000, 0, 0xFFFFFFFF),))
                               .register(rng=RANGE_INSIDE, range_args=((1000, 0, ECDSA_ROWS), (32, 0, ECDSA_ROWS - 1000)))
                               .submit_registered(exact=False, count=1, offsets=(0, 0, 0))
                               .submit_registered(exact=False, count=1, offsets=(0, 0, 1))
                               .op(OP_REAP).data())
INPUTS["attack-reg-limits"] = (Input().hello("reg-limits").register(file_size=MAX_FILE, whole_file=True)
                               .register().register().register().register()
                               .unregister().register().op(OP_REAP).data())
INPUTS["attack-reg-unregister"] = (Input().hello("reg-unregister").register().unregister()
                                   .unregister(how=2).unregister(how=3).unregister(how=3, raw_id=M64)
                                   .unregister(how=3, raw_id=0).register().unregister(flags=1)
                                   .submit_registered(how=2, exact=False, count=1)
                                   .submit_registered(how=3, raw_id=1, exact=False, count=1)
                                   .op(OP_REAP).data())
INPUTS["attack-reg-shrink-under-batch"] = (Input().hello("reg-shrink-under").register(rows=32)
                                           .submit_registered(count=32, rows=32, bell=False)
                                           .shrink(0, 32 * 129).submit_registered(count=32, rows=32)
                                           .op(OP_REAP).unregister(how=2).data())
INPUTS["attack-reg-shrink-between"] = (Input().hello("reg-shrink-between").register(rows=16, pad=4096, extra=4096)
                                       .submit_registered(count=16, rows=16).op(OP_REAP)
                                       .shrink(4096, 16 * 129 + 8192).submit_registered(count=16, rows=16)
                                       .op(OP_REAP).register().unregister(how=2, pick=0).data())
INPUTS["attack-reg-raw-bytes"] = (Input().hello("reg-raw-bytes").register(rows=None, raw=bytes(range(200)), pad=3,
                                                                          from_pad=True)
                                  .submit_registered(exact=False, count=1, offsets=(0, 32, 65))
                                  .submit_registered(exact=False, count=2, offsets=(0, 32, 65))
                                  .op(OP_REAP).data())
# A buffer per column (ABI 1.6): three buffers of the same pool rows, each
# column from its own; hostile sets (unknown ids, reserved words, unaligned,
# outside a buffer, the set under its own results); a column's buffer cut.
INPUTS["attack-set-columns"] = (Input().hello("set-columns").register(rows=8).register(rows=8, pad=100)
                                .register(rows=8, pad=4096, extra=10)
                                .submit_set(picks=(0, 1, 2), count=8, at=16448).submit_set(picks=(2, 0, 1), start=3, count=5, at=16512)
                                .submit_set(picks=(1, 1, 1), start=6, count=4, over=True, at=16576)
                                .op(OP_REAP).data())
INPUTS["attack-set-schnorr"] = (Input().hello("set-schnorr").register(table=2, first=4, rows=12)
                                .register(table=2, first=4, rows=12, pad=33)
                                .submit_set(picks=(1, 0, 1), start=2, count=10, rows=12, at=16640).op(OP_REAP).data())
INPUTS["attack-set-hostile"] = (Input().hello("set-hostile").register(rows=8)
                                .submit_set(raw_ids=(1, 0, 1), pool=False, count=1, at=16704)
                                .submit_set(raw_ids=(1, 1, 7), pool=False, count=1, at=16768)
                                .submit_set(raw_ids=(1, 1, 1), pool=False, count=1, reserved=(1, 5), at=16832)
                                .submit_set(raw_ids=(1, 1, 1), pool=False, count=2, offsets=(0, 8000, M64 - 5), at=16896)
                                .submit_set(picks=(0, 0, 0), count=8, unaligned=True, at=16385)
                                .submit_set(picks=(0, 0, 0), count=8, at=ARENA - 32)
                                .submit_set(picks=(0, 0, 0), count=8, at=16384, results=16384 + 4)
                                .op(OP_REAP).data())
INPUTS["attack-set-shrink"] = (Input().hello("set-shrink").register(rows=32).register(rows=32)
                               .submit_set(picks=(0, 1, 0), count=32, rows=32, at=16960)
                               .shrink(0, 32 * 129, pick=1).submit_set(picks=(0, 1, 0), count=32, rows=32, at=17024)
                               .submit_set(picks=(0, 0, 0), count=32, rows=32, at=17088)
                               .op(OP_REAP).unregister(how=2, pick=1).data())
INPUTS["attack-reg-rewrite"] = (Input().hello("reg-rewrite").register(rows=8)
                                .rewrite(bytes(range(64)), 0, ECDSA_ROWS).submit_registered(count=8)
                                .op(OP_REAP).data())

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, data in sorted(INPUTS.items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data.data() if isinstance(data, Input) else data)
    print(f"wrote {len(INPUTS)} inputs to {OUT}")
