#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fails when libsigverify.so exports a symbol that is not on the allow-list.

Usage: check_exports.py LIBSIGVERIFY_SO ALLOW_LIST

Lists the library's defined dynamic symbols (nm -D --defined-only, demangled),
and checks each against the allow-list (client/exports.allow: one regular
expression a line, matched against the whole demangled name). Also checks
that the public API is there at all (a library that exports nothing would
pass the first check), by a few names every build must export, and that every
exported symbol carries a version node of client/libsigverify.map
(SIGVERIFY_x.y; nm prints it after "@@").
"""
import re
import subprocess
import sys

# The version nodes of client/libsigverify.map.
VERSION_NODE = re.compile(r"SIGVERIFY_[0-9]+\.[0-9]+")

# Must be exported: the C ABI's entry points and the C++ Client's connect.
REQUIRED = [
    re.compile(r"sigverify_connect"),
    re.compile(r"sigverify_verify_ecdsa_columns"),
    re.compile(r"sigverify_set_cancel_token"),
    re.compile(r"sigverify::Client::connect\(.*\)"),
    re.compile(r"typeinfo for sigverify::Error"),
    re.compile(r"sigverify_version"),
]


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    so, allow_path = sys.argv[1], sys.argv[2]
    patterns = []
    with open(allow_path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                patterns.append(re.compile(line))
    out = subprocess.run(["nm", "-D", "--defined-only", "-C", so], check=True, capture_output=True,
                         text=True).stdout
    names = []
    unversioned = []
    for line in out.splitlines():
        parts = line.split(None, 2)  # address, type, name (the name may hold spaces)
        if len(parts) != 3:
            continue
        kind, name = parts[1], parts[2]
        if kind == "A" and VERSION_NODE.fullmatch(name):
            continue  # the version node's own definition, not a symbol of the API
        name, _, version = name.partition("@")
        if not VERSION_NODE.fullmatch(version.lstrip("@")):
            unversioned.append(name)
        names.append(name)
    unlisted = [n for n in names if not any(p.fullmatch(n) for p in patterns)]
    missing = [r.pattern for r in REQUIRED if not any(r.fullmatch(n) for n in names)]
    for n in unlisted:
        print("check_exports: exported but not on the allow-list:", n)
    for m in missing:
        print("check_exports: public API symbol not exported:", m)
    for n in unversioned:
        print("check_exports: exported without a SIGVERIFY_x.y version node:", n)
    print(f"check_exports: {len(names)} exported symbols, {len(unlisted)} unlisted, {len(missing)} missing, "
          f"{len(unversioned)} unversioned")
    return 1 if unlisted or missing or unversioned else 0


if __name__ == "__main__":
    sys.exit(main())
