#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The unit's sandbox, exercised without systemd as PID 1: sigverifyd runs in
# a network namespace of its own (PrivateNetwork=yes) and under the unit's
# system call filter (SystemCallFilter=@system-service,
# SystemCallErrorNumber=EPERM, through seccomp_exec.py); a client in the host
# namespace still connects over the UNIX socket, verifies, and reads the stats
# socket. Not exercised here: the mount sandbox (ProtectSystem=, PrivateTmp=,
# ProtectProc=), DevicePolicy=, IPAddressDeny= (BPF) and the capability
# bounding set: they need systemd to set up the service.
# usage: test_sandbox.sh SIGVERIFYD_BIN SIGVERIFY_CLI SECCOMP_EXEC
set -euo pipefail
BIN=$1 CLI=$2 SECCOMP=$3
T=$(mktemp -d /tmp/sigverify-sandbox-XXXXXX)
DPID=
cleanup() {
  if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then kill -KILL "$DPID"; wait "$DPID" 2>/dev/null || true; fi
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$T/daemon.log" ] && sed 's/^/  daemon: /' "$T/daemon.log" >&2; exit 1; }

# A network namespace needs CAP_SYS_ADMIN: containers without it cannot run this.
if ! unshare --net true 2>/dev/null; then echo "unshare --net not permitted here: skipped"; exit 77; fi
/usr/bin/python3 -c 'import seccomp' || fail "python3-seccomp is missing (scripts/lib.sh installs it)"

# The filter itself: a call outside @system-service fails with EPERM (in a
# private UTS namespace, so that a broken filter changes nothing).
if unshare --uts /usr/bin/python3 "$SECCOMP" /bin/hostname sigverify-sandbox-test 2>/dev/null; then
  fail "sethostname succeeded under the @system-service filter"
fi
unshare --uts /usr/bin/python3 "$SECCOMP" /bin/true || fail "seccomp_exec.py cannot run /bin/true"

RUN=$T/run
# unshare and the helper exec the daemon: $! is the daemon's pid.
unshare --net /usr/bin/python3 "$SECCOMP" "$BIN" --foreground --runtime-dir "$RUN" --log-file "$T/daemon.log" \
  --backend cpu --cpu-threads 2 &
DPID=$!
for _ in $(seq 600); do [ -S "$RUN/stats.sock" ] && break; kill -0 "$DPID" 2>/dev/null || break; sleep 0.05; done
[ -S "$RUN/stats.sock" ] || fail "sigverifyd did not come up in its sandbox"

# It really is sandboxed: another network namespace, a seccomp filter (mode 2), no_new_privs.
[ "$(readlink /proc/$DPID/ns/net)" != "$(readlink /proc/self/ns/net)" ] || fail "the daemon shares our network namespace"
grep -q '^Seccomp:[[:space:]]*2' /proc/$DPID/status || fail "no seccomp filter on the daemon: $(grep Seccomp /proc/$DPID/status)"
grep -q '^NoNewPrivs:[[:space:]]*1' /proc/$DPID/status || fail "no_new_privs not set"
grep -q 'sigverifyd' /proc/$DPID/cmdline || fail "pid $DPID is not the daemon"

# A client of the host namespace verifies through it.
export SIGVERIFY_RUNTIME_DIR=$RUN
"$CLI" gen --table ecdsa --count 200 --invalid-rate 0.25 --seed 5 --threads 1 --out "$T/rows" >/dev/null
line=$("$CLI" verify --table ecdsa --in "$T/rows") || fail "verify through the sandboxed daemon: $line"
V=$(sed -n 's/.* valid=\([0-9]*\) .*/\1/p' <<<"$line")
I=$(sed -n 's/.* invalid=\([0-9]*\) .*/\1/p' <<<"$line")
[ -n "$V" ] && [ -n "$I" ] && [ $((V + I)) = 200 ] && [ "$I" -gt 0 ] || fail "verify: $line"
# The daemon did the work (not the client's local fallback).
prom=$("$CLI" stats) || fail "stats through the sandboxed daemon"
grep -qx "sigverifyd_rows_verified_total{table=\"ecdsa\",verdict=\"valid\"} $V" <<<"$prom" ||
  fail "the daemon did not count the $V valid rows: $(grep 'rows_verified_total{table="ecdsa"' <<<"$prom")"
grep -qx "sigverifyd_rows_verified_total{table=\"ecdsa\",verdict=\"invalid\"} $I" <<<"$prom" ||
  fail "the daemon did not count the $I invalid rows"
echo "verified $V valid and $I invalid rows through the sandboxed daemon"

# SIGHUP (re-reads the configuration) and SIGTERM work under the filter, and
# nothing the daemon did was refused by it.
kill -HUP "$DPID"
for _ in $(seq 100); do grep -q 'SIGHUP: reloaded' "$T/daemon.log" && break; sleep 0.05; done
grep -q 'SIGHUP: reloaded' "$T/daemon.log" || fail "no reload line after SIGHUP"
kill -TERM "$DPID"
rc=0; wait "$DPID" || rc=$?
DPID=
[ "$rc" = 0 ] || fail "exit $rc after SIGTERM in the sandbox"
! grep -qi 'operation not permitted' "$T/daemon.log" || fail "the filter refused a call the daemon needs"
echo PASS
