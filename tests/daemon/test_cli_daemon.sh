#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `sigverify verify` through sigverifyd and `sigverify ping`: daemon output
# must equal --local output byte for byte.
#   test_cli_daemon.sh SIGVERIFY_CLI SIGVERIFYD
set -u
SV=$1
SVD=$2
dir=$(mktemp -d /tmp/sigverify-cli-daemon-XXXXXX)
fail=0
daemon_pid=
cleanup() {
  [ -n "$daemon_pid" ] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT

expect_status() {
  local want=$1 what=$2; shift 2
  "$@" >"$dir/out" 2>"$dir/err"; local got=$?
  if [ "$got" != "$want" ]; then
    echo "FAIL: $what: exit $got, expected $want"; cat "$dir/out" "$dir/err"; fail=1
  else
    echo "ok: $what"
  fi
}

# No daemon yet: a clear error and exit code 4.
expect_status 4 "ping without daemon" "$SV" ping --runtime-dir "$dir/run"
grep -q "no sigverifyd at $dir/run/sigverifyd.sock" "$dir/err" || { echo "FAIL: unclear ping error"; cat "$dir/err"; fail=1; }

"$SVD" --foreground --runtime-dir "$dir/run" --arena-size 128K --log-file "$dir/daemon.log" &
daemon_pid=$!
for _ in $(seq 200); do grep -q "listening on" "$dir/daemon.log" 2>/dev/null && break; sleep 0.05; done

expect_status 0 "ping" "$SV" ping --runtime-dir "$dir/run" --count 5
grep -q "sigverifyd is up" "$dir/out" || { echo "FAIL: ping output"; fail=1; }

for table in ecdsa multisig schnorr threshold; do
  for fmt in opaque compact; do
    case $table in schnorr|threshold) [ $fmt = compact ] && continue;; esac
    f="$dir/$table-$fmt.rows"
    expect_status 0 "gen $table $fmt" "$SV" gen --table $table --count 2500 --sig-format $fmt --invalid-rate 0.2 --seed 9 --out "$f"
    expect_status 0 "local $table $fmt" "$SV" verify --local --table $table --sig-format $fmt --in "$f" --out "$f.local"
    expect_status 0 "daemon $table $fmt" "$SV" verify --runtime-dir "$dir/run" --table $table --sig-format $fmt --in "$f" --out "$f.daemon"
    grep -q "(daemon, epoch" "$dir/out" || { echo "FAIL: daemon summary"; fail=1; }
    cmp -s "$f.local" "$f.daemon" || { echo "FAIL: results differ for $table $fmt"; fail=1; }
    expect_status 0 "local collect $table $fmt" "$SV" verify --local --collect --table $table --sig-format $fmt --in "$f" --out "$f.lc"
    expect_status 0 "daemon collect $table $fmt" "$SV" verify --collect --runtime-dir "$dir/run" --table $table --sig-format $fmt --in "$f" --out "$f.dc"
    cmp -s "$f.lc" "$f.dc" || { echo "FAIL: collect differs for $table $fmt"; fail=1; }
    expect_status 1 "daemon strict $table $fmt" "$SV" verify --strict --runtime-dir "$dir/run" --table $table --sig-format $fmt --in "$f"
  done
done
# Fixed expectations, independent of any verifier (--local uses the same one
# as the daemon): rows really signed (--invalid-rate 0; every ECDSA row
# high-S, which must verify VALID), multisig and threshold rows carrying ECDSA
# and Schnorr records with a 6-byte tail; then this script breaks row i with
# i % 4 == 3 (flips a message hash bit) and writes non-zero tails everywhere.
# Row i is valid iff i % 4 != 3. Collect: exactly the valid rows' tails zeroed.
for table in ecdsa multisig schnorr threshold; do
  for fmt in opaque compact; do
    case $table in schnorr|threshold) [ $fmt = compact ] && continue;; esac
    case $table in
      ecdsa) gen="--table ecdsa --high-s-rate 1 --sig-format $fmt" rec=129 ks=3;;
      multisig) gen="--table ecdsa --key-size 6 --high-s-rate 1 --sig-format $fmt" rec=129 ks=6;;
      schnorr) gen="--table schnorr" rec=128 ks=3;;
      threshold) gen="--table schnorr --key-size 6" rec=128 ks=6;;
    esac
    f="$dir/known-$table-$fmt"
    expect_status 0 "gen known $table $fmt" "$SV" gen $gen --count 400 --invalid-rate 0 --seed 21 --out "$f.signed"
    python3 - "$f" $rec $ks <<'PY' || { echo "FAIL: known rows for $table $fmt"; fail=1; }
import sys
f, rec, ks = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = bytearray(open(f + ".signed", "rb").read())
st = rec + ks
n = len(rows) // st
assert n == 400 and len(rows) == n * st, len(rows)
results, collected = bytearray(), bytearray()
for i in range(n):
    r = rows[i * st:(i + 1) * st]
    if i % 4 == 3:
        r[i % 32] ^= 1 << (i % 8)          # message hash bit: the signature no longer matches
    for b in range(ks):
        r[rec + b] = 1 + (i * 31 + b * 7) % 255   # never zero
    rows[i * st:(i + 1) * st] = r
    valid = i % 4 != 3
    results.append(1 if valid else 0)
    collected += r[:rec] + (bytes(ks) if valid else r[rec:])
open(f + ".rows", "wb").write(rows)
open(f + ".want-results", "wb").write(results)
open(f + ".want-collect", "wb").write(collected)
PY
    expect_status 0 "daemon known $table $fmt" "$SV" verify --runtime-dir "$dir/run" --table $table --sig-format $fmt --in "$f.rows" --out "$f.res"
    grep -q "valid=300 " "$dir/out" || { echo "FAIL: known $table $fmt: summary $(cat "$dir/out")"; fail=1; }
    cmp "$f.want-results" "$f.res" || { echo "FAIL: known $table $fmt: verdicts differ from the known ones"; fail=1; }
    expect_status 0 "daemon known collect $table $fmt" "$SV" verify --collect --runtime-dir "$dir/run" --table $table --sig-format $fmt --in "$f.rows" --out "$f.col"
    cmp "$f.want-collect" "$f.col" || { echo "FAIL: known $table $fmt: collect differs from the rule (valid tails zeroed, invalid unchanged)"; fail=1; }
  done
done

# SIGVERIFY_RUNTIME_DIR is the default runtime dir.
SIGVERIFY_RUNTIME_DIR="$dir/run" expect_status 0 "ping via SIGVERIFY_RUNTIME_DIR" "$SV" ping

kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
[ $rc = 0 ] || { echo "FAIL: sigverifyd exit status $rc after SIGTERM"; fail=1; }
expect_status 4 "verify after daemon stopped" "$SV" verify --runtime-dir "$dir/run" --table ecdsa --in "$dir/ecdsa-opaque.rows"
exit $fail
