#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# GPU check for sigverifyd: every GPU question in ONE device run of at most
# BUDGET (450) seconds, in the order of issue 40, each phase timed and
# skipped cleanly when too little time is left. See docs/kernels.md
# ("Running the GPU check").
#
#   scripts/gpu-check.sh prepare   (here, on the machine WITHOUT a GPU; minutes)
#       Builds everything for sm_90 with this machine's nvcc (CMake, Release,
#       SIGVERIFY_CUDA=ON): sigverifyd, sigverify, gpu_check,
#       sigverify_latency_bench and the kernel variants' gpu_check, and copies
#       them with the shared libraries they need (spdlog, fmt, libsecp256k1,
#       libsystemd, ...) into build-gpu-carry/ (ignored by git). Also stages
#       libsecp256k1 for a source build there.
#       Carry it: run(command="OUT=$OUT scripts/gpu-check.sh",
#                     carry=["build-gpu-carry"], timeout_s=540)
#
#   scripts/gpu-check.sh stage     Only the libsecp256k1 staging (for a
#       source build of gpu_check on the GPU machine; carry build-gpu-carry).
#
#   scripts/gpu-check.sh           (on the GPU machine)
#       Prebuilt binaries when carried and loadable there; otherwise gpu_check
#       from source with nvcc/g++ (the daemon phases then need the carried
#       binaries and are skipped without them). Phases, in this order; each
#       starts only with its minimum time left before DEADLINE (BUDGET - 10 s)
#       and is cut at its maximum (seconds: max/min):
#         1. correctness (200/60, 150/40): gpu_check --rows ROWS, GPU vs
#            libsecp256k1 row by row on all four row tables (both encodings,
#            30% broken, 1 in 8 hostile), results and collect; then
#            sigverifyd --backend gpu against `sigverify verify --local` on
#            DAEMON_ROWS rows of every table as rows and as column tables (the
#            ecdsa and schnorr column tables), results and collect;
#         2. sanitizer (120/30): compute-sanitizer memcheck, racecheck and
#            synccheck on verify_kernel and parity_kernel (gpu_check --tables
#            ecdsa,schnorr --no-bench) at SAN_ROWS (16896) rows a launch;
#         3. kernel-rate (120/30): kernel-only rows/s of this kernel, `prebatch`
#            (before kernel v3) and `v2d`, same run, same rows (KRATE_ROWS);
#         4. nsight (150/40): Nsight Compute on one verify_kernel (ECDSA) and
#            one parity_kernel (BIP-340) launch of NCU_ROWS rows: SpeedOfLight,
#            ComputeWorkloadAnalysis, Occupancy, WarpStateStats,
#            InstructionStats, thread instructions executed per row;
#         5. daemon-e2e (150/40): `sigverify bench` at BENCH_BIG rows per table
#            (the multisig/ecdsa ratio), then sigverify_latency_bench --gpu
#            real: 1-row and 4,096-row batches p50/p99 alone and beside bulk
#            clients;
#         6. extras, while time is left: the batch-size curve (split, GPU only,
#            CPU only), the confirmation rules at BENCH_BIG, DAEMON_ALT's
#            chunking, the other kernel variants and block sizes, imad_rate.
#       $OUT gets summary.json (every phase: status, seconds, exit code, its
#       figure lines; read this first), gpu-check.log (what was said, in
#       order) and logs.tar.gz (every output), plus ncu.txt.
#       Env: OUT (./gpu-check-out), BUDGET (450), ROWS (1000000), DAEMON_ROWS
#       (1000000), SAN_ROWS (16896), KRATE_ROWS (300000), NCU_ROWS (65536),
#       BENCH_BIG (1048576), LAT_WINDOW_MS (6000), EXTRA_ROWS (300000), RUNS,
#       CURVE_SIZES, DAEMON_ALT, CONFIRM_CHECK, NCU (path; empty: skip).
#
#   scripts/gpu-check.sh --dry-run  (here, no GPU; <= 150 s on 2 cores; .ci/run)
#       Every phase it can against the CPU and host-kernel backends with the
#       binaries of build/ (scripts/test.sh builds them): gpu_check says "no
#       GPU" (phases 1a, 3: skipped), the daemon phases run sigverifyd
#       --backend host-kernel at small sizes, sanitizer and nsight skip
#       without a GPU. Exit 0 unless a phase that ran failed.
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
    # sm_90 alone (H100/H200 leases; the earlier kernels' trees know no other default)
    local cfg=(-DCMAKE_BUILD_TYPE=Release -DSIGVERIFY_CUDA=ON -DSIGVERIFY_PTXAS_VERBOSE=ON -DSIGVERIFY_CUDA_ALL_ARCHITECTURES=OFF)
    rm -rf "$CARRY/bin"
    mkdir -p "$CARRY/bin" "$CARRY/lib"
    echo "prepare: building build-gpu (sigverifyd, sigverify, gpu_check, sigverify_latency_bench) with $JOBS jobs"
    cmake -S "$ROOT" -B "$ROOT/build-gpu" "${cfg[@]}" >/dev/null
    cmake --build "$ROOT/build-gpu" -j"$JOBS" --target sigverifyd sigverify_cli gpu_check sigverify_latency_bench 2>&1 |
        tee "$CARRY/build.log" | grep -E "error|warning|Built target" || true
    cp "$ROOT/build-gpu/daemon/sigverifyd" "$ROOT/build-gpu/client/cli/sigverify" \
        "$ROOT/build-gpu/tests/kernels/gpu_check" "$ROOT/build-gpu/tests/bench/sigverify_latency_bench" "$CARRY/bin/"
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
    --dry-run) DRY_RUN=1 ;;
    "") DRY_RUN=0 ;;
    *) echo "usage: scripts/gpu-check.sh [prepare|stage|--dry-run]" >&2; exit 2 ;;
