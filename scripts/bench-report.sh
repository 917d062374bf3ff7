#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Reruns the CPU lines of BENCHMARKS.md's headline table (docs/benchmarks-history.md
# §1, §3, §4 measured them this way), on this machine, into one log:
#   1. sigverify verify --local on 200k rows (1 and all threads) next to plain
#      libsecp256k1 calls in the same run (--baseline);
#   2. sigverify bench --preset quick against a private daemon (JSON + SVG);
#   3. the Google Benchmark micro-benchmarks of the kernel math vs libsecp256k1.
# Usage: scripts/bench-report.sh [OUTDIR]   (default: bench-out/, ignored by git)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
OUTDIR=${1:-$ROOT/bench-out}
mkdir -p "$OUTDIR"
install_packages
build >/dev/null
SV=$BUILD_DIR/client/cli/sigverify
LOG=$OUTDIR/report.txt
{
  echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
  echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) threads, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for t in ecdsa schnorr; do
    "$SV" gen --table $t --count 200000 --invalid-rate 0.05 --high-s-rate 0.1 --seed 1 --out "$OUTDIR/$t.rows"
    "$SV" verify --local --threads 1 --table $t --in "$OUTDIR/$t.rows" --baseline
    "$SV" verify --local --threads "$(nproc)" --table $t --in "$OUTDIR/$t.rows"
    rm -f "$OUTDIR/$t.rows"
  done
  echo
  "$SV" bench --preset quick --start-daemon --json "$OUTDIR/bench.json" --plot "$OUTDIR/bench.svg" 2>/dev/null
  echo
  if [ -x "$BUILD_DIR/tests/bench/sigverify_microbench" ]; then
    "$BUILD_DIR/tests/bench/sigverify_microbench" --benchmark_min_time=0.5 2>&1
  fi
  echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
} 2>&1 | tee "$LOG"
echo "==> $LOG"
