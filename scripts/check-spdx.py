#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every source, script and build file of the tree carries the line
`SPDX-License-Identifier: MIT` among its first three lines (LICENSE; docs/client.md).

Usage: check-spdx.py SOURCE_DIR. Lists the tracked files (git ls-files; a tree
without git is walked) and fails naming each file that lacks the line. Not
checked: documents (*.md), data (JSON, SVG, the fuzz corpus, the vendored test
vectors, which carry their own licenses) and the Debian control files whose
formats allow no comment (changelog, copyright, conffiles, triggers)."""
import os
import subprocess
import sys

TAG = "SPDX-License-Identifier: MIT"
SKIP_DIRS = ("tests/fuzz/corpus/", "tests/vectors/", ".git/")
SKIP_NAMES = {"changelog", "copyright", "conffiles", "triggers", "LICENSE"}
SKIP_EXTS = {".md", ".json", ".svg", ".csv"}


def tracked(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files"], capture_output=True, text=True, check=True)
        files = [f for f in out.stdout.splitlines() if f]
        if files:
            return files
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(("build", ".git"))]
        files += [os.path.relpath(os.path.join(d, n), root) for n in names]
    return files


def needs_tag(path):
    if path.startswith(SKIP_DIRS) or os.path.basename(path) in SKIP_NAMES:
        return False
    return os.path.splitext(path)[1] not in SKIP_EXTS


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    missing = []
    checked = 0
    for f in sorted(tracked(root)):
        full = os.path.join(root, f)
        if not needs_tag(f) or not os.path.isfile(full):
            continue
        checked += 1
        with open(full, encoding="utf-8", errors="replace") as fh:
            head = [fh.readline() for _ in range(3)]
        if not any(TAG in line for line in head):
            missing.append(f)
    for f in missing:
        print(f"{f}: no '{TAG}' line in its first three lines")
    print(f"check-spdx: {checked} files checked, {len(missing)} without the SPDX line")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