esac

# gpu_check from source with nvcc/g++ (the GPU machine without loadable
# carried binaries): BIN then holds gpu_check alone.
build_from_source() {
    say "carried binaries missing or not loadable here: building gpu_check from source (daemon phases skipped)"
    [[ -x "$BIN/gpu_check" ]] && ldd "$BIN/gpu_check" "$BIN/sigverifyd" "$BIN/sigverify" >"$LOGS/ldd.txt" 2>&1
    NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    CUDA_HOME=$(cd "$(dirname "$NVCC")/.." && pwd)
    local REF_FLAGS=() REF_SRCS=() REF_LIBS=() CXXFLAGS NVFLAGS pids=() fail=0 s p
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
    for s in kernels/kernel_math.cpp kernels/gpu_common.cpp kernels/gpu_self_test.cpp tests/kernels/gpu_check.cpp "${REF_SRCS[@]#$ROOT/}"; do
        g++ "${CXXFLAGS[@]}" "${REF_FLAGS[@]}" -c "$ROOT/$s" -o "$WORK/$(basename "$s" .cpp).o" >>"$LOGS/build.log" 2>&1 &
        pids+=($!)
    done
    for s in gpu_verifier gpu_devices; do
        "$NVCC" "${NVFLAGS[@]}" -c "$ROOT/kernels/$s.cu" -o "$WORK/$s.o" >>"$LOGS/build.log" 2>&1 &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || fail=1; done
    mkdir -p "$WORK/bin"
    BIN="$WORK/bin"
    if [[ $fail -ne 0 ]] || ! g++ -o "$BIN/gpu_check" "$WORK"/*.o "${REF_LIBS[@]}" -L"$CUDA_HOME/lib64" -lcudart_static \
        -ldl -lrt -pthread >>"$LOGS/build.log" 2>&1; then
        say "FAIL: build"
        grep -B2 -A6 -E "error" "$LOGS/build.log" | head -30 | tee -a "$OUT/gpu-check.log"
        exit 2
    fi
    say "built gpu_check from source"
}

# ================================ the run ===================================
OUT=${OUT:-$ROOT/gpu-check-out}
WORK=$(mktemp -d /tmp/sigverify-gpu-check.XXXXXX)
LOGS="$WORK/logs"
FIGS="$WORK/figures"
mkdir -p "$OUT" "$LOGS" "$FIGS"
if [[ $DRY_RUN -eq 1 ]]; then
    # against the CPU and host-kernel backends, with build/'s binaries, in <= 150 s on 2 cores
    BUDGET=${BUDGET:-150} ROWS=${ROWS:-2000} DAEMON_ROWS=${DAEMON_ROWS:-1500} SAN_ROWS=${SAN_ROWS:-2048}
    KRATE_ROWS=${KRATE_ROWS:-2000} NCU_ROWS=${NCU_ROWS:-4096} BENCH_BIG=${BENCH_BIG:-4096}
    LAT_WINDOW_MS=${LAT_WINDOW_MS:-1500} EXTRA_ROWS=${EXTRA_ROWS:-2000} CURVE_SIZES=${CURVE_SIZES-1,64,1024}
    DAEMON_ALT=${DAEMON_ALT-} CONFIRM_CHECK=${CONFIRM_CHECK-} DAEMON_BACKEND=${DAEMON_BACKEND:-host-kernel}
    LAT_GPU=sleeping
else
    BUDGET=${BUDGET:-450} ROWS=${ROWS:-1000000} DAEMON_ROWS=${DAEMON_ROWS:-1000000} SAN_ROWS=${SAN_ROWS:-16896}
    KRATE_ROWS=${KRATE_ROWS:-300000} NCU_ROWS=${NCU_ROWS:-65536} BENCH_BIG=${BENCH_BIG:-1048576}
    LAT_WINDOW_MS=${LAT_WINDOW_MS:-6000} EXTRA_ROWS=${EXTRA_ROWS:-300000} DAEMON_BACKEND=${DAEMON_BACKEND:-gpu}
    LAT_GPU=real
fi
DEADLINE=${DEADLINE:-$((BUDGET - 10))}  # nothing new starts after it; the rest is the summary
ARCH=${ARCH:-sm_90}
NO_GPU=$DRY_RUN  # a dry run uses no GPU, even where one is
FAILED=0
: >"$OUT/gpu-check.log"
: >"$WORK/phases.tsv"
say() { echo "[gpu-check ${SECONDS}s] $*" | tee -a "$OUT/gpu-check.log"; }
# fig PHASE: stdin's lines are figures of that phase (summary.json) and go to the log
fig() { tee -a "$FIGS/$1.txt" | sed "s/^/  $1: /" | tee -a "$OUT/gpu-check.log"; }
table_lines() { grep -E "^(table|ecdsa|multisig|schnorr|threshold) " "$1"; }
# tmo CMD...: CMD under the time its phase has left (124 when none is)
tmo() {
    local left=$((PHASE_END - SECONDS))
    ((left >= 1)) || return 124
    timeout "$left" "$@"
}
left() { echo $((PHASE_END - SECONDS)); }
# run_phase NAME MAX MIN RESERVE FUNCTION: FUNCTION when MIN seconds are left
# before DEADLINE, with at most MAX of them and never the RESERVE the later
# phases need to start (the sum of their MIN; not in a dry run, which skips
# the GPU phases anyway); its exit code: 0 ok, 77 skipped (with PHASE_NOTE),
# 124 timeout (cut at its limit), anything else fail.
run_phase() {
    local name=$1 max=$2 min=$3 reserve=$4 fn=$5 t0=$SECONDS rc status
    [[ $DRY_RUN -eq 1 ]] && reserve=0
    local left=$((DEADLINE - SECONDS - reserve))
    PHASE_NOTE=""
    if ((left < min)); then
        status=skipped PHASE_NOTE="${left} s left, needs ${min} s" rc=-1
    else
        PHASE_END=$((SECONDS + (max < left ? max : left)))
        say "phase $name: start ($((PHASE_END - SECONDS)) s at most)"
        "$fn"
        rc=$?
        case $rc in 0) status=ok ;; 77) status=skipped ;; 124) status=timeout ;; *) status=fail FAILED=1 ;; esac
    fi
    printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$status" $((SECONDS - t0)) "$rc" "$PHASE_NOTE" >>"$WORK/phases.tsv"
    say "phase $name: $status (exit $rc) in $((SECONDS - t0)) s${PHASE_NOTE:+: $PHASE_NOTE}"
}
json_str() {
    local v
    v=$(printf '%s' "$1" | tr -d '\000-\010\013-\037' | tr '\t\n' '  ')
    v=${v//\\/\\\\}
    printf '"%s"' "${v//\"/\\\"}"
}
write_summary() {
    local first=1 name status secs rc note
    {
        printf '{\n  "commit": %s,\n  "device": %s,\n  "dry_run": %s,\n  "budget_s": %s,\n  "seconds": %s,\n' \
            "$(json_str "$(head -1 "$CARRY/commit.txt" 2>/dev/null || git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)")" \
            "$(json_str "$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)")" \
            "$([[ $DRY_RUN -eq 1 ]] && echo true || echo false)" "$BUDGET" "$SECONDS"
        printf '  "phases": ['
        while IFS=$'\t' read -r name status secs rc note; do
            [[ $first -eq 1 ]] || printf ','
            first=0
            printf '\n    {"name": %s, "status": %s, "seconds": %s, "exit": %s, "note": %s, "lines": [' \
                "$(json_str "$name")" "$(json_str "$status")" "$secs" "$rc" "$(json_str "$note")"
            local l firstl=1
            if [[ -f "$FIGS/$name.txt" ]]; then
                while IFS= read -r l; do
                    [[ $firstl -eq 1 ]] || printf ', '
                    firstl=0
                    json_str "$l"
                done <"$FIGS/$name.txt"
            fi
            printf ']}'
        done <"$WORK/phases.tsv"
        printf '\n  ],\n  "failed": %s\n}\n' "$([[ $FAILED -eq 1 ]] && echo true || echo false)"
    } >"$OUT/summary.json"
}
finish() {
    [[ -n "${DAEMON_PID:-}" ]] && kill "$DAEMON_PID" 2>/dev/null
    cp "$CARRY/commit.txt" "$LOGS/" 2>/dev/null
    write_summary
    tar -C "$WORK" -czf "$OUT/logs.tar.gz" logs 2>/dev/null
    say "done after ${SECONDS} s: $OUT/summary.json"
    rm -rf "$WORK"
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
say "repo ${ROOT} ($(head -1 "$CARRY/commit.txt" 2>/dev/null || echo '?')); $(grep -m1 -oE 'NVIDIA [A-Z0-9 ]+' "$LOGS/env.txt" || echo 'no nvidia-smi')$([[ $DRY_RUN -eq 1 ]] && echo "; DRY RUN")"

# --- binaries: build/'s (dry run), carried, or gpu_check from source
BIN="$CARRY/bin"
PREBUILT=0
if [[ $DRY_RUN -eq 1 ]]; then
    BIN="$WORK/bin"
    mkdir -p "$BIN"
    for b in daemon/sigverifyd client/cli/sigverify tests/kernels/gpu_check tests/bench/sigverify_latency_bench; do
        [[ -x "$ROOT/build/$b" ]] && ln -s "$ROOT/build/$b" "$BIN/$(basename "$b")"
    done
    if [[ -x "$BIN/sigverifyd" && -x "$BIN/sigverify" ]]; then
        PREBUILT=1
        say "dry run: build/'s binaries, daemon backend $DAEMON_BACKEND"
    else
        say "dry run: build/ lacks sigverifyd or sigverify (scripts/test.sh builds them): daemon phases skipped"
    fi
elif [[ -x "$BIN/gpu_check" ]] && ! ldd "$BIN/gpu_check" "$BIN/sigverifyd" "$BIN/sigverify" 2>&1 | grep -q "not found" &&
    LD_LIBRARY_PATH="$CARRY/lib" "$BIN/sigverify" --version >/dev/null 2>&1; then
    export LD_LIBRARY_PATH="$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    PREBUILT=1
    say "using the carried binaries (build-gpu-carry/bin)"
    # Registers, stack frame and spills of each kernel build (cuobjdump is there, not here).
    for b in "$CARRY"/bin/gpu_check*; do
        echo "--- $(basename "$b")"
        "$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)" -res-usage "$b" 2>&1 |
            grep -A1 -E "verify_kernel|parity_kernel" | head -8
    done >"$LOGS/resources.txt" 2>&1
else
    build_from_source
fi

SV="$BIN/sigverify"
RT="$WORK/run"
mkdir -p "$RT"
DAEMON_PID=
start_daemon() {  # LOG FLAGS... (BACKEND= overrides DAEMON_BACKEND); 1 when it does not answer pings
    local log=$1
    shift
    "$BIN/sigverifyd" --runtime-dir "$RT" --foreground --backend "${BACKEND:-$DAEMON_BACKEND}" --arena-size 1G \
        --log-level info "$@" >"$log" 2>&1 &
    DAEMON_PID=$!
    for _ in $(seq 1 300); do
        "$SV" ping --runtime-dir "$RT" >/dev/null 2>&1 && return 0
        kill -0 "$DAEMON_PID" 2>/dev/null || break
        sleep 0.1
    done
    say "sigverifyd did not come up ($(basename "$log")): $(tail -3 "$log" | tr '\n' ' ')"
    return 1
}
stop_daemon() {
    [[ -n "$DAEMON_PID" ]] || return 0
    kill "$DAEMON_PID" 2>/dev/null
    wait "$DAEMON_PID" 2>/dev/null
    DAEMON_PID=
}
needs_daemon() {  # the binaries, and a GPU unless in a dry run
    [[ $PREBUILT -eq 1 ]] || { PHASE_NOTE="no sigverifyd/sigverify binaries here"; return 1; }
    [[ $DRY_RUN -eq 1 || $NO_GPU -eq 0 ]] || { PHASE_NOTE="no GPU"; return 1; }
}
needs_gpu() {
    [[ $NO_GPU -eq 0 ]] && return 0
    PHASE_NOTE="no GPU"
    return 1
}

# --- 1. correctness: the kernels, then the daemon, row by row against libsecp256k1
phase_kernel_correctness() {
    [[ -x "$BIN/gpu_check" ]] || { NO_GPU=1; PHASE_NOTE="no gpu_check binary (a build without CUDA)"; return 77; }
    # a dry run still shows that gpu_check starts and says why there is no GPU
    tmo "$BIN/gpu_check" --rows "$ROWS" >"$LOGS/gpu_check.txt" 2>&1
    local rc=$?
    grep -E "^RESULT|^self-test|no GPU|^FAIL|^opened|mismatch" "$LOGS/gpu_check.txt" | fig kernel-correctness
    table_lines "$LOGS/gpu_check.txt" | fig kernel-correctness
    if [[ $rc -eq 77 ]]; then NO_GPU=1; PHASE_NOTE="no GPU: $(head -1 "$LOGS/gpu_check.txt")"; fi
    return $rc
}
phase_daemon_correctness() {
    needs_daemon || return 77
    # every row to the GPU: no split, no CPU-sized chunks
    start_daemon "$LOGS/sigverifyd_correctness.log" --gpu-split off --gpu-min-rows 1 || { stop_daemon; return 1; }
    grep -E "self-test|no kernel image|backend gpu|host-kernel" "$LOGS/sigverifyd_correctness.log" | sed 's/.*\] //' |
        cut -c1-300 | fig daemon-correctness
    local diffs=0 spec t f in m r
    for spec in ecdsa:opaque ecdsa:compact multisig:opaque schnorr:opaque threshold:opaque; do
        t=${spec%%:*} f=${spec##*:} in="$WORK/$t-$f.rows"
        tmo "$SV" gen --table "$t" --count "$DAEMON_ROWS" --sig-format "$f" --invalid-rate 0.2 --high-s-rate 0.2 \
            --seed 11 --out "$in" >/dev/null 2>&1 || break
        tmo "$SV" columns --from-rows "$in" --table "$t" --sig-format "$f" --out "$in.cols" >/dev/null 2>&1
        tmo "$SV" verify --local --table "$t" --sig-format "$f" --in "$in" --out "$in.local" >/dev/null 2>&1
        tmo "$SV" verify --runtime-dir "$RT" --table "$t" --sig-format "$f" --in "$in" --out "$in.gpu" >>"$LOGS/daemon.txt" 2>&1
        tmo "$SV" verify --local --collect --table "$t" --sig-format "$f" --in "$in" --out "$in.lc" >/dev/null 2>&1
        tmo "$SV" verify --collect --runtime-dir "$RT" --table "$t" --sig-format "$f" --in "$in" --out "$in.gc" >>"$LOGS/daemon.txt" 2>&1
        # the same rows as column tables (libbitcoin's ecdsa and schnorr tables), results and collect
        tmo "$SV" verify --local --columns "$in.cols" --out "$in.cl" >/dev/null 2>&1
        tmo "$SV" verify --runtime-dir "$RT" --columns "$in.cols" --out "$in.cg" >>"$LOGS/daemon.txt" 2>&1
        tmo "$SV" verify --local --collect --columns "$in.cols" --out "$in.ccl" >/dev/null 2>&1
        tmo "$SV" verify --collect --runtime-dir "$RT" --columns "$in.cols" --out "$in.ccg" >>"$LOGS/daemon.txt" 2>&1
        (($(left) > 0)) || { stop_daemon; return 124; }  # cut short: its outputs are incomplete
        for m in "local gpu" "lc gc" "cl cg" "ccl ccg"; do
            set -- $m
            if cmp -s "$in.$1" "$in.$2" && [[ -s "$in.$1" ]]; then r=same; else r=DIFFERENT diffs=$((diffs + 1)); fi
            echo "verify $t $f $DAEMON_ROWS rows ${1}/${2}: $r" | fig daemon-correctness
        done
        rm -rf "$in"*  # the column tables are directories
    done
    "$SV" stats --runtime-dir "$RT" backends 2>&1 | fig daemon-correctness
    stop_daemon
    return $((diffs != 0))
}

# --- 2. compute-sanitizer on both kernel entries at the production launch size
phase_sanitizer() {
    needs_gpu || return 77
    local san=${SANITIZER:-$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)}
    [[ -n "$san" && -x "$san" ]] || { PHASE_NOTE="no compute-sanitizer"; return 77; }
    local rc=0 tool each
    for tool in memcheck racecheck synccheck; do
        case $tool in memcheck) each=$(($(left) / 3)) ;; racecheck) each=$(($(left) / 2)) ;; *) each=$(left) ;; esac
        ((each >= 1)) || { echo "$tool: no time left" | fig sanitizer; rc=124; continue; }
        timeout "$each" "$san" --tool "$tool" --error-exitcode 9 --print-limit 20 "$BIN/gpu_check" --rows "$SAN_ROWS" \
            --tables ecdsa,schnorr --no-bench --repeats 1 >"$LOGS/sanitizer_$tool.txt" 2>&1
        local r=$?
        echo "$tool exit $r: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^RESULT" "$LOGS/sanitizer_$tool.txt" | tr '\n' ' ')" |
            fig sanitizer
        [[ $r -eq 0 ]] || rc=$([[ $r -eq 124 ]] && echo 124 || echo 1)
    done
    return $rc
}

# --- 3. kernel-only rows/s: this kernel beside prebatch and v2d, same rows
phase_kernel_rate() {
    needs_gpu || return 77
    local rc=0 name b
    for name in current prebatch v2d; do
        b="$BIN/gpu_check_$name"
        [[ $name == current ]] && b="$BIN/gpu_check"
        [[ -x "$b" ]] || { echo "$name: not carried" | fig kernel-rate; continue; }
        [[ $name == current ]] && set -- --no-hostile || set --
        tmo "$b" --rows "$KRATE_ROWS" --repeats 3 "$@" >"$LOGS/kernel_rate_$name.txt" 2>&1 || rc=$?
        table_lines "$LOGS/kernel_rate_$name.txt" | sed "s/^/$name /" | fig kernel-rate
    done
    return $rc
}

# --- 4. Nsight Compute on one launch of each kernel
phase_nsight() {
    needs_gpu || return 77
    local ncu=${NCU-$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)} rc=0 k
    [[ -n "$ncu" && -x "$ncu" ]] || { PHASE_NOTE="no ncu (or NCU= given)"; return 77; }
    # launches before the profiled one: the self-test's (6 verify_kernel, 2 parity_kernel) and, for
    # verify_kernel, the opaque table's two (results, collect): the compact table's results launch
    for k in verify_kernel:ecdsa:8 parity_kernel:schnorr:2; do
        IFS=: read -r kernel table skip <<<"$k"
        tmo "$ncu" --clock-control none -k "regex:$kernel" --launch-skip "$skip" --launch-count 1 \
            --section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy --section WarpStateStats \
            --section InstructionStats --section SchedulerStats --section MemoryWorkloadAnalysis \
            --metrics smsp__thread_inst_executed.sum,smsp__inst_executed.sum,sm__cycles_elapsed.max \
            "$BIN/gpu_check" --rows "$NCU_ROWS" --tables "$table" --repeats 1 --no-bench >"$LOGS/ncu_$kernel.txt" 2>&1 || rc=$?
        grep -E "Compute \(SM\) Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Executed Ipc|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Stall|Registers Per|Block Limit|thread_inst_executed.sum|inst_executed.sum|cycles_elapsed" \
            "$LOGS/ncu_$kernel.txt" | head -30 | sed "s/^ */$kernel: /" | fig nsight
        local thr
        thr=$(grep -E "smsp__thread_inst_executed.sum" "$LOGS/ncu_$kernel.txt" | awk '{gsub(",","",$NF); print $NF}' | head -1)
        [[ -n "$thr" ]] && echo "$kernel: thread instructions executed per row: $(awk -v t="$thr" -v n="$NCU_ROWS" 'BEGIN{printf "%.0f", t/n}') (launch of $NCU_ROWS rows)" | fig nsight
    done
    cat "$LOGS"/ncu_*.txt >"$OUT/ncu.txt" 2>/dev/null
    return $rc
}

