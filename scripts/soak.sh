#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Soak test: a real sigverifyd, several client processes (the sigverify CLI) for
# N minutes: all four tables, both modes, random batch sizes, random SIGKILLs of
# clients and, now and then, of the daemon (restarted at once). Every verdict
# is compared with the in-process libsecp256k1 reference.
#
#   scripts/soak.sh [minutes]       (default 10)
#
# Environment: SOAK_CLIENTS (default 4), SOAK_ROWS (rows per table file, default
# 20000), SOAK_DAEMON_KILL_EVERY (seconds between daemon kills on average,
# default 120; 0 = never), SOAK_CPU_THREADS (daemon --cpu-threads, default 0 = all),
# SOAK_BIN_DIR (a directory holding daemon/sigverifyd and client/cli/sigverify;
# default: build $BUILD_DIR with scripts/lib.sh), SOAK_KEEP=1 keeps the work dir.
# Prints rows verified, verdicts checked, wrong verdicts (must be 0), daemon RSS
# at start and end, leaked segments and descriptors; exit 1 when any is wrong.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
set +e  # client failures are counted, not fatal

MINUTES=${1:-10}
[[ "$MINUTES" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "usage: $0 [minutes]" >&2; exit 2; }
CLIENTS=${SOAK_CLIENTS:-4}
ROWS=${SOAK_ROWS:-20000}
DKILL=${SOAK_DAEMON_KILL_EVERY:-120}
if [ -n "${SOAK_BIN_DIR:-}" ]; then
  BIN=$SOAK_BIN_DIR
else
  install_packages
  build
  BIN=$BUILD_DIR
fi
DAEMON=$BIN/daemon/sigverifyd
CLI=$BIN/client/cli/sigverify
[ -x "$DAEMON" ] && [ -x "$CLI" ] || { echo "soak: $DAEMON or $CLI missing" >&2; exit 3; }

W=$(mktemp -d /tmp/sigverify-soak-XXXXXX)
RT=$W/run
mkdir -p "$RT"
cleanup() {
  for f in "$W"/worker.*.pid "$W"/killer.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done
  [ -f "$W/daemon.pid" ] && kill -9 "$(cat "$W/daemon.pid")" 2>/dev/null
  [ "${SOAK_KEEP:-0}" = 1 ] || rm -rf "$W"
}
trap cleanup EXIT

declare -A STRIDE=([ecdsa]=132 [multisig]=135 [schnorr]=131 [threshold]=134)
declare -A FORMAT=([ecdsa]=opaque [multisig]=compact [schnorr]=opaque [threshold]=opaque)
TABLES=(ecdsa multisig schnorr threshold)

echo "==> soak: $MINUTES min, $CLIENTS clients, $ROWS rows per table, daemon kill every ~${DKILL}s; work dir $W"
for t in "${TABLES[@]}"; do
  fmt=()
  [ "$t" = ecdsa ] || [ "$t" = multisig ] && fmt=(--sig-format "${FORMAT[$t]}")
  "$CLI" gen --table "$t" --count "$ROWS" --invalid-rate 0.2 --high-s-rate 0.2 --seed 7 "${fmt[@]}" --out "$W/$t.rows" >/dev/null
  "$CLI" verify --local --table "$t" "${fmt[@]}" --in "$W/$t.rows" --out "$W/$t.ref" >/dev/null
  "$CLI" verify --local --collect --table "$t" "${fmt[@]}" --in "$W/$t.rows" --out "$W/$t.refc" >/dev/null
done

rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
fd_count() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }
shm_count() { ls /dev/shm 2>/dev/null | grep -c '^sigverifyd\.' || true; }

start_daemon() {
  local n_before
  n_before=$(grep -c "listening on" "$W/daemon.log" 2>/dev/null || true)
  "$DAEMON" --foreground --runtime-dir "$RT" --cpu-threads "${SOAK_CPU_THREADS:-0}" --arena-size 4M \
    --log-level info --log-file "$W/daemon.log" &
  echo $! >"$W/daemon.pid"
  for _ in $(seq 1 500); do
    [ "$(grep -c "listening on" "$W/daemon.log" 2>/dev/null || true)" -gt "${n_before:-0}" ] && return 0
    sleep 0.02
  done
  echo "soak: sigverifyd did not start" >&2
  exit 3
}

