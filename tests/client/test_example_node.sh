#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# examples/node_blocks against a private sigverifyd and then without any
# daemon (the local fallback): both runs must print the same block verdicts,
# the ones the example's tables are built to have, and say who verified.
# usage: test_example_node.sh NODE_BLOCKS SIGVERIFYD
set -euo pipefail
EX=$1 SVD=$2
T=$(mktemp -d /tmp/sigverify-example-XXXXXX)
DPID=
cleanup() {
  if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then kill -TERM "$DPID"; wait "$DPID" || true; fi
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

want_blocks=$'block 1: pass\nblock 2: fail\nblock 3: pass\nblock 4: fail'
want_rows='rows: ecdsa=8 (valid=6) schnorr=5 (valid=4)'

"$SVD" --foreground --runtime-dir "$T/run" --cpu-threads 2 --log-file "$T/daemon.log" &
DPID=$!
for _ in $(seq 200); do [ -S "$T/run/sigverifyd.sock" ] && break; sleep 0.05; done
[ -S "$T/run/sigverifyd.sock" ] || fail "sigverifyd did not come up"

out=$("$EX" "$T/run") || fail "node_blocks exited with $? (with a daemon)"
echo "$out"
[ "$(head -4 <<<"$out")" = "$want_blocks" ] || fail "block verdicts with the daemon"
[ "$(tail -1 <<<"$out")" = "$want_rows, verified by sigverifyd" ] || fail "summary with the daemon"

kill -TERM "$DPID"
wait "$DPID" || fail "sigverifyd exited with $?"
DPID=

out=$("$EX" "$T/none") || fail "node_blocks exited with $? (without a daemon)"
echo "$out"
[ "$(head -4 <<<"$out")" = "$want_blocks" ] || fail "block verdicts without a daemon"
[ "$(tail -1 <<<"$out")" = "$want_rows, verified by the local fallback" ] || fail "summary without a daemon"
echo PASS
