#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `sigverify stats` and `sigverify top` against a private sigverifyd: exact
# numbers after a known verify, every subcommand form, exit codes, and top's
# frames in non-terminal mode (--once, --iterations).
# usage: test_stats_cli.sh SIGVERIFY_BIN SIGVERIFYD_BIN
set -euo pipefail
CLI=$1 DAEMON=$2
source "$(dirname "${BASH_SOURCE[0]}")/../support/daemon_test.sh" stats-cli

# No daemon: exit code 4 and a reason.
set +e
out=$("$CLI" stats --runtime-dir "$T/none" 2>&1); rc=$?
set -e
[ "$rc" = 4 ] || fail "stats without a daemon: exit $rc, expected 4"
grep -q "is sigverifyd running" <<<"$out" || fail "stats without a daemon: '$out'"

RUN=$T/run
"$DAEMON" --foreground --runtime-dir "$RUN" --log-file "$T/daemon.log" --backend cpu --cpu-threads 2 &
DPID=$!
wait_for_socket "$RUN/stats.sock"
export SIGVERIFY_RUNTIME_DIR=$RUN

"$CLI" gen --table schnorr --count 300 --invalid-rate 0.3 --seed 9 --threads 2 --out "$T/s.rows" >/dev/null
line=$("$CLI" verify --table schnorr --in "$T/s.rows")
V=$(sed -n 's/.* valid=\([0-9]*\) .*/\1/p' <<<"$line")
I=$(sed -n 's/.* invalid=\([0-9]*\) .*/\1/p' <<<"$line")
[ -n "$V" ] && [ "$I" -gt 0 ] || fail "verify: $line"

prom=$("$CLI" stats)
grep -qx "sigverifyd_rows_verified_total{table=\"schnorr\",verdict=\"valid\"} $V" <<<"$prom" || fail "stats: schnorr valid != $V"
grep -qx "sigverifyd_rows_verified_total{table=\"schnorr\",verdict=\"invalid\"} $I" <<<"$prom" || fail "stats: schnorr invalid != $I"
grep -qx "sigverifyd_batches_total{table=\"schnorr\"} 1" <<<"$prom" || fail "stats: schnorr batches != 1"
"$CLI" stats --json > "$T/stats.json"
python3 - "$V" "$I" "$T/stats.json" <<'PY' || fail "stats --json"
import json, sys
j = json.load(open(sys.argv[3]))
assert j["tables"]["schnorr"]["valid"] == int(sys.argv[1]), j["tables"]["schnorr"]
assert j["tables"]["schnorr"]["invalid"] == int(sys.argv[2])
assert j["batch_latency_seconds"]["count"] == 1
PY
# Output is read into a variable first: `cmd | grep -q` under pipefail fails
# whenever grep exits early and the writer gets SIGPIPE (a flake).
out=$("$CLI" stats version) || fail "stats version: exit $?"
grep -q '^sigverifyd ' <<<"$out" || fail "stats version: '$out'"
out=$("$CLI" stats help) || fail "stats help: exit $?"
grep -q 'stats json' <<<"$out" || fail "stats help: '$out'"
out=$("$CLI" stats backends) || fail "stats backends: exit $?"
grep -q 'self_test="passed' <<<"$out" || fail "stats backends: '$out'"
out=$("$CLI" stats clients) || fail "stats clients: exit $?"
grep -q 'no clients connected' <<<"$out" || fail "stats clients: '$out'"
set +e
"$CLI" stats bogus >/dev/null 2>&1; rc=$?
"$CLI" stats clients --json >/dev/null 2>&1; rc2=$?
set -e
[ "$rc" = 2 ] || fail "stats bogus: exit $rc, expected 2 (usage)"
[ "$rc2" = 2 ] || fail "stats clients --json: exit $rc2, expected 2"

# top: one frame, then two frames, as plain text (stdout is not a terminal).
frame=$(timeout 10 "$CLI" top --once --interval 0.2)
grep -q '^sigverifyd 0\.' <<<"$frame" || fail "top: header"
grep -Eq "^schnorr +0 +0 +0 +0 +$((V + I)) +$I\$" <<<"$frame" || fail "top: schnorr line: $(grep ^schnorr <<<"$frame")"
grep -q 'since start: p50 ' <<<"$frame" || fail "top: latency line"
grep -q '^cpu ' <<<"$frame" || fail "top: backend line"
[ "$(grep -c '^TABLE' <<<"$frame")" = 1 ] || fail "top --once printed more than one frame"
frames=$(timeout 10 "$CLI" top --iterations 2 --interval 0.2 | grep -c '^TABLE')
[ "$frames" = 2 ] || fail "top --iterations 2 printed $frames frames"
if grep -q $'\033' <<<"$frame"; then fail "top wrote terminal escapes to a pipe"; fi
# SIGINT ends top cleanly.
"$CLI" top --interval 0.2 > "$T/top.out" &
TPID=$!
sleep 1
kill -INT "$TPID"
wait "$TPID" || fail "top exited with $? on SIGINT"
grep -q '^TABLE' "$T/top.out" || fail "top printed nothing before SIGINT"
# The daemon going away ends top with exit code 4.
"$CLI" top --interval 0.2 > "$T/top2.out" 2>&1 &
TPID=$!
sleep 0.5
kill -TERM "$DPID"; wait "$DPID" || fail "sigverifyd exited with $?"
DPID=
set +e
wait "$TPID"; rc=$?
set -e
[ "$rc" = 4 ] || fail "top after the daemon stopped: exit $rc, expected 4"
echo PASS
