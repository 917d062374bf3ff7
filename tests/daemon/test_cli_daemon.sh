#!/usr/bin/env bash
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
    "$SV" gen --table $table --count 2500 --sig-format $fmt --invalid-rate 0.2 --seed 9 --out "$f" >/dev/null
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
# SIGVERIFY_RUNTIME_DIR is the default runtime dir.
SIGVERIFY_RUNTIME_DIR="$dir/run" expect_status 0 "ping via SIGVERIFY_RUNTIME_DIR" "$SV" ping

kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
[ $rc = 0 ] || { echo "FAIL: sigverifyd exit status $rc after SIGTERM"; fail=1; }
expect_status 4 "verify after daemon stopped" "$SV" verify --runtime-dir "$dir/run" --table ecdsa --in "$dir/ecdsa-opaque.rows"
exit $fail
