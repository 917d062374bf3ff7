#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Runs a program under the system call filter that the unit's
SystemCallFilter=@system-service with SystemCallErrorNumber=EPERM gives it,
without systemd as PID 1: the allowed names come from `systemd-analyze
syscall-filter` (the same table systemd compiles), every other call fails
with EPERM. Only for tests (tests/ops/test_sandbox.sh).

usage: seccomp_exec.py [--allow @GROUP ...] PROGRAM ARGS...
(default: --allow @system-service)
"""
import errno
import os
import subprocess
import sys

import seccomp


def syscall_groups():
    """{'@group': [member, ...]} as systemd-analyze lists them."""
    text = subprocess.run(["systemd-analyze", "syscall-filter", "--no-pager"], check=True,
                          capture_output=True, text=True).stdout
    groups, current = {}, None
    for line in text.splitlines():
        if line.startswith("@"):
            current = line.split()[0]
            groups[current] = []
        elif current and line.strip() and not line.strip().startswith("#"):
            groups[current].append(line.strip())
    return groups


def expand(name, groups, seen):
    if not name.startswith("@"):
        yield name
        return
    if name in seen:
        return
    seen.add(name)
    if name not in groups:
        sys.exit(f"seccomp_exec: unknown system call group {name}")
    for member in groups[name]:
        yield from expand(member, groups, seen)


def main():
    args = sys.argv[1:]
    allow = []
    while len(args) >= 2 and args[0] == "--allow":
        allow.append(args[1])
        args = args[2:]
    if not args:
        sys.exit(__doc__)
    groups = syscall_groups()
    names, seen = set(), set()
    for group in allow or ["@system-service"]:
        names.update(expand(group, groups, seen))
    f = seccomp.SyscallFilter(defaction=seccomp.ERRNO(errno.EPERM))
    allowed = 0
    for name in sorted(names):
        try:
            f.add_rule(seccomp.ALLOW, name)
            allowed += 1
        except (RuntimeError, ValueError, OSError):
            pass  # a name of another architecture or kernel (e.g. arm_fadvise64_64)
    if allowed < 100:
        sys.exit(f"seccomp_exec: only {allowed} system calls resolved; is systemd-analyze's table readable?")
    f.load()  # also sets no_new_privs, like NoNewPrivileges=yes
    os.execv(args[0], args)


if __name__ == "__main__":
    main()
