#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# GPU check for sigverifyd: the CUDA kernels against libsecp256k1, the daemon
# end to end on the GPU, and the benchmarks, in ONE run on the GPU machine.
# See docs/kernels.md ("Running on a GPU").
#
#   scripts/gpu-check.sh prepare   (here, on the machine WITHOUT a GPU; minutes)
#       Builds everything for sm_90 with this machine's nvcc (CMake, Release,
#       SIGVERIFY_CUDA=ON): sigverifyd, sigverify, gpu_check and the kernel
#       variants' gpu_check, and copies them with the shared libraries they
#       need (spdlog, fmt, libsecp256k1, libsystemd, ...) into build-gpu-carry/
#       (ignored by git). Also stages libsecp256k1 for a source build there.
#       Carry it: run(command="OUT=$OUT scripts/gpu-check.sh",
#                     carry=["build-gpu-carry"], timeout_s=540)
#
#   scripts/gpu-check.sh stage     Only the libsecp256k1 staging (for a
#       source build of gpu_check on the GPU machine; carry build-gpu-carry).
#
#   scripts/gpu-check.sh           (on the GPU machine)
#       Prebuilt binaries when carried and loadable there; otherwise builds
#       gpu_check from source with nvcc/g++ (the daemon phase then needs the
#       carried binaries and is skipped without them). Phases, each bounded:
#         1. gpu_check --rows ROWS: self-test, GPU vs libsecp256k1 on every
#            row of all four tables (results and collect, both encodings),
#            end-to-end and kernel-only rows/s next to libsecp256k1 on all cores;
#         2. sigverifyd --backend gpu: start-up self-test, `sigverify verify`
#            through it byte-identical to --local (results and collect, all
#            tables, as rows and as column tables), `sigverify bench` at 4096/65536/1M rows (5% invalid:
#            every invalid verdict is re-verified on the CPU) and at 1M rows
#            with no invalid rows; ecdsa and multisig at BENCH_BIG rows under the
#            groups confirmation rule and with --strict-confirm (CONFIRM_CHECK=
#            to skip), rows confirmed per rule from `sigverify stats backends`;
#            `sigverify stats` after it; the batch-size curve (CURVE_SIZES, default
#            1..65536; CURVE_SIZES= to skip) with the batch split, GPU only and
#            CPU only;
#            then the last figure again with DAEMON_ALT's flags (default
#            --gpu-chunk-rows 524288 --gpu-chunks-in-flight 2; empty: skip);
#         3. kernel variants at EXTRA_ROWS while time is left (DEADLINE):
#            every gpu_check_<variant> carried (see VCOMMITS and VDEFS below;
#            prepare builds GPU_VARIANTS, default "v2d prebatch p12shared
#            allshared w12": v2d is the kernel of V2D_COMMIT (e237445, before
#            kernels/ had one generation), prebatch that of PREBATCH_COMMIT
#            (a85a294: before the batch inversion of s, the two-group P table
#            build and 16 warps on sm_90); of this one (whose default on sm_90
#            is the P table in global memory, 124 registers, 16 warps; w12 the
#            same at the 12-warp bound, 168 registers allowed), p12shared keeps
#            the P table and streams in shared memory on sm_90 (592 B a thread:
#            12 warps), allshared all of the scratch in shared memory (688 B a
#            thread, registers uncapped: 8 warps, the placement before issue
#            30's occupancy work);
#            v2 that of V2_COMMIT (66d7ca7, before the divsteps)), then the default
#            build with 64, 256 and 32 threads per block; or the runs RUNS
#            names ("name:binary args;...", e.g. "t96:gpu_check --tpb 96");
#         0. imad_rate (tests/kernels/imad_rate.cu): IMAD.WIDE.U32 against IMAD
#            warp-instructions per SM per clock (issue 30: half rate or full?);
#         4. Nsight Compute (ncu) on one kernel launch: occupancy, issue
#            efficiency, stall reasons, local-memory traffic, pipe utilisation
#            (ComputeWorkloadAnalysis) (NCU= to skip).
#       Env: OUT (default ./gpu-check-out), ROWS (1000000), EXTRA_ROWS
#       (300000), DEADLINE (seconds after which nothing new starts, 400), RUNS,
#       DAEMON_ROWS (200000), BENCH_SIZES (4096,65536,1048576; empty: skip),
#       BENCH_BIG (1048576), LAT_ITERS (2000), SKIP_DAEMON_VERIFY, DAEMON_ALT,
#       DAEMON_BACKEND (cpu: a dry run of phase 2 here, without a GPU).
#       $OUT gets at most 8 files: summary.txt (read this first),
#       gpu_check.txt, bench.txt, bench_valid.txt, daemon.txt, logs.tar.gz.
#
# The first run (all phases, 4 variants) took 420 s of a 15-minute lease plus
# ~30 s to start; a shorter second run: ROWS=600000 EXTRA_ROWS=200000
# DEADLINE=290 DAEMON_ROWS=100000 BENCH_SIZES=65536 LAT_ITERS=300 DAEMON_ALT=
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CARRY="$ROOT/build-gpu-carry"
DEPS="$CARRY/secp256k1"
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
read -r -a VARIANT_NAMES <<<"${GPU_VARIANTS-v2d prebatch p12shared allshared w12}"
[[ -z "${1:-}" && -d "$CARRY/bin" ]] && read -r -a VARIANT_NAMES <<<"$(cd "$CARRY/bin" && ls gpu_check_* 2>/dev/null | sed 's/^gpu_check_//' | tr '\n' ' ')"
# Earlier kernels, each built from `git archive` of its commit, to measure
# side by side with this one in the same run:
declare -A VCOMMITS=(
    [v2]="${V2_COMMIT:-66d7ca7}"    # kernel v2 before issue 30 (Fermat inversions)
    [v2d]="${V2D_COMMIT:-e237445}"  # kernel v2 with the divsteps inversions (before kernels/ had one generation)
    [prebatch]="${PREBATCH_COMMIT:-a85a294}"  # one s^-1 a row, 28 rescalings, 12 warps on sm_90
)
# Variants of this kernel (compile switches of kernels/gpu_verifier.cu):
declare -A VDEFS=(
    [p12shared]="-DSV_SM90_P_TABLE_SHARED"         # sm_90: P table + streams in shared memory (592 B a thread), 12 warps
    [allshared]="-DSV_SCRATCH_ALL_SHARED -DSV_UNCAPPED_REGS"  # all 688 B in shared memory, registers uncapped: 8 warps on sm_90
    [r168]="-DSV_MAX_REGS=168"                     # a 168-register cap instead of the launch bound
    [w12]="-DSV_RESIDENT_THREADS=384"              # sm_90 at the 12-warp bound (168 registers allowed; it uses ~138)
    [w16]="-DSV_RESIDENT_THREADS=512"              # every architecture at 16 warps (Blackwell spills)
    [g8]="-DSV_G_WINDOW_BITS=8"                    # 8-bit G windows: 32 G additions, two 8 KiB tables
    [g16]="-DSV_G_WINDOW_BITS=16"                  # 16-bit G windows: 16 G additions, two 2 MiB tables (L2)
    [gnopf]="-DSV_G_PREFETCH=0"                    # 12-bit G windows without the L1 prefetch a window ahead
)

