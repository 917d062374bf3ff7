#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Smoke test of `sigverify bench`: a tiny run against a private daemon must
# finish, agree with libsecp256k1, and write well-formed JSON and SVG.
# Usage: test_bench.sh PATH_TO_SIGVERIFY PATH_TO_SIGVERIFYD
set -u
SV=$1 DAEMON=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
passed=0 failed=0
check() { if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: $1"; fi; }

"$SV" bench --start-daemon --daemon "$DAEMON" --tables ecdsa,threshold --sizes 1,16,200 --repeat 2 --budget 0.5 \
  --clients 2 --latency-iterations 50 --json "$dir/b.json" --plot "$dir/b.svg" >"$dir/out" 2>"$dir/err"
rc=$?
check "bench exits 0 (rc=$rc)" '[ $rc -eq 0 ]'
[ $rc -eq 0 ] || cat "$dir/out" "$dir/err"
check "table printed with ratios" 'grep -qE "^threshold +200 +sigverifyd \(cpu\)" "$dir/out"'
check "latency printed" 'grep -qE "^1 +sigverifyd" "$dir/out"'
check "multi-client printed" 'grep -q "multi-client: 2 processes" "$dir/out"'
check "no wrong verdicts" 'grep -q "differed from libsecp256k1: 0 batches" "$dir/out"'
check "json well formed" 'python3 - "$dir/b.json" <<PY
import json, sys
j = json.load(open(sys.argv[1]))
assert j["wrong_batches"] == 0
t = j["throughput"]
assert len(t) == 2 * 3 * 3, len(t)
assert all(r["rows_per_s"] > 0 and r["best_s"] <= r["median_s"] <= r["max_s"] for r in t)
assert {r["verifier"] for r in t} >= {"libsecp256k1 x1", "sigverifyd (cpu)"}
assert len(j["multi_client"]) == 2 and len(j["latency"]) == 4
PY'
check "svg drawn" 'grep -q "<svg" "$dir/b.svg" && grep -q "threshold / sigverifyd (cpu)" "$dir/b.svg"'

# Without a daemon: a clear error and exit code 4.
SIGVERIFY_RUNTIME_DIR=$dir/none "$SV" bench --tables ecdsa --sizes 1 >"$dir/out" 2>"$dir/err"
rc=$?
check "no daemon: exit 4 (rc=$rc)" '[ $rc -eq 4 ]'
check "no daemon: says what to do" 'grep -q -- "--start-daemon" "$dir/err"'

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