# --- 5. the daemon end to end: bulk rates per table, a node's 1-row and 4,096-row batches
phase_daemon_e2e() {
    needs_daemon || return 77
    start_daemon "$LOGS/sigverifyd_e2e.log" || { stop_daemon; return 1; }
    tmo "$SV" bench --runtime-dir "$RT" --sizes "$BENCH_BIG" --skip-single-thread --repeat 2 --budget 3 --clients 0 \
        --latency-iterations 10 --json "$LOGS/bench_e2e.json" >"$LOGS/bench_e2e.txt" 2>&1
    local rc=$?
    grep -E "sigverifyd|differed|ratio" "$LOGS/bench_e2e.txt" | fig daemon-e2e
    "$SV" stats --runtime-dir "$RT" backends 2>&1 | fig daemon-e2e
    stop_daemon
    if [[ -x "$BIN/sigverify_latency_bench" ]]; then
        local extra=()
        [[ $LAT_GPU == real ]] && extra=(--daemon "$BIN/sigverifyd")
        tmo "$BIN/sigverify_latency_bench" --gpu "$LAT_GPU" "${extra[@]}" --window-ms "$LAT_WINDOW_MS" --block-rows 4096 \
            >"$LOGS/latency.txt" 2>&1 || rc=$?
        grep -E "batch|alone|beside|bulk|libsecp256k1|daemon:" "$LOGS/latency.txt" | fig daemon-e2e
    else
        echo "no sigverify_latency_bench: 1-row / 4,096-row latency not measured" | fig daemon-e2e
    fi
    return $rc
}