SHM0=$(shm_count)
start_daemon
DPID0=$(cat "$W/daemon.pid")
sleep 0.5
RSS_START=$(rss_kib "$DPID0")
FD_START=$(fd_count "$DPID0")
END=$((SECONDS + $(awk "BEGIN{print int($MINUTES * 60)}")))

# One client loop: random table, mode and size; verdicts compared with the reference.
worker() {
  local id=$1
  local stats=$W/stats.$id
  RANDOM=$((id * 7919 + $$))
  while [ $SECONDS -lt "$END" ]; do
    local t=${TABLES[$((RANDOM % 4))]}
    local s=${STRIDE[$t]}
    local n
    case $((RANDOM % 4)) in
      0) n=$((1 + RANDOM % 8)) ;;
      1) n=$((1 + RANDOM % 500)) ;;
      2) n=$((1 + RANDOM % 5000)) ;;
      *) n=$((1 + (RANDOM * 32768 + RANDOM) % ROWS)) ;;
    esac
    [ "$n" -gt "$ROWS" ] && n=$ROWS
    local in=$W/w$id.in out=$W/w$id.out mode=results args=()
    head -c $((n * s)) "$W/$t.rows" >"$in"
    [ $((RANDOM % 2)) -eq 0 ] && { mode=collect; args=(--collect); }
    rm -f "$out"
    "$CLI" verify --table "$t" --sig-format "${FORMAT[$t]}" --runtime-dir "$RT" --in "$in" --out "$out" \
      "${args[@]}" >/dev/null 2>"$W/w$id.err" &
    local pid=$!
    echo "$pid" >"$W/client.$id.pid"
    { wait "$pid"; } 2>/dev/null
    local rc=$?
    rm -f "$W/client.$id.pid"
    if [ $rc -eq 0 ]; then
      local ref=$W/$t.ref bytes=$n
      [ $mode = collect ] && { ref=$W/$t.refc; bytes=$((n * s)); }
      if cmp -s -n "$bytes" "$out" "$ref" && [ "$(stat -c %s "$out")" -eq "$bytes" ]; then
        echo "ok $t $mode $n" >>"$stats"
      else
        echo "wrong $t $mode $n" >>"$stats"
        cp "$in" "$W/wrong.$id.$SECONDS.in"
      fi
    elif [ $rc -ge 128 ]; then
      echo "killed $t $mode $n" >>"$stats"
    elif [ $rc -eq 4 ]; then
      echo "unavailable $t $mode $n" >>"$stats"
      sleep 0.1
    else
      echo "error$rc $t $mode $n $(head -c 200 "$W/w$id.err" | tr '\n' ' ')" >>"$stats"
    fi
  done
}

killer() {
  RANDOM=$$
  while [ $SECONDS -lt "$END" ]; do
    sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
    sleep $((RANDOM % 2))
    local id=$((RANDOM % CLIENTS))
    [ -f "$W/client.$id.pid" ] && kill -9 "$(cat "$W/client.$id.pid" 2>/dev/null)" 2>/dev/null &&
      echo client >>"$W/kills"
    if [ "$DKILL" -gt 0 ] && [ $((RANDOM % (DKILL + 1))) -eq 0 ] && [ $((END - SECONDS)) -gt 20 ]; then
      local dp
      dp=$(cat "$W/daemon.pid")
      kill -9 "$dp" 2>/dev/null
      while kill -0 "$dp" 2>/dev/null && [ "$(awk '{print $3}' "/proc/$dp/stat" 2>/dev/null)" != Z ]; do sleep 0.01; done
      { wait "$dp"; } 2>/dev/null
      echo daemon >>"$W/kills"
      start_daemon
    fi
  done
}

