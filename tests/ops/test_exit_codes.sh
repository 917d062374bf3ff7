#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sigverifyd's exit statuses (daemon/ops/exit_codes.hpp, docs/operations.md
# "Exit status"): 0 for --help/--version and a clean stop, 64 for a bad
# command line, 78 for a bad --config file or options the daemon cannot
# serve, 1 for a runtime failure. Runs the built daemon.
# usage: test_exit_codes.sh SIGVERIFYD_BIN SOURCE_DIR
set -euo pipefail
BIN=$1 SRC=$2
source "$(dirname "${BASH_SOURCE[0]}")/../support/daemon_test.sh" exit

# The numbers come from the header, so the test and the daemon cannot drift apart.
code() { sed -n "s/.*inline constexpr int $1 = \([0-9]*\);.*/\1/p" "$SRC/daemon/ops/exit_codes.hpp"; }
OK=$(code clean_stop) RUNTIME=$(code runtime_failure) USAGE=$(code usage_error) CONFIG=$(code config_error)
[ "$OK/$RUNTIME/$USAGE/$CONFIG" = "0/1/64/78" ] || fail "exit_codes.hpp says $OK/$RUNTIME/$USAGE/$CONFIG, the documented statuses are 0/1/64/78"

# expect STATUS STDERR_PATTERN ARGS...: runs the daemon (foreground, private
# runtime dir) and checks its exit status and what it said.
expect() {
  local want=$1 pattern=$2 rc=0
  shift 2
  timeout 30 "$BIN" --foreground --runtime-dir "$T/run" --backend cpu --cpu-threads 1 "$@" >"$T/out" 2>&1 || rc=$?
  [ "$rc" = "$want" ] || fail "sigverifyd $*: exit $rc, expected $want; it said: $(cat "$T/out")"
  grep -qiE -- "$pattern" "$T/out" || fail "sigverifyd $*: output lacks /$pattern/: $(cat "$T/out")"
  echo "ok: exit $rc for: $*"
}

expect "$OK" 'Usage' --help
expect "$OK" '^sigverifyd [0-9]' --version

# Usage errors: the command line.
expect "$USAGE" 'no-such-flag' --no-such-flag
expect "$USAGE" 'max-clients' --max-clients banana
expect "$USAGE" 'max-clients' --max-clients 0
expect "$USAGE" 'log-format' --log-format xml
expect "$USAGE" 'power of two' --ring-entries 48
expect "$USAGE" 'arena-size' --arena-size 12Q
rc=0; "$BIN" --runtime-dir "$T/run" >"$T/out" 2>&1 || rc=$?   # no --foreground, no --log-file
[ "$rc" = "$USAGE" ] || fail "without --foreground and --log-file: exit $rc, expected $USAGE"

# Configuration errors: the --config file...
expect "$CONFIG" 'cannot read' --config "$T/missing.conf"
printf 'max-clients = banana\n' > "$T/bad-value.conf"
expect "$CONFIG" 'bad-value.conf.*max-clients' --config "$T/bad-value.conf"
printf 'ring-entries = 48\n' > "$T/not-pow2.conf"
expect "$CONFIG" 'not-pow2.conf.*power of two' --config "$T/not-pow2.conf"
printf 'max-clinets = 8\n' > "$T/typo.conf"
expect "$CONFIG" 'typo.conf.*max-clinets' --config "$T/typo.conf"
mkdir "$T/a-directory.conf"
expect "$CONFIG" 'a-directory.conf' --config "$T/a-directory.conf"
# ...but a bad flag next to a good file is still the command line's fault.
printf 'max-clients = 8\n' > "$T/good.conf"
expect "$USAGE" 'max-clients' --config "$T/good.conf" --max-clients banana
# ...and what the options ask for cannot be served here.
expect "$CONFIG" 'no such group' --group sigverify-no-such-group
rc=0
(ulimit -n 256; ulimit -Hn 256; exec timeout 30 "$BIN" --foreground --runtime-dir "$T/run" --backend cpu \
  --cpu-threads 1 --max-clients 4096) >"$T/out" 2>&1 || rc=$?
[ "$rc" = "$CONFIG" ] || fail "--max-clients 4096 with 256 descriptors: exit $rc, expected $CONFIG: $(cat "$T/out")"
grep -q 'RLIMIT_NOFILE' "$T/out" || fail "--max-clients 4096 with 256 descriptors: no reason given: $(cat "$T/out")"
echo "ok: exit $rc for --max-clients 4096 under a 256 descriptor limit"

# Runtime failure: another daemon already serves the runtime directory.
"$BIN" --foreground --runtime-dir "$T/run" --backend cpu --cpu-threads 1 --log-file "$T/first.log" &
DPID=$!
for _ in $(seq 400); do [ -S "$T/run/stats.sock" ] && break; sleep 0.05; done
[ -S "$T/run/stats.sock" ] || fail "the first sigverifyd did not come up: $(cat "$T/first.log")"
expect "$RUNTIME" 'already listening' --config "$T/good.conf"
# Clean stop: SIGTERM.
kill -TERM "$DPID"
rc=0; wait "$DPID" || rc=$?
DPID=
[ "$rc" = "$OK" ] || fail "SIGTERM: exit $rc, expected $OK"
echo "ok: exit $rc after SIGTERM"
echo PASS