# --- 6. extras while time is left
phase_extras() {
    local rc=0 mode flags backend sizes rule flag
    [[ $DRY_RUN -eq 1 || $NO_GPU -eq 0 ]] || { PHASE_NOTE="no GPU"; return 77; }
    if [[ $PREBUILT -eq 1 && -n "${CURVE_SIZES-x}" ]]; then
        sizes=${CURVE_SIZES:-1,64,1024,4096,16384,65536}
        for mode in split gpu-only cpu-only; do
            (($(left) >= 30)) || break
            backend="" flags=""
            case $mode in
                gpu-only) flags="--gpu-split off --gpu-min-rows 1" ;;
                cpu-only) backend=cpu ;;
            esac
            BACKEND=$backend start_daemon "$LOGS/sigverifyd_curve_$mode.log" $flags || { stop_daemon; rc=1; continue; }
            tmo "$SV" bench --runtime-dir "$RT" --tables ecdsa --sizes "$sizes" --skip-single-thread --repeat 3 \
                --budget 1 --clients 0 --latency-iterations 50 --json "$LOGS/curve_$mode.json" \
                --plot "$LOGS/curve_$mode.svg" >"$LOGS/curve_$mode.txt" 2>&1 || rc=$?
            grep -E "^ecdsa .*sigverifyd|^[0-9]+ +sigverifyd" "$LOGS/curve_$mode.txt" | sed "s/^/curve $mode /" | fig extras
            stop_daemon
        done
    fi
    if [[ $PREBUILT -eq 1 && -n "${CONFIRM_CHECK-1}" ]]; then
        for rule in groups strict; do
            (($(left) >= 40)) || break
            flag=""
            [[ $rule == strict ]] && flag="--strict-confirm"
            start_daemon "$LOGS/sigverifyd_confirm.log" || { stop_daemon; rc=1; break; }
            tmo "$SV" bench --runtime-dir "$RT" --sizes "$BENCH_BIG" --tables ecdsa,multisig --skip-single-thread \
                --repeat 2 --budget 3 --clients 0 --latency-iterations 10 $flag >"$LOGS/confirm_$rule.txt" 2>&1 || rc=$?
            grep -E " $BENCH_BIG .*sigverifyd|differed" "$LOGS/confirm_$rule.txt" | sed "s/^/confirm $rule /" | fig extras
            stop_daemon
        done
    fi
    if [[ $PREBUILT -eq 1 && -n "${DAEMON_ALT-x}" ]] && (($(left) >= 40)); then
        local alt=${DAEMON_ALT:---gpu-chunk-rows 524288 --gpu-chunks-in-flight 2}
        if start_daemon "$LOGS/sigverifyd_alt.log" $alt; then
            tmo "$SV" bench --runtime-dir "$RT" --sizes "$BENCH_BIG" --skip-single-thread --repeat 3 --budget 3 \
                --invalid-rate 0 --clients 0 --latency-iterations 10 >"$LOGS/bench_alt.txt" 2>&1 || rc=$?
            grep -E " $BENCH_BIG .*sigverifyd|differed" "$LOGS/bench_alt.txt" | sed "s/^/alt $alt /" | fig extras
        fi
        stop_daemon
    fi
    if [[ $NO_GPU -eq 0 ]]; then
        local runs=() r name cmd
        if [[ -n "${RUNS:-}" ]]; then  # "name:binary args;..." (binary in the carried bin/)
            IFS=';' read -r -a specs <<<"$RUNS"
            for r in "${specs[@]}"; do runs+=("${r%%:*}:$BIN/${r#*:}"); done
        else
            for r in "${VARIANT_NAMES[@]}"; do
                [[ $r == prebatch || $r == v2d ]] && continue  # phase 3 ran them
                [[ -x "$BIN/gpu_check_$r" ]] && runs+=("$r:$BIN/gpu_check_$r")
            done
            runs+=("tpb64:$BIN/gpu_check --tpb 64" "tpb256:$BIN/gpu_check --tpb 256" "tpb32:$BIN/gpu_check --tpb 32")
        fi
        for r in "${runs[@]}"; do
            name=${r%%:*} cmd=${r#*:}
            (($(left) >= 20)) || { echo "variant $name: no time left" | fig extras; continue; }
            tmo $cmd --rows "$EXTRA_ROWS" >"$LOGS/gpu_check_$name.txt" 2>&1 || rc=$?
            table_lines "$LOGS/gpu_check_$name.txt" | sed "s/^/$name /" | fig extras
        done
        if [[ -x "$CARRY/bin/imad_rate" ]] && (($(left) >= 15)); then
            tmo "$CARRY/bin/imad_rate" "${IMAD_SECONDS:-2}" >"$LOGS/imad_rate.txt" 2>&1 || rc=$?
            sed 's/^/imad_rate /' "$LOGS/imad_rate.txt" | head -10 | fig extras
        fi
    fi
    [[ $rc -eq 124 ]] && return 0  # extras end when the time does
    return $rc
}