for i in $(seq 0 $((CLIENTS - 1))); do
  worker "$i" &
  echo $! >"$W/worker.$i.pid"
done
# The killer owns the daemon restarts (its children), so it runs in this shell's job list too.
killer &
KPID=$!
echo $KPID >"$W/killer.pid"
for i in $(seq 0 $((CLIENTS - 1))); do wait "$(cat "$W/worker.$i.pid")"; done
wait $KPID
rm -f "$W"/worker.*.pid "$W/killer.pid"

DPID=$(cat "$W/daemon.pid")
sleep 1
ALIVE=no
kill -0 "$DPID" 2>/dev/null && ALIVE=yes
RSS_END=$(rss_kib "$DPID")
FD_END=$(fd_count "$DPID")
cat "$W"/stats.* >"$W/all" 2>/dev/null || true
count() { grep -c "^$1 " "$W/all" || true; }
ROWS_OK=$(awk '$1 == "ok" {s += $4} END {print s + 0}' "$W/all")
WRONG=$(count wrong)
ERRS=$(grep -c '^error' "$W/all" || true)
CKILLS=$(grep -c client "$W/kills" 2>/dev/null || true)
DKILLS=$(grep -c daemon "$W/kills" 2>/dev/null || true)
TERM_RC=none
if [ $ALIVE = yes ]; then
  kill -TERM "$DPID"
  if [ "$DPID" = "$DPID0" ]; then
    wait "$DPID"
    TERM_RC=$?
  else
    # A restarted daemon is the killer's child (now reparented): no exit status
    # to collect here; it must be gone within the shutdown timeout.
    for _ in $(seq 1 500); do kill -0 "$DPID" 2>/dev/null || break; sleep 0.02; done
    kill -0 "$DPID" 2>/dev/null && TERM_RC=still-running || TERM_RC=0
  fi
fi
rm -f "$W/daemon.pid"
SHM_LEAK=$(($(shm_count) - SHM0))
FD_LEAK=$((FD_END - FD_START))
[ "$DKILLS" -gt 0 ] && FD_NOTE=" (last daemon instance vs the first one's start)" || FD_NOTE=""

echo "==> soak results ($MINUTES min, $CLIENTS clients)"
echo "batches ok:            $(count ok) (results $(grep -c '^ok .* results ' "$W/all" || true), collect $(grep -c '^ok .* collect ' "$W/all" || true))"
for t in "${TABLES[@]}"; do
  echo "  $t: $(awk -v t="$t" '$1 == "ok" && $2 == t {s += $4; n++} END {printf "%d batches, %d rows", n, s}' "$W/all")"
done
echo "rows verified:         $ROWS_OK"
echo "verdicts checked:      $ROWS_OK (every row of every successful batch, against libsecp256k1 in-process)"
echo "wrong verdicts:        $WRONG"
echo "batches killed:        $(count killed) (client SIGKILLs sent: $CKILLS)"
echo "daemon SIGKILLs:       $DKILLS (batches refused while it was down: $(count unavailable))"
echo "other client errors:   $ERRS"
echo "daemon alive at end:   $ALIVE (SIGTERM exit status: $TERM_RC)"
echo "daemon RSS:            start ${RSS_START} KiB, end ${RSS_END} KiB"
echo "daemon fds:            start $FD_START, end $FD_END$FD_NOTE"
echo "leaked segments:       $SHM_LEAK (/dev/shm/sigverifyd.*)"
echo "leaked fds:            $((FD_LEAK > 0 ? FD_LEAK : 0))"
[ "$ERRS" -gt 0 ] && grep '^error' "$W/all" | head -5
if [ "$WRONG" -ne 0 ] || [ "$SHM_LEAK" -gt 0 ] || [ "$FD_LEAK" -gt 0 ] || [ $ALIVE != yes ] || [ "$TERM_RC" != 0 ] ||
  [ "$ROWS_OK" -eq 0 ] || [ "$ERRS" -gt 0 ]; then
  echo "==> soak: FAILED"
  exit 1
fi
echo "==> soak: passed"
