#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the libFuzzer targets (tests/fuzz) with clang, ASan + UBSan, and runs
# each for a bounded time, starting from the committed seeds.
#
#   scripts/fuzz.sh [seconds]      total fuzzing time (default 60), split between
#                                  fuzz_session (1/2), fuzz_verify_diff (1/3) and
#                                  fuzz_segment_checks (the rest)
#   scripts/fuzz.sh --replay       no fuzzing: runs every committed input of
#                                  tests/fuzz/corpus once through its harness (the
#                                  regression inputs of tests/fuzz/gen_regressions.py
#                                  included); ctest's fuzz_replay
#   scripts/fuzz.sh --volume RUNS [JOBS]
#                                  the long differential run: fuzz_verify_diff
#                                  built without ASan (-O2, coverage only, its
#                                  FUZZ_CHECKs still abort), RUNS executions in
#                                  all over JOBS processes (default nproc) sharing
#                                  one corpus; prints the executions, rate and
#                                  coverage (docs/security.md records the runs)
#
# Environment: SIGVERIFY_FUZZ_DIR (build directory, default $ROOT/build-fuzz,
# shared by both modes and by .ci/run so that the targets are built once),
# FUZZ_JOBS (build parallelism, default nproc), FUZZ_MISSING_RC (the exit status
# when clang/libFuzzer is missing, default 3; ctest passes 77, its skip code).
# The working corpus lives in the build directory (seeds + what this run found);
# tests/fuzz/corpus is never modified. Crash inputs are written to
# $SIGVERIFY_FUZZ_DIR/artifacts/.
# Exit status: 0 clean, 1 a finding (crash, failed invariant, leak, timeout), 2 usage,
# 3 (or FUZZ_MISSING_RC) no clang/libFuzzer.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  echo "usage: $0 [seconds >= 3] | --replay | --volume RUNS [JOBS]" >&2
  exit 2
}
REPLAY=0 VOLUME=0 SECS=60
if [ "${1:-}" = --replay ]; then
  REPLAY=1
  shift
  [ $# -eq 0 ] || usage
elif [ "${1:-}" = --volume ]; then
  VOLUME=1
  RUNS=${2:-}
  VOLUME_JOBS=${3:-$(nproc)}
  [[ "$RUNS" =~ ^[0-9]+$ ]] && [[ "$VOLUME_JOBS" =~ ^[1-9][0-9]*$ ]] && [ $# -le 3 ] || usage
else
  SECS=${1:-60}
  [[ "$SECS" =~ ^[0-9]+$ ]] && [ "$SECS" -ge 3 ] && [ $# -le 1 ] || usage
fi
FUZZ_DIR=${SIGVERIFY_FUZZ_DIR:-$ROOT/build-fuzz}
[ $VOLUME -eq 0 ] || FUZZ_DIR=${SIGVERIFY_FUZZ_VOLUME_DIR:-$ROOT/build-fuzz-volume}
JOBS=${FUZZ_JOBS:-$(nproc)}
MISSING_RC=${FUZZ_MISSING_RC:-3}

CC=$(command -v clang-14 || command -v clang || true)
CXX=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$CC" ] || [ -z "$CXX" ]; then
  echo "fuzz.sh: clang not found" >&2
  exit "$MISSING_RC"
fi
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' |
  "$CXX" -x c++ -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
  echo "fuzz.sh: $CXX cannot link -fsanitize=fuzzer (libFuzzer runtime missing)" >&2
  exit "$MISSING_RC"
fi

install_packages
FLAGS="-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1 -g"
# the volume run checks verdicts, not memory: ASan's ~10x would cost 10x the rows
[ $VOLUME -eq 0 ] || FLAGS="-fsanitize=fuzzer-no-link -O2 -g"
# ccache, as the test build (lib.sh): the harnesses compile the whole daemon
# with ASan, and ctest's fuzz_replay (RUN_SERIAL) waits for that build on a
# fresh clone; a later clone at the same path reuses the objects.
launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
echo "==> configuring $FUZZ_DIR ($CXX)"
cmake -S "$ROOT/tests/fuzz" -B "$FUZZ_DIR" -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_COMPILER="$CC" -DCMAKE_CXX_COMPILER="$CXX" "${launcher[@]}" \
  -DCMAKE_C_FLAGS="$FLAGS" -DCMAKE_CXX_FLAGS="$FLAGS" >/dev/null
echo "==> building fuzz targets"
if [ $VOLUME -eq 1 ]; then
  cmake --build "$FUZZ_DIR" -j "$JOBS" --target fuzz_verify_diff
else
  cmake --build "$FUZZ_DIR" -j "$JOBS" --target fuzz_session fuzz_segment_checks fuzz_verify_diff
fi

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:handle_sigbus=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
mkdir -p "$FUZZ_DIR/artifacts"
rc=0
# replay TARGET: each committed input once (libFuzzer runs the files given as
# arguments and stops at the first failing one, which the log names).
replay() {
  local target=$1 seeds=$ROOT/tests/fuzz/corpus/${1#fuzz_}
  local files=()
  mapfile -t files < <(find "$seeds" -type f | sort)
  echo "==> $target: replaying ${#files[@]} committed inputs"
  if [ ${#files[@]} -eq 0 ]; then
    echo "==> $target: no inputs in $seeds" >&2
    rc=1
    return
  fi
  if ! "$FUZZ_DIR/$target" -timeout=30 -rss_limit_mb=4096 -handle_bus=0 "${files[@]}" \
    >"$FUZZ_DIR/$target.replay.log" 2>&1; then
    echo "==> $target: FAILED on $(grep '^Running: ' "$FUZZ_DIR/$target.replay.log" | tail -1 | cut -d' ' -f2-)" >&2
    tail -n 40 "$FUZZ_DIR/$target.replay.log" >&2
    grep -m1 -E '^check failed|ERROR: (AddressSanitizer|libFuzzer)|runtime error' "$FUZZ_DIR/$target.replay.log" |
      sed "s/^/==> $target: /" >&2
    rc=1
  fi
}
if [ $REPLAY -eq 1 ]; then
  # the three replays side by side (ctest runs this alone: the cores are its);
  # each one's failure report comes from its own process, its status from wait
  pids=()
  for target in fuzz_session fuzz_segment_checks fuzz_verify_diff; do
    (rc=0; replay "$target"; exit $rc) &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  exit $rc
fi
if [ $VOLUME -eq 1 ]; then
  corpus=$FUZZ_DIR/corpus/fuzz_verify_diff
  mkdir -p "$corpus" "$FUZZ_DIR/volume"
  cp -n "$ROOT"/tests/fuzz/corpus/verify_diff/* "$corpus"/ 2>/dev/null || true
  rm -f "$FUZZ_DIR"/volume/fuzz-*.log
  per_job=$(( (RUNS + VOLUME_JOBS - 1) / VOLUME_JOBS ))
  echo "==> fuzz_verify_diff (no ASan): $VOLUME_JOBS processes x $per_job executions (corpus: $(find "$corpus" -type f | wc -l) inputs)"
  t0=$SECONDS
  # -jobs: independent processes on one corpus (each reloads what the others add);
  # their logs are volume/fuzz-K.log
  (cd "$FUZZ_DIR/volume" && "$FUZZ_DIR/fuzz_verify_diff" -jobs="$VOLUME_JOBS" -workers="$VOLUME_JOBS" \
    -runs="$per_job" -timeout=30 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$FUZZ_DIR/artifacts/fuzz_verify_diff-" "$corpus" >/dev/null 2>&1) || rc=1
  secs=$(( SECONDS - t0 > 0 ? SECONDS - t0 : 1 ))
  execs=$(cat "$FUZZ_DIR"/volume/fuzz-*.log | sed -n 's/^stat::number_of_executed_units: *//p' | awk '{s += $1} END {print s + 0}')
  cov=$(cat "$FUZZ_DIR"/volume/fuzz-*.log | grep -o 'cov: [0-9]*' | cut -d' ' -f2 | sort -n | tail -1)
  if grep -l -E '^check failed|deadly signal|ERROR: libFuzzer' "$FUZZ_DIR"/volume/fuzz-*.log >/dev/null; then
    echo "==> fuzz_verify_diff: FINDING (logs: $FUZZ_DIR/volume/, inputs: $FUZZ_DIR/artifacts/)" >&2
    grep -h -m3 -E '^check failed|row [0-9]+ of|deadly signal' "$FUZZ_DIR"/volume/fuzz-*.log >&2
    rc=1
  fi
  echo "    fuzz_verify_diff: $execs executions in ${secs}s ($(( execs / secs ))/s over $VOLUME_JOBS processes), coverage ${cov:-?} edges, corpus $(find "$corpus" -type f | wc -l) inputs"
  exit $rc
fi
# run TARGET SECONDS
run() {
  local target=$1 secs=$2
  local corpus=$FUZZ_DIR/corpus/$target seeds=$ROOT/tests/fuzz/corpus/${target#fuzz_}
  mkdir -p "$corpus"
  cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true
  local before
  before=$(find "$corpus" -type f | wc -l)
  echo "==> $target for ${secs}s (corpus: $before inputs)"
  # -handle_bus=0: the daemon's own SIGBUS guard (daemon/memory/mapping_guard.cpp) stays installed.
  # -timeout: an input running longer than this is a hang (the harness bounds every wait by 5 s).
  if ! "$FUZZ_DIR/$target" -max_total_time="$secs" -timeout=30 -rss_limit_mb=4096 -handle_bus=0 \
    -print_final_stats=1 -artifact_prefix="$FUZZ_DIR/artifacts/$target-" "$corpus" >"$FUZZ_DIR/$target.log" 2>&1; then
    echo "==> $target: FINDING (log: $FUZZ_DIR/$target.log)" >&2
    tail -n 60 "$FUZZ_DIR/$target.log" >&2
    rc=1
  fi
  local after execs cov ft
  after=$(find "$corpus" -type f | wc -l)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$FUZZ_DIR/$target.log")
  cov=$(grep -o 'cov: [0-9]*' "$FUZZ_DIR/$target.log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$FUZZ_DIR/$target.log" | tail -1 | cut -d' ' -f2)
  echo "    $target: ${execs:-?} execs in ${secs}s ($(( ${execs:-0} / secs ))/s), coverage ${cov:-?} edges, ${ft:-?} features, corpus $before -> $after inputs"
}
run fuzz_session $((SECS / 2))
run fuzz_verify_diff $((SECS / 3))
run fuzz_segment_checks $((SECS - SECS / 2 - SECS / 3))
exit $rc
