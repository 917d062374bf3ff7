#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the include rules of docs/architecture.md: who may include whom, and no include loop.

Usage: scripts/check-layers.py [repo root]      exit 0 clean, 1 a violation (each printed)

Layers, bottom up (a folder may include itself and the folders listed for it):
  shm_protocol   what client and daemon share: wire format, ring ABI, fd passing, waits
  reference      libsecp256k1 verifier, columns, group verdicts        -> shm_protocol
  kernels        kernel math and the CUDA backend                      -> shm_protocol, reference
  daemon         sigverifyd                                            -> shm_protocol, reference, kernels
  client         libsigverify and the sigverify CLI                    -> shm_protocol, reference
Inside daemon/, its parts, bottom up (a part may include itself and the parts listed):
  daemon/confirm    which verdicts libsecp256k1 confirms (the rule)        -> (none)
  daemon/memory     hostile entries, registered buffers, mapping guard, staging -> confirm
  daemon/backends   records in, verdict bytes out; the GPU/CPU split       -> confirm, memory
  daemon/ops        config, logs, metrics, stats socket, systemd           -> confirm, memory, backends
  daemon/schedule   jobs, chunks, workers                                  -> confirm, memory, backends, ops
  daemon/serve      listen socket, admission, sessions, start-up           -> every part below it
  daemon/main.cpp   the binary                                             -> every part
Besides, no file may reach itself through its own includes (a loop such as
session.cpp <-> scheduler.cpp shows up as session.hpp -> scheduler.hpp -> session.hpp),
and no installed public header may include a daemon header. docs/architecture.md
names every source of daemon/ and client/, and every folder of tests/.
"""
import os
import re
import sys

ALLOWED = {
    "shm_protocol": {"shm_protocol"},
    "reference": {"reference", "shm_protocol"},
    "kernels": {"kernels", "shm_protocol", "reference"},
    "daemon": {"daemon", "shm_protocol", "reference", "kernels"},
    "client": {"client", "shm_protocol", "reference"},
}
DAEMON_PARTS = ["confirm", "memory", "backends", "ops", "schedule", "serve"]
DAEMON_ALLOWED = {part: set(DAEMON_PARTS[:i + 1]) for i, part in enumerate(DAEMON_PARTS)}
DAEMON_ALLOWED[""] = set(DAEMON_PARTS)  # daemon/main.cpp
SOURCE = re.compile(r"\.(hpp|cpp|cu|h)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    return path.split("/", 1)[0]


def daemon_part(path):
    """The part of daemon/ a file is in ("" for a file at daemon/'s top), or None outside it."""
    parts = path.split("/")
    if parts[0] != "daemon":
        return None
    return parts[1] if len(parts) > 2 else ""


def resolve(root, including, name):
    """The repository path an #include "name" of file `including` refers to, or None."""
    candidates = [name, os.path.join(os.path.dirname(including), name)]
    if name.startswith("sigverify/shm_protocol/"):
        candidates.append(os.path.join("shm_protocol/include", name))  # installed ring ABI headers
    elif name.startswith("sigverify/"):
        candidates.append(os.path.join("client/include", name))
    for c in candidates:
        c = os.path.normpath(c)
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    files = []
    for top in ALLOWED:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if SOURCE.search(n):
                    files.append(os.path.relpath(os.path.join(dirpath, n), root))
    graph = {}
    errors = []
    for f in sorted(files):
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        deps = []
        for name in INCLUDE.findall(text):
            target = resolve(root, f, name)
            if target is None:
                continue  # a generated or system header
            deps.append(target)
            src, dst = layer_of(f), layer_of(target)
            if dst in ALLOWED and dst not in ALLOWED[src]:
                errors.append(f"{f}: includes {target} ({src} may not include {dst})")
            sp, dp = daemon_part(f), daemon_part(target)
            if sp is not None and dp is not None:
                if sp not in DAEMON_ALLOWED:
                    errors.append(f"{f}: daemon/{sp}/ is not a part check-layers knows")
                elif dp not in DAEMON_ALLOWED[sp]:
                    errors.append(f"{f}: includes {target} (daemon/{sp}/ may not include daemon/{dp or 'main.cpp'})")
            if f.startswith("client/include/") and dst == "daemon":
                errors.append(f"{f}: an installed header includes the daemon's {target}")
        graph[f] = deps

    # Include loops: depth-first search for a back edge.
    state = {}
    stack = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for d in graph.get(node, []):
            if state.get(d) == 1:
                loop = stack[stack.index(d):] + [d]
                errors.append("include loop: " + " -> ".join(loop))
            elif d not in state:
                visit(d)
        stack.pop()
        state[node] = 2

    for f in sorted(graph):
        if f not in state:
            visit(f)

    # A .cpp and the .hpp of another file of the same folder that includes the
    # first file's header back: the Session <-> Scheduler shape of a loop.
    headers_of = {}
    for f, deps in graph.items():
        if f.endswith((".cpp", ".cu")):
            stem = f.rsplit(".", 1)[0]
            headers_of[stem] = set(deps)
    for stem, deps in headers_of.items():
        own = stem + ".hpp"
        for d in deps:
            other = d.rsplit(".", 1)[0]
            if other != stem and other in headers_of and own in headers_of[other] and os.path.exists(
                    os.path.join(root, own)):
                a, b = sorted([stem, other])
                msg = f"mutual include: {a}.cpp and {b}.cpp include each other's headers"
                if msg not in errors:
                    errors.append(msg)

    # docs/architecture.md names every daemon/ and client/ source ("Every file, by room"):
    # a file by its own name, or a .hpp/.cpp pair by either name.
    doc_path = os.path.join(root, "docs", "architecture.md")
    if os.path.isfile(doc_path):
        with open(doc_path, encoding="utf-8") as fh:
            doc = fh.read()
        for f in sorted(files):
            if layer_of(f) not in ("daemon", "client"):
                continue
            base = os.path.basename(f)
            stem = base.rsplit(".", 1)[0]
            if not any(re.search(r"[`/]" + re.escape(stem + ext) + "`", doc) for ext in (".hpp", ".cpp", ".h", ".cu")):
                errors.append(f"{f}: not named in docs/architecture.md (\"Every file, by room\")")
        # ... and every folder of tests/ ("Tests, by room").
        tests_dir = os.path.join(root, "tests")
        for name in sorted(os.listdir(tests_dir)) if os.path.isdir(tests_dir) else []:
            if os.path.isdir(os.path.join(tests_dir, name)) and f"`tests/{name}/`" not in doc:
                errors.append(f"tests/{name}/: not named in docs/architecture.md (\"Tests, by room\")")

    for e in errors:
        print("check-layers:", e)
    print(f"check-layers: {len(files)} files, {sum(len(d) for d in graph.values())} includes, "
          f"{len(errors)} violation(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
