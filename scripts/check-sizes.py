#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The size rules of CONTRIBUTING.md: no production file over 600 lines, and
no function over 80 lines in daemon/ and client/, except those listed in
FILE_EXCEPTIONS and EXCEPTIONS below with the reason they are as they are.

Usage: check-sizes.py SOURCE_DIR. Production files are the C++ and CUDA
sources and headers outside tests/, examples/ and the generated kernels/
generated/. A function is found the way a reader finds one: a line that
ends a signature with `{` (not a control statement, class or namespace) and
the line where its braces close; the count includes both. Fails naming each
file and function over its bound, and each exception that no longer needs to
be one (so the list cannot rot)."""
import os
import re
import sys

MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80
FUNCTION_DIRS = ("daemon/", "client/")
SOURCE_EXTS = (".cpp", ".hpp", ".h", ".c", ".cu", ".cuh")
NOT_PRODUCTION = ("tests/", "examples/", "kernels/generated/", "build", ".git/", "go/")

# path -> why it is over the file bound for now
FILE_EXCEPTIONS = {}

# (path, function name) -> why it stays one function
EXCEPTIONS = {
    ("client/src/pipeline.hpp", "pipeline"):
        "the pipelined reserve/submit/reap loop of every batch call: one state machine over the pieces "
        "in flight, whose fail-closed and cancel rules read in one place",
    ("daemon/ops/config.cpp", "add_options"):
        "the daemon's flags as one flat table (one statement a flag); split, the table would be scattered",
    ("client/cli/stats_commands.cpp", "render_top"):
        "one screen of `sigverify top`, line by line in the order it is printed",
}

CONTROL = re.compile(r"^\s*(if|for|while|switch|else|do|namespace|struct|class|union|enum|catch|try|extern)\b")
SIGNATURE_END = re.compile(r"\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(->\s*[\w:<>, ]+)?\s*\{\s*$")


def code_of(line):
    """The line without string and character literals and // comments."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])*'", "''", line)
    return line.split("//")[0]


def function_name(lines, start):
    """The name before the signature's opening parenthesis (it may start on an earlier line)."""
    text = " ".join(code_of(l) for l in lines[max(0, start - 3):start + 1])
    head = text.split("(")
    for i in range(len(head) - 1, 0, -1):
        m = re.search(r"([A-Za-z_][\w:~]*)\s*$", head[i - 1])
        if m and m.group(1) not in ("if", "for", "while", "switch", "return", "sizeof", "decltype"):
            name = m.group(1).split("::")[-1]
            if i == 1 or not re.search(r"[=,]\s*$", head[i - 1]):
                return name
    return "?"


def long_functions(lines):
    """(name, first line, length) of each function over the bound."""
    out, depth, start, base = [], 0, None, 0
    for i, line in enumerate(lines):
        code = code_of(line)
        if start is None and re.match(r"^\s*[A-Za-z]", code) and SIGNATURE_END.search(code) and \
                not CONTROL.match(code) and "=" not in code.split("(")[0]:
            start, base = i, depth
        depth += code.count("{") - code.count("}")
        if start is not None and depth <= base and i > start:
            if i - start + 1 > MAX_FUNCTION_LINES:
                out.append((function_name(lines, start), start + 1, i - start + 1))
            start = None
    return out


def main(root):
    failures, used = [], set()
    for d, dirs, names in os.walk(root):
        rel_dir = os.path.relpath(d, root).replace(os.sep, "/") + "/"
        if rel_dir == "./":
            rel_dir = ""
        if any(rel_dir.startswith(p) for p in NOT_PRODUCTION):
            dirs[:] = []
            continue
        for name in sorted(names):
            if not name.endswith(SOURCE_EXTS):
                continue
            rel = rel_dir + name
            with open(os.path.join(d, name), encoding="utf-8", errors="replace") as f:
                lines = f.read().split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            if len(lines) > MAX_FILE_LINES and rel in FILE_EXCEPTIONS:
                used.add(rel)
            elif len(lines) > MAX_FILE_LINES:
                failures.append(f"{rel}: {len(lines)} lines (at most {MAX_FILE_LINES}: split it by concern)")
            if not rel.startswith(FUNCTION_DIRS):
                continue
            for fn, first, n in long_functions(lines):
                if (rel, fn) in EXCEPTIONS:
                    used.add((rel, fn))
                    continue
                failures.append(f"{rel}:{first}: {fn} is {n} lines (at most {MAX_FUNCTION_LINES}, "
                                "or an exception with its reason in scripts/check-sizes.py)")
    for rel in sorted(set(FILE_EXCEPTIONS) - used):
        failures.append(f"{rel} is listed as an exception but is no longer over {MAX_FILE_LINES} lines: "
                        "remove it from FILE_EXCEPTIONS")
    for key in sorted(set(EXCEPTIONS) - used):
        failures.append(f"{key[0]}: {key[1]} is listed as an exception but is no longer over "
                        f"{MAX_FUNCTION_LINES} lines: remove it from EXCEPTIONS")
    for f in failures:
        print(f)
    if failures:
        return 1
    print(f"sizes: no production file over {MAX_FILE_LINES} lines but the {len(FILE_EXCEPTIONS)} listed; "
          f"no function over {MAX_FUNCTION_LINES} lines in {', '.join(FUNCTION_DIRS)} but the {len(EXCEPTIONS)} listed")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: check-sizes.py SOURCE_DIR", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
