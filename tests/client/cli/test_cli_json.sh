#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `sigverify verify --json`, `sigverify ping --json` and `sigverify info --json` against a private
# sigverifyd: one JSON object on stdout whose numbers match the text summary,
# the run's result files and the exit codes, and the failure objects when the
# daemon is not there.
# usage: test_cli_json.sh SIGVERIFY_BIN SIGVERIFYD_BIN
set -euo pipefail
CLI=$1 DAEMON=$2
source "$(dirname "${BASH_SOURCE[0]}")/../../support/daemon_test.sh" cli-json
# The interpreter itself, once: a version manager's shim costs a second a call on a busy machine.
PYTHON=$(python3 -c 'import sys; print(sys.executable)')

# check_json FILE PYTHON_ASSERTIONS...: FILE holds exactly one line, a JSON object `j`.
check_json() {
  local file=$1; shift
  "$PYTHON" - "$file" "$@" <<'PY' || fail "$(basename "$file"): $(cat "$file")"
import json, sys
text = open(sys.argv[1]).read()
assert text.count("\n") == 1 and text.endswith("\n"), "not exactly one line"
j = json.loads(text)
assert isinstance(j, dict)
for check in sys.argv[2:]:
    assert eval(check, {"j": j}), check
PY
}

# No daemon: exit 4, the reason on stderr, and a failure object on stdout.
set +e
"$CLI" ping --json --runtime-dir "$T/none" >"$T/ping-none.json" 2>"$T/ping-none.err"; rc=$?
set -e
[ "$rc" = 4 ] || fail "ping --json without a daemon: exit $rc, expected 4"
grep -q "cannot use sigverifyd" "$T/ping-none.err" || fail "ping without a daemon: stderr '$(cat "$T/ping-none.err")'"
check_json "$T/ping-none.json" 'j["command"] == "ping"' 'j["status"] == "unreachable"' '"cannot use sigverifyd" in j["error"]'
set +e
"$CLI" info --json --runtime-dir "$T/none" >"$T/info-none.json" 2>/dev/null; rc=$?
set -e
[ "$rc" = 4 ] || fail "info --json without a daemon: exit $rc, expected 4"
check_json "$T/info-none.json" 'j["command"] == "info"' 'j["status"] == "unreachable"'

"$CLI" gen --table ecdsa --count 400 --invalid-rate 0.25 --seed 21 --threads 2 --out "$T/e.rows" >/dev/null
set +e
"$CLI" verify --json --table ecdsa --in "$T/e.rows" --runtime-dir "$T/none" >"$T/verify-none.json" 2>/dev/null; rc=$?
set -e
[ "$rc" = 4 ] || fail "verify --json without a daemon: exit $rc, expected 4"
check_json "$T/verify-none.json" 'j["command"] == "verify"' 'j["status"] == "unreachable"'

RUN=$T/run
"$DAEMON" --foreground --runtime-dir "$RUN" --log-file "$T/daemon.log" --backend cpu --cpu-threads 2 &
DPID=$!
wait_for_socket "$RUN/stats.sock"
export SIGVERIFY_RUNTIME_DIR=$RUN
epoch=$("$CLI" stats version | sed -n 's/.*epoch \([0-9a-f]\{16\}\).*/\1/p')
[ -n "$epoch" ] || fail "no epoch in 'stats version': $("$CLI" stats version)"

# ping: the fields of the text line, numbers as numbers.
"$CLI" ping --json --count 5 >"$T/ping.json"
check_json "$T/ping.json" 'j["command"] == "ping"' 'j["status"] == "ok"' "j['epoch'] == '$epoch'" \
  'j["pings"] == 5' 'isinstance(j["arena_bytes"], int) and j["arena_bytes"] > 0' \
  'all(isinstance(j[k], float) for k in ("round_trip_min_us", "round_trip_median_us", "round_trip_max_us"))' \
  '0 < j["round_trip_min_us"] <= j["round_trip_median_us"] <= j["round_trip_max_us"]'
text=$("$CLI" ping)
grep -q "^sigverifyd is up: epoch $epoch, arena " <<<"$text" || fail "ping text line changed: '$text'"