stage() {
    local inc="" lib=""
    for d in /usr/include /usr/local/include; do [[ -f "$d/secp256k1.h" ]] && inc="$d" && break; done
    for d in /usr/lib/x86_64-linux-gnu /usr/local/lib /usr/lib; do
        [[ -f "$d/libsecp256k1.a" ]] && lib="$d/libsecp256k1.a" && break
    done
    if [[ -z "$inc" || -z "$lib" ]]; then
        echo "stage: libsecp256k1 headers or static library not found here" >&2
        return 1
    fi
    mkdir -p "$DEPS/include" "$DEPS/lib"
    cp "$inc"/secp256k1*.h "$DEPS/include/"
    cp "$lib" "$DEPS/lib/"
    echo "staged libsecp256k1 from $inc and $lib into ${DEPS#$ROOT/}"
}

prepare() {
    set -e
    stage
    local cfg=(-DCMAKE_BUILD_TYPE=Release -DSIGVERIFY_CUDA=ON -DSIGVERIFY_PTXAS_VERBOSE=ON)
    rm -rf "$CARRY/bin"
    mkdir -p "$CARRY/bin" "$CARRY/lib"
    echo "prepare: building build-gpu (sigverifyd, sigverify, gpu_check) with $JOBS jobs"
    cmake -S "$ROOT" -B "$ROOT/build-gpu" "${cfg[@]}" >/dev/null
    cmake --build "$ROOT/build-gpu" -j"$JOBS" --target sigverifyd sigverify_cli gpu_check 2>&1 | tee "$CARRY/build.log" |
        grep -E "error|warning|Built target" || true
    cp "$ROOT/build-gpu/daemon/sigverifyd" "$ROOT/build-gpu/client/cli/sigverify" \
        "$ROOT/build-gpu/tests/kernels/gpu_check" "$CARRY/bin/"
    # the IMAD.WIDE vs IMAD issue-rate microbenchmark (phase 0; CUDA runtime only)
    "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)" -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 \
        -o "$CARRY/bin/imad_rate" "$ROOT/tests/kernels/imad_rate.cu"
    for v in "${VARIANT_NAMES[@]}"; do
        local vsrc=$ROOT
        if [[ -n "${VCOMMITS[$v]:-}" ]]; then
            # an earlier kernel, side by side with today's in the same run
            vsrc=$ROOT/build-gpu-$v-src
            rm -rf "$vsrc" && mkdir -p "$vsrc"
            git -C "$ROOT" archive "${VCOMMITS[$v]}" | tar -x -C "$vsrc"
        elif [[ -z "${VDEFS[$v]+x}" ]]; then
            echo "prepare: unknown variant $v (VCOMMITS: ${!VCOMMITS[*]}; VDEFS: ${!VDEFS[*]})"
            continue
        fi
        echo "prepare: variant $v (${VDEFS[$v]:-source of ${VCOMMITS[$v]:-}}) in build-gpu-$v"
        cmake -S "$vsrc" -B "$ROOT/build-gpu-$v" "${cfg[@]}" -DCMAKE_CUDA_FLAGS="${VDEFS[$v]:-}" >/dev/null
        cmake --build "$ROOT/build-gpu-$v" -j"$JOBS" --target gpu_check >"$CARRY/build-$v.log" 2>&1 ||
            { echo "variant $v failed to build (build-$v.log)"; continue; }
        cp "$ROOT/build-gpu-$v/tests/kernels/gpu_check" "$CARRY/bin/gpu_check_$v"
    done
    # Shared libraries beyond glibc and the C++ runtime (the GPU machine's
    # image may lack them; its libstdc++ is the same or newer than ours).
    rm -f "$CARRY"/lib/*
    ldd "$CARRY"/bin/* | awk '/=> \// {print $3}' | sort -u |
        grep -vE '/(libc|libm|libpthread|libdl|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
        while read -r l; do cp -L "$l" "$CARRY/lib/"; done
    git -C "$ROOT" rev-parse --short HEAD >"$CARRY/commit.txt"
    git -C "$ROOT" status --short >>"$CARRY/commit.txt"
    set +e
    echo "prepare: $(du -sh "$CARRY" | cut -f1) in ${CARRY#$ROOT/}: $(ls "$CARRY/bin" | tr '\n' ' ')"
    echo "next: run(command=\"OUT=\$OUT scripts/gpu-check.sh\", carry=[\"build-gpu-carry\"], timeout_s=540)"
}

case "${1:-}" in
    stage) stage; exit $? ;;
    prepare) prepare; exit $? ;;
    "") ;;
    *) echo "usage: scripts/gpu-check.sh [prepare|stage]" >&2; exit 2 ;;
esac

# ============================ on the GPU machine ============================
OUT=${OUT:-$ROOT/gpu-check-out}
ROWS=${ROWS:-1000000}
EXTRA_ROWS=${EXTRA_ROWS:-300000}
DEADLINE=${DEADLINE:-400}
DAEMON_BACKEND=${DAEMON_BACKEND:-gpu}  # cpu: a dry run of phase 2 on a machine without a GPU
DAEMON_ROWS=${DAEMON_ROWS:-200000}
BENCH_SIZES=${BENCH_SIZES-4096,65536,1048576}  # empty: skip this bench
BENCH_BIG=${BENCH_BIG:-1048576}
ARCH=${ARCH:-sm_90}
WORK=$(mktemp -d /tmp/sigverify-gpu-check.XXXXXX)
LOGS="$WORK/logs"
mkdir -p "$OUT" "$LOGS"
: >"$OUT/summary.txt"
say() { echo "[gpu-check ${SECONDS}s] $*" | tee -a "$OUT/summary.txt"; }
table_lines() { grep -E "^(table|ecdsa|multisig|schnorr|threshold) " "$1"; }
finish() {
    [[ -n "${DAEMON_PID:-}" ]] && kill "$DAEMON_PID" 2>/dev/null
    cp "$CARRY/commit.txt" "$LOGS/" 2>/dev/null
    tar -C "$WORK" -czf "$OUT/logs.tar.gz" logs 2>/dev/null
    say "done after ${SECONDS}s"
}
trap finish EXIT

{
    date -u
    uname -a
    grep -m1 "model name" /proc/cpuinfo
    echo "cores: $JOBS"
    nvidia-smi 2>&1 || echo "nvidia-smi: not available"
    (command -v nvcc || echo /usr/local/cuda/bin/nvcc) | xargs -I{} sh -c '{} --version 2>&1 | tail -2'
    ldd --version 2>&1 | head -1
} >"$LOGS/env.txt" 2>&1
# Registers, stack frame and spills of each kernel build (cuobjdump is there, not here).
for b in "$CARRY"/bin/gpu_check*; do
    echo "--- $(basename "$b")"
    "$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)" -res-usage "$b" 2>&1 | grep -A1 "verify_kernel" | head -4
done >"$LOGS/resources.txt" 2>&1
say "repo ${ROOT} ($(cat "$CARRY/commit.txt" 2>/dev/null | head -1 || echo '?')); $(grep -m1 -oE 'NVIDIA [A-Z0-9 ]+' "$LOGS/env.txt" || echo 'no nvidia-smi')"

# --- binaries: carried, or gpu_check from source
BIN="$CARRY/bin"
export LD_LIBRARY_PATH="$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
PREBUILT=0
if [[ -x "$BIN/gpu_check" ]] && ! ldd "$BIN/gpu_check" "$BIN/sigverifyd" "$BIN/sigverify" 2>&1 | grep -q "not found" &&
    "$BIN/sigverify" --version >/dev/null 2>&1; then
    PREBUILT=1
    say "using the carried binaries (build-gpu-carry/bin)"
else
    [[ -x "$BIN/gpu_check" ]] && ldd "$BIN/gpu_check" "$BIN/sigverifyd" "$BIN/sigverify" >"$LOGS/ldd.txt" 2>&1
    say "carried binaries missing or not loadable here: building gpu_check from source (daemon phase skipped)"
    NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    CUDA_HOME=$(cd "$(dirname "$NVCC")/.." && pwd)
    REF_FLAGS=() REF_SRCS=() REF_LIBS=()
    if [[ -f "$DEPS/include/secp256k1.h" ]]; then
        REF_FLAGS=(-DSIGVERIFY_GPU_CHECK_WITH_REFERENCE=1 -I"$DEPS/include")
        REF_LIBS=("$DEPS/lib/libsecp256k1.a")
        REF_SRCS=("$ROOT/reference/reference_verifier.cpp" "$ROOT/reference/row_generator.cpp")
        say "oracle: libsecp256k1 (staged)"
    else
        say "oracle: host-compiled kernel math (no staged libsecp256k1)"
    fi
    CXXFLAGS=(-std=c++20 -O3 -DNDEBUG -I"$ROOT" -I"$ROOT/shm_protocol/include" -I"$CUDA_HOME/include" -pthread)
    NVFLAGS=(-std=c++17 -O3 -DNDEBUG -I"$ROOT" -I"$ROOT/shm_protocol/include" -gencode "arch=compute_${ARCH#sm_},code=$ARCH" -Xptxas -v)
    pids=()
    for s in kernels/kernel_math.cpp kernels/gpu_common.cpp tests/kernels/gpu_check.cpp "${REF_SRCS[@]#$ROOT/}"; do
        g++ "${CXXFLAGS[@]}" "${REF_FLAGS[@]}" -c "$ROOT/$s" -o "$WORK/$(basename "$s" .cpp).o" >>"$LOGS/build.log" 2>&1 &
        pids+=($!)
    done
    "$NVCC" "${NVFLAGS[@]}" -c "$ROOT/kernels/gpu_verifier.cu" -o "$WORK/gpu_verifier.o" >>"$LOGS/build.log" 2>&1 &
    pids+=($!)
    fail=0
    for p in "${pids[@]}"; do wait "$p" || fail=1; done
    mkdir -p "$WORK/bin"
    BIN="$WORK/bin"
    if [[ $fail -ne 0 ]] || ! g++ -o "$BIN/gpu_check" "$WORK"/*.o "${REF_LIBS[@]}" -L"$CUDA_HOME/lib64" -lcudart_static \
        -ldl -lrt -pthread >>"$LOGS/build.log" 2>&1; then
        say "FAIL: build"
        grep -B2 -A6 -E "error" "$LOGS/build.log" | head -30 | tee -a "$OUT/summary.txt"
        exit 2
    fi
    say "built gpu_check from source"
fi

# --- phase 0: does IMAD.WIDE.U32 issue at the rate of IMAD? (~10 s; IMAD_SECONDS per measurement)
if [[ -x "$CARRY/bin/imad_rate" ]]; then
    say "phase 0: imad_rate"
    timeout 40 "$CARRY/bin/imad_rate" "${IMAD_SECONDS:-2}" >"$LOGS/imad_rate.txt" 2>&1
    say "imad_rate exit $?"
    tee -a "$OUT/summary.txt" <"$LOGS/imad_rate.txt"
fi

# --- phase 1: kernels vs libsecp256k1, 1M rows per table
say "phase 1: gpu_check --rows $ROWS"
timeout 240 "$BIN/gpu_check" --rows "$ROWS" >"$OUT/gpu_check.txt" 2>&1
rc_check=$?
say "gpu_check exit $rc_check: $(grep -E '^RESULT|^self-test|no GPU|^FAIL' "$OUT/gpu_check.txt" | tr '\n' ' ')"
table_lines "$OUT/gpu_check.txt" | tee -a "$OUT/summary.txt"
grep -E "mismatch" "$OUT/gpu_check.txt" | head -10 | tee -a "$OUT/summary.txt"

# --- phase 2: the daemon on the GPU
rc_daemon=0
if [[ $PREBUILT -eq 1 ]] && { [[ $DAEMON_BACKEND != gpu ]] || ! grep -q "no GPU" "$OUT/gpu_check.txt"; }; then
    SV="$BIN/sigverify"
    RT="$WORK/run"
    mkdir -p "$RT"
    start_daemon() {  # log file, extra flags... (BACKEND= overrides DAEMON_BACKEND)
        local log=$1
        shift
        "$BIN/sigverifyd" --runtime-dir "$RT" --foreground --backend "${BACKEND:-$DAEMON_BACKEND}" --arena-size 1G \
            --log-level info "$@" >"$log" 2>&1 &
        DAEMON_PID=$!
        for _ in $(seq 1 300); do
            "$SV" ping --runtime-dir "$RT" >/dev/null 2>&1 && break
            kill -0 "$DAEMON_PID" 2>/dev/null || break
            sleep 0.1
        done
    }
    stop_daemon() {
        kill "$DAEMON_PID" 2>/dev/null
        wait "$DAEMON_PID" 2>/dev/null
        say "sigverifyd exit $? after SIGTERM"
        DAEMON_PID=
    }
    say "phase 2: sigverifyd --backend $DAEMON_BACKEND"
    start_daemon "$LOGS/sigverifyd.log"
    {
        echo "== daemon start-up log"
        cat "$LOGS/sigverifyd.log"
        echo "== ping"
        "$SV" ping --runtime-dir "$RT" 2>&1
    } >"$OUT/daemon.txt"
    if ! "$SV" ping --runtime-dir "$RT" >/dev/null 2>&1; then
        say "FAIL: sigverifyd --backend gpu did not come up (daemon.txt)"
        rc_daemon=1
    else
        say "daemon up: $(grep -E 'self-test|backend gpu' "$LOGS/sigverifyd.log" | sed 's/.*\] //' | tr '\n' ' ' | cut -c1-300)"
        # Byte-identical to --local, results and collect, every table and encoding.
        diffs=0
        [[ -n "${SKIP_DAEMON_VERIFY:-}" ]] && say "daemon verify vs --local: skipped (SKIP_DAEMON_VERIFY)"
        for spec in ${SKIP_DAEMON_VERIFY:-ecdsa:opaque ecdsa:compact multisig:opaque schnorr:opaque threshold:opaque}; do
            [[ -n "${SKIP_DAEMON_VERIFY:-}" ]] && break
            t=${spec%%:*} f=${spec##*:} in="$WORK/$t-$f.rows"
            "$SV" gen --table "$t" --count "$DAEMON_ROWS" --sig-format "$f" --invalid-rate 0.2 --seed 11 --out "$in" >/dev/null 2>&1
            "$SV" verify --local --table "$t" --sig-format "$f" --in "$in" --out "$in.local" >/dev/null 2>&1
            "$SV" verify --runtime-dir "$RT" --table "$t" --sig-format "$f" --in "$in" --out "$in.gpu" >>"$OUT/daemon.txt" 2>&1
            "$SV" verify --local --collect --table "$t" --sig-format "$f" --in "$in" --out "$in.lc" >/dev/null 2>&1
            "$SV" verify --collect --runtime-dir "$RT" --table "$t" --sig-format "$f" --in "$in" --out "$in.gc" >>"$OUT/daemon.txt" 2>&1
            # the same rows as column tables (issue 8), results and collect
            "$SV" columns --from-rows "$in" --table "$t" --sig-format "$f" --out "$in.cols" >/dev/null 2>&1
            "$SV" verify --local --columns "$in.cols" --out "$in.cl" >/dev/null 2>&1
            "$SV" verify --runtime-dir "$RT" --columns "$in.cols" --out "$in.cg" >>"$OUT/daemon.txt" 2>&1
            "$SV" verify --local --collect --columns "$in.cols" --out "$in.ccl" >/dev/null 2>&1
            "$SV" verify --collect --runtime-dir "$RT" --columns "$in.cols" --out "$in.ccg" >>"$OUT/daemon.txt" 2>&1
            for m in "local gpu" "lc gc" "cl cg" "ccl ccg"; do
                set -- $m
                if cmp -s "$in.$1" "$in.$2" && [[ -s "$in.$1" ]]; then r=same; else r=DIFFERENT; diffs=$((diffs + 1)); fi
                echo "verify $t $f ${1}/${2}: $r" >>"$OUT/daemon.txt"
            done
        done
        [[ -z "${SKIP_DAEMON_VERIFY:-}" ]] && say "daemon verify vs --local ($DAEMON_ROWS rows x 5 configs x rows/columns x 2 modes): $diffs different"
        [[ $diffs -ne 0 ]] && rc_daemon=1
        if [[ -n "$BENCH_SIZES" ]]; then
            say "bench (5% invalid): sizes $BENCH_SIZES"
            timeout 200 "$SV" bench --runtime-dir "$RT" --sizes "$BENCH_SIZES" --skip-single-thread --repeat 3 --budget 3 \
                --clients 4 --latency-iterations "${LAT_ITERS:-2000}" --json "$LOGS/bench.json" >"$OUT/bench.txt" 2>"$LOGS/bench.err"
            say "bench exit $?"
            grep -E "sigverifyd|multi-client|differed" "$OUT/bench.txt" | tee -a "$OUT/summary.txt"
        fi
        if [[ $SECONDS -lt $((DEADLINE - 60)) ]]; then
            say "bench (all rows valid): $BENCH_BIG rows"
            timeout 120 "$SV" bench --runtime-dir "$RT" --sizes "$BENCH_BIG" --skip-single-thread --repeat 3 --budget 3 \
                --invalid-rate 0 --clients 0 --latency-iterations 10 >"$OUT/bench_valid.txt" 2>"$LOGS/bench_valid.err"
            say "bench exit $?"
            grep -E " $BENCH_BIG .*sigverifyd|differed" "$OUT/bench_valid.txt" | tee -a "$OUT/summary.txt"
        fi
        if [[ -n "${CONFIRM_CHECK-1}" && $SECONDS -lt $((DEADLINE - 60)) ]]; then
            # Issue 13: multisig (CHECKMULTISIG attempts, ~50% invalid) under the
            # groups rule (default) and the strict rule, next to ecdsa (5% invalid).
            for rule in groups strict; do
                flag=""; [[ $rule == strict ]] && flag="--strict-confirm"
                say "bench confirm=$rule: ecdsa and multisig at $BENCH_BIG rows"
                "$SV" stats --runtime-dir "$RT" backends >"$LOGS/confirm_$rule.before" 2>&1
                timeout 120 "$SV" bench --runtime-dir "$RT" --sizes "$BENCH_BIG" --tables ecdsa,multisig \
                    --skip-single-thread --repeat 2 --budget 3 --clients 0 --latency-iterations 10 $flag \
                    >"$LOGS/confirm_$rule.txt" 2>&1
                say "bench exit $?"
                grep -E " $BENCH_BIG .*sigverifyd|differed" "$LOGS/confirm_$rule.txt" | sed "s/^/$rule /" | tee -a "$OUT/summary.txt"
                "$SV" stats --runtime-dir "$RT" backends 2>&1 | sed "s/^/$rule after: /" | tee -a "$OUT/summary.txt"
            done
        fi
        "$SV" stats --runtime-dir "$RT" >"$LOGS/stats.txt" 2>&1
        "$SV" stats --runtime-dir "$RT" backends >>"$LOGS/stats.txt" 2>&1
        grep -E "mismatch|gpu_errors|cpu_fallback|rechecked|confirm|rows_in_place|rows_staged|rewritten" "$LOGS/stats.txt" | grep -v "^#" | tee -a "$OUT/summary.txt"
    fi
    stop_daemon
    echo "== full log" >>"$OUT/daemon.txt"
    tail -50 "$LOGS/sigverifyd.log" >>"$OUT/daemon.txt"
    # The same all-valid figure with other GPU chunking (DAEMON_ALT flags).
    if [[ $rc_daemon -eq 0 && -n "${DAEMON_ALT-x}" && $SECONDS -lt $((DEADLINE - 90)) ]]; then
        alt=${DAEMON_ALT:---gpu-chunk-rows 524288 --gpu-chunks-in-flight 2}
        say "phase 2b: sigverifyd $alt"
        start_daemon "$LOGS/sigverifyd_alt.log" $alt
        timeout 100 "$SV" bench --runtime-dir "$RT" --sizes "$BENCH_BIG" --skip-single-thread --repeat 3 --budget 3 \
            --invalid-rate 0 --clients 0 --latency-iterations 10 >"$LOGS/bench_alt.txt" 2>"$LOGS/bench_alt.err"
        say "bench exit $?"
        grep -E " $BENCH_BIG .*sigverifyd|differed" "$LOGS/bench_alt.txt" | sed "s/^/alt /" | tee -a "$OUT/summary.txt"
        stop_daemon
    fi
    # Issue 13: the batch-size curve (CURVE_SIZES) with the batch split (the
    # default), GPU only (--gpu-split off) and CPU only, p50 of each size.
    if [[ $rc_daemon -eq 0 && -n "${CURVE_SIZES-x}" ]]; then
        sizes=${CURVE_SIZES:-1,64,1024,4096,16384,65536}
        for mode in split gpu-only cpu-only; do
            [[ $SECONDS -lt $((DEADLINE - 45)) ]] || break
            backend=""
            case $mode in
                split) flags="" ;;
                gpu-only) flags="--gpu-split off --gpu-min-rows 1" ;;
                cpu-only) flags="" backend=cpu ;;
            esac
            say "phase 2c: batch-size curve, $mode"
            BACKEND=$backend start_daemon "$LOGS/sigverifyd_curve_$mode.log" $flags
            timeout 60 "$SV" bench --runtime-dir "$RT" --tables ecdsa --sizes "$sizes" --skip-single-thread --repeat 3 \
                --budget 1 --clients 0 --latency-iterations 200 --json "$LOGS/curve_$mode.json" \
                --plot "$LOGS/curve_$mode.svg" >"$LOGS/curve_$mode.txt" 2>&1
            say "bench exit $?"
            grep -E "^ecdsa .*sigverifyd|^[0-9]+ +sigverifyd" "$LOGS/curve_$mode.txt" | sed "s/^/curve $mode /" | tee -a "$OUT/summary.txt"
            stop_daemon
        done
    fi
fi

# --- phase 3: kernel variants while time is left
if [[ $rc_check -eq 0 ]]; then
    runs=()
    if [[ -n "${RUNS:-}" ]]; then  # "name:binary args;..." (binary in the carried bin/)
        IFS=';' read -r -a specs <<<"$RUNS"
        for r in "${specs[@]}"; do runs+=("${r%%:*}:$BIN/${r#*:}"); done
    else
        for v in "${VARIANT_NAMES[@]}"; do [[ -x "$BIN/gpu_check_$v" ]] && runs+=("$v:$BIN/gpu_check_$v"); done
        runs+=("tpb64:$BIN/gpu_check --tpb 64" "tpb256:$BIN/gpu_check --tpb 256" "tpb32:$BIN/gpu_check --tpb 32")
    fi
    for r in "${runs[@]}"; do
        name=${r%%:*} cmd=${r#*:}
        if [[ $SECONDS -ge $DEADLINE ]]; then say "variant $name: past the deadline, skipped"; continue; fi
        timeout 90 $cmd --rows "$EXTRA_ROWS" >"$LOGS/gpu_check_$name.txt" 2>&1
        say "variant $name exit $?: $(grep -E '^RESULT' "$LOGS/gpu_check_$name.txt")"
        table_lines "$LOGS/gpu_check_$name.txt" | sed "s/^/$name /" | tee -a "$OUT/summary.txt"
    done
fi
# --- phase 4: where the kernel's time goes (Nsight Compute; works on the
# Firecracker machines). One 65,536-row ECDSA launch of the default build:
# achieved occupancy, issue efficiency, warp stall reasons, local-memory
# traffic. Clocks left as they are (--clock-control none).
NCU=${NCU-$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null || true)}
if [[ $rc_check -eq 0 && -n "$NCU" && -x "$NCU" && $SECONDS -lt $DEADLINE ]]; then
    say "phase 4: $NCU on one verify_kernel launch"
    timeout 120 "$NCU" --clock-control none -k regex:verify_kernel --launch-skip 8 --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
        --section SchedulerStats --section InstructionStats --section ComputeWorkloadAnalysis \
        --metrics smsp__thread_inst_executed_per_inst_executed.ratio,smsp__inst_executed.sum,sm__cycles_elapsed.max \
        "$BIN/gpu_check" --rows 65536 --repeats 1 >"$LOGS/ncu.txt" 2>&1
    say "ncu exit $?"
    grep -E "Executed Ipc|Issue Slots Busy|SM Busy|Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Issued Warp Per Scheduler|No Eligible|Warp Cycles Per Issued|Local|L1/TEX Hit|L2 Hit|DRAM Throughput|Active Threads|Not Predicated|thread_inst_executed_per|smsp__inst_executed.sum|sm__cycles_elapsed|Registers Per|Shared Memory Config|Block Limit" \
        "$LOGS/ncu.txt" | head -40 | tee -a "$OUT/summary.txt"
    cp "$LOGS/ncu.txt" "$OUT/ncu.txt"
elif [[ -z "$NCU" ]]; then
    say "phase 4: no ncu (or NCU= given), skipped"
fi
say "exit codes: gpu_check $rc_check, daemon $rc_daemon"
# gpu_check exits 77 without a GPU: nothing on a GPU was checked, so this
# script says skipped (77) too, unless the daemon phase failed.
if [[ $rc_check -eq 77 && $rc_daemon -eq 0 ]]; then
    say "no GPU: GPU checks skipped (exit 77)"
    exit 77
fi
exit $((rc_check != 0 || rc_daemon != 0))
