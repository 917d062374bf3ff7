#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpus of fuzz_verify_diff into tests/fuzz/corpus/verify_diff/:

  wycheproof-*  the Wycheproof ECDSA secp256k1/SHA-256 vectors (tests/vectors/wycheproof:
                the P1363 file's r||s signatures and the DER files' signatures whose r and
                s fit 32 bytes), as raw rows (op 0), 8 a file, in the compact and the
                opaque encoding, on the ecdsa and multisig tables
  bip340-*      the BIP-340 vectors (tests/vectors/bip340/test-vectors.csv, 32-byte
                messages), raw rows on the schnorr and threshold tables
  edit-*        one signed row per edit of tests/fuzz/diff_rows.hpp (and all of them
                together), for both kinds: a start for every edge the decoder knows

Input format: tests/fuzz/diff_rows.hpp. Run: python3 tests/fuzz/gen_diff_seeds.py
(idempotent; removes the files it wrote before)."""
import csv
import glob
import hashlib
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "verify_diff")
VECTORS = os.path.join(HERE, "..", "vectors")
ECDSA, MULTISIG, SCHNORR, THRESHOLD = 0, 1, 2, 3
COMPACT = 4
PER_FILE = 8


def der_rs(sig):
    """(r, s) of a DER signature, or None when it is not one or a value exceeds 32 bytes."""
    try:
        if sig[0] != 0x30 or sig[1] != len(sig) - 2:
            return None
        out, i = [], 2
        for _ in range(2):
            if sig[i] != 0x02:
                return None
            n = sig[i + 1]
            v = int.from_bytes(sig[i + 2:i + 2 + n], "big")
            if n == 0 or v >= 1 << 256:
                return None
            out.append(v)
            i += 2 + n
        return tuple(out) if i == len(sig) else None
    except IndexError:
        return None


def ecdsa_rows():
    rows = []
    for path in sorted(glob.glob(os.path.join(VECTORS, "wycheproof", "ecdsa_secp256k1_sha256*_test.json"))):
        p1363 = "p1363" in path
        for group in json.load(open(path))["testGroups"]:
            pub = bytes.fromhex(group["publicKey"]["uncompressed"])
            key = bytes([2 + (pub[64] & 1)]) + pub[1:33]
            for t in group["tests"]:
                sig = bytes.fromhex(t["sig"])
                if p1363:
                    if len(sig) != 64:
                        continue
                    r, s = int.from_bytes(sig[:32], "big"), int.from_bytes(sig[32:], "big")
                else:
                    rs = der_rs(sig)
                    if rs is None:
                        continue
                    r, s = rs
                rows.append((hashlib.sha256(bytes.fromhex(t["msg"])).digest(), key, r, s))
    return rows


def ecdsa_record(row, compact):
    h, key, r, s = row
    rb, sb = r.to_bytes(32, "big"), s.to_bytes(32, "big")
    sig = rb + sb if compact else rb[::-1] + sb[::-1]
    return h + key + sig


def schnorr_rows():
    rows = []
    with open(os.path.join(VECTORS, "bip340", "test-vectors.csv")) as f:
        for rec in csv.DictReader(f):
            msg = bytes.fromhex(rec["message"])
            if len(msg) == 32:
                rows.append(msg + bytes.fromhex(rec["public key"]) + bytes.fromhex(rec["signature"]))
    return rows


def write(name, header, records):
    data = bytes([header, len(records) - 1])
    for r in records:
        data += b"\x00" + r
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def main():
    os.makedirs(OUT, exist_ok=True)
    for old in glob.glob(os.path.join(OUT, "*")):
        os.remove(old)
    ec = ecdsa_rows()
    for i in range(0, len(ec), PER_FILE):
        chunk = ec[i:i + PER_FILE]
        k = i // PER_FILE
        compact = k % 2 == 0
        table = MULTISIG if k % 4 >= 2 else ECDSA
        write("wycheproof-%03d" % k, table | (COMPACT if compact else 0) | ((k % 4) << 3),
              [ecdsa_record(r, compact) for r in chunk])
    sc = schnorr_rows()
    for i in range(0, len(sc), PER_FILE):
        k = i // PER_FILE
        write("bip340-%03d" % k, (THRESHOLD if k % 2 else SCHNORR) | ((k % 4) << 3), sc[i:i + PER_FILE])
    # signed rows: op = 1 | edit bits; d = 1 (byte 0x10: base 0, delta +1 -> 1), k raw,
    # hash raw, then each edit's bytes (edge byte 0x09: n + (1 - 4) = n - 3)
    secret = bytes([0x10]) + bytes([0x80]) + bytes(range(1, 33)) + bytes(range(33, 65))
    edits = {0x04: b"\x09", 0x08: b"\x0a", 0x10: b"", 0x20: b"\x02\x22", 0x40: b"\x00",
             0x80: b"\x05\x00\x03"}
    for table in (ECDSA, SCHNORR):
        for bit, extra in sorted(edits.items()):
            data = bytes([table, 0, 1 | bit]) + secret + extra
            open(os.path.join(OUT, "edit-%d-%02x" % (table, bit)), "wb").write(data)
        # every edit on one row (in the decoder's order), and a degenerate doubling
        allx = b"\x01" + b"\x09" + b"\x0a" + b"\x02\x22" + b"\x05\x00\x03"
        open(os.path.join(OUT, "edit-%d-ff" % table), "wb").write(bytes([table, 0, 0xFD]) + secret + allx)
        open(os.path.join(OUT, "edit-%d-41" % table), "wb").write(bytes([table, 0, 0x41]) + secret + b"\x01")
    print("wrote", len(os.listdir(OUT)), "inputs to", OUT)


if __name__ == "__main__":
    main()
