#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the hand-made regression inputs of fuzz_segment_checks into
tests/fuzz/corpus/segment_checks/ (files named regress-*). Each targets one
boundary the random corpus may miss; the harness's oracle aborts when the
checked function disagrees with it, so replaying the corpus (scripts/fuzz.sh
--replay, ctest fuzz_replay) fails on these bugs:

  ring-*     shm::ring_count_ok (shm_protocol/include/sigverify/shm_protocol/segment_access.hpp): a producer
             exactly `entries` ahead is accepted, `entries + 1` ahead refused,
             also across the 2^32 wrap of the indices (an off-by-one either way
             fails one of them).
  columns-*  check_submission() of a verify_columns entry whose column range
             offset + count * width wraps past 2^64 to a small number inside the
             arena (an overflow-unsafe range_in_arena accepts it; the oracle's
             128-bit arithmetic says bad_range).

Input format (fuzz_segment_checks.cpp): a tag byte (0 submission, 2 ring
indices), then for tag 0 the 64-byte SubmissionEntry, a selector byte (0: the
minimum arena, 64 KiB, fields taken as written) and 8 bytes of raw arena value;
for tag 2 head, tail and the ring size exponent, three little-endian u32.
Run: python3 tests/fuzz/gen_regressions.py (idempotent)."""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "segment_checks")
M64 = (1 << 64) - 1


def ring(head, tail, exp):
    return bytes([2]) + struct.pack("<III", head & 0xFFFFFFFF, tail & 0xFFFFFFFF, exp)


def columns(rows_offset=0, results_offset=4096, row_count=1, key_size=0, mode=0, key=8192, sig=12288, corr=0):
    # SubmissionEntry: user_tag, rows_offset (message column), results_offset,
    # row_count; opcode 3 (verify_columns), record_kind 0 (ECDSA: key width 33),
    # key_size (tail), encoding 0, mode, table 0xFF (unspecified), flags 0;
    # then the column offsets key, signature, correlate.
    e = struct.pack("<QQQQBBBBBBHQQQ", 0x7E57, rows_offset & M64, results_offset & M64, row_count,
                    3, 0, key_size, 0, mode, 0xFF, 0, key & M64, sig & M64, corr & M64)
    assert len(e) == 64
    return bytes([0]) + e + bytes([0]) + bytes(8)  # selector 0: arena = 64 KiB


INPUTS = {}
for exp in (0, 3, 12):  # rings of 1, 8, 4096 entries
    n = 1 << exp
    INPUTS[f"regress-ring-full-{n}"] = ring(0, n, exp)              # exactly full: accepted
    INPUTS[f"regress-ring-over-{n}"] = ring(0, n + 1, exp)          # one too many: refused
    INPUTS[f"regress-ring-full-wrap-{n}"] = ring(-3, n - 3, exp)    # full across the 2^32 wrap
    INPUTS[f"regress-ring-over-wrap-{n}"] = ring(-3, n - 2, exp)    # one too many across the wrap
    INPUTS[f"regress-ring-one-short-{n}"] = ring(7, 7 + n - 1, exp)
INPUTS["regress-ring-behind"] = ring(5, 4, 3)                       # tail behind head: 2^32 - 1 ahead

# Each column (and the results range) in turn starts just below 2^64 so that
# offset + count * width wraps to a value below the 64 KiB arena.
INPUTS["regress-columns-wrap-message"] = columns(rows_offset=2**64 - 16)           # 32 bytes -> 16
INPUTS["regress-columns-wrap-key"] = columns(key=2**64 - 1)                        # 33 bytes -> 32
INPUTS["regress-columns-wrap-signature"] = columns(sig=2**64 - 8)                  # 64 bytes -> 56
INPUTS["regress-columns-wrap-correlate"] = columns(key_size=4, corr=2**64 - 2)     # 4 bytes -> 2
INPUTS["regress-columns-wrap-results"] = columns(results_offset=2**64 - 1)         # 1 byte -> 0
INPUTS["regress-columns-wrap-key-rows"] = columns(row_count=100, key=2**64 - 3000, sig=20000,
                                                  results_offset=40000)            # 3300 bytes -> 300
INPUTS["regress-columns-wrap-collect"] = columns(mode=1, results_offset=0, key_size=8,
                                                 corr=2**64 - 4)                   # collect: correlate wraps
# The same entry in range (accepted): the oracle also checks there is no false refusal.
INPUTS["regress-columns-in-range"] = columns()
INPUTS["regress-columns-at-end"] = columns(key=65536 - 33)

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, data in sorted(INPUTS.items()):
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print(f"wrote {len(INPUTS)} inputs to {OUT}")