# info: what the daemon is (a CPU daemon: no GPU), JSON and text.
"$CLI" info --json >"$T/info.json"
check_json "$T/info.json" 'j["command"] == "info"' 'j["status"] == "ok"' "j['epoch'] == '$epoch'" \
  'j["backend"] == "cpu"' 'j["gpu_count"] == 0' 'j["gpus_enabled"] == 0' 'j["gpus"] == []' \
  'j["cpu_workers"] == 2' 'j["confirm_rule"] in ("strict", "groups")' 'j["abi"].startswith("1.")' \
  'isinstance(j["max_arena_bytes"], int) and j["max_arena_bytes"] > 0'
text=$("$CLI" info)
grep -q "^backend: cpu, 2 CPU workers" <<<"$text" || fail "info text changed: '$text'"
grep -q "^GPUs: 0 found, 0 enabled" <<<"$text" || fail "info text changed: '$text'"

# verify through the daemon: the counts agree with the result bytes and the text line.
"$CLI" verify --json --table ecdsa --in "$T/e.rows" --out "$T/e.res" >"$T/verify.json"
ones=$(od -An -v -tu1 "$T/e.res" | tr -s ' ' '\n' | grep -c '^1$')
check_json "$T/verify.json" 'j["command"] == "verify"' 'j["where"] == "daemon"' 'j["input"] == "rows"' \
  "j['epoch'] == '$epoch'" 'j["rows"] == 400' "j['valid'] == $ones" "j['invalid'] == 400 - $ones" \
  'j["status"] == "ok"' 'isinstance(j["seconds"], float) and j["seconds"] > 0' \
  'abs(j["rows_per_second"] - j["rows"] / j["seconds"]) <= 1e-6 * j["rows_per_second"]' '"threads" not in j'
[ "$ones" -gt 100 ] && [ "$ones" -lt 400 ] || fail "$ones valid rows of 400 is implausible"
text=$("$CLI" verify --table ecdsa --in "$T/e.rows")
grep -Eq "^verify \(daemon, epoch $epoch\): rows=400 valid=$ones invalid=$((400 - ones)) seconds=[0-9.]+ rows/s=[0-9]+$" <<<"$text" \
  || fail "verify text line changed: '$text'"

# --strict: exit code 1 as without --json, and the status says why.
set +e
"$CLI" verify --json --strict --table ecdsa --in "$T/e.rows" >"$T/strict.json"; rc=$?
set -e
[ "$rc" = 1 ] || fail "verify --json --strict with invalid rows: exit $rc, expected 1"
check_json "$T/strict.json" 'j["status"] == "invalid_rows"' "j['invalid'] == 400 - $ones"

# Collect mode and a column directory through the daemon.
"$CLI" verify --json --collect --table ecdsa --in "$T/e.rows" --out "$T/e.col" >"$T/collect.json"
check_json "$T/collect.json" 'j["command"] == "collect"' "j['valid'] == $ones"
"$CLI" columns --from-rows "$T/e.rows" --table ecdsa --out "$T/cols" >/dev/null
"$CLI" verify --json --columns "$T/cols" >"$T/columns.json"
check_json "$T/columns.json" 'j["input"] == "columns"' 'j["where"] == "daemon"' "j['valid'] == $ones"

# --local: threads instead of an epoch; --baseline adds its figures.
"$CLI" verify --json --local --threads 2 --baseline --table ecdsa --in "$T/e.rows" >"$T/local.json"
check_json "$T/local.json" 'j["where"] == "local"' 'j["threads"] == 2' '"epoch" not in j' "j['valid'] == $ones" \
  "j['baseline']['valid'] == $ones" 'j["baseline"]["rows"] == 400' 'j["baseline"]["threads"] == 1' \
  'j["baseline"]["speedup"] > 0'

# The daemon stops: ping --json reports it, exit 4.
kill -TERM "$DPID"; wait "$DPID" || true; DPID=
set +e
"$CLI" ping --json >"$T/ping-gone.json" 2>/dev/null; rc=$?
set -e
[ "$rc" = 4 ] || fail "ping --json after the daemon stopped: exit $rc, expected 4"
check_json "$T/ping-gone.json" 'j["status"] != "ok"' 'len(j["error"]) > 0'
echo "test_cli_json: all checks passed"