# Is there a GPU at all? (gpu_check opens it and runs its self-test: a second or two.)
if [[ $NO_GPU -eq 0 ]]; then
    if [[ -x "$BIN/gpu_check" ]]; then
        timeout 60 "$BIN/gpu_check" --self-test-only >"$LOGS/probe.txt" 2>&1
        probe=$?
        say "probe: gpu_check --self-test-only exit $probe: $(grep -E 'GPU [0-9]|self-test|no GPU|FAIL' "$LOGS/probe.txt" | tr '\n' ' ' | cut -c1-300)"
        [[ $probe -eq 77 ]] && NO_GPU=1
    else
        NO_GPU=1
    fi
fi
#         name               max min reserve (the later phases' min)
run_phase kernel-correctness 200 60 195 phase_kernel_correctness
run_phase daemon-correctness 150 40 155 phase_daemon_correctness
run_phase sanitizer          120 30 125 phase_sanitizer
run_phase kernel-rate        120 30  95 phase_kernel_rate
run_phase nsight             150 40  55 phase_nsight
run_phase daemon-e2e         150 40  15 phase_daemon_e2e
run_phase extras             600 15   0 phase_extras
say "phases: $(cut -f1,2 "$WORK/phases.tsv" | tr '\t\n' '= ')"
# Without a GPU nothing on a GPU was checked: exit 77 (skipped), unless a phase that ran failed;
# a dry run passes when nothing that ran failed.
[[ $FAILED -eq 1 ]] && exit 1
[[ $NO_GPU -eq 1 && $DRY_RUN -eq 0 ]] && exit 77
exit 0
