#!/usr/bin/env bash
# GPU check for sigverifyd's CUDA kernels: build for sm_90 on the GPU machine,
# run the self-test, the GPU-vs-oracle differential on every table and the
# 4-table benchmark, and write everything to $OUT. See docs/kernels.md.
#
#   scripts/gpu-check.sh stage   (on the machine WITHOUT a GPU, before the run)
#       Copies libsecp256k1's headers and static library into
#       build-gpu-deps/secp256k1/ (ignored by git). Pass `carry:
#       ["build-gpu-deps"]` to the device run so the check compares the GPU
#       against libsecp256k1 itself. Without it the script still runs, with
#       the host-compiled kernel math as the oracle, and says so.
#
#   scripts/gpu-check.sh         (on the GPU machine)
#       Env: OUT (log folder, default ./gpu-check-out), ROWS (rows per table,
#       default 1000000), EXTRA_ROWS (rows per table of the variant runs,
#       default 300000), ARCH (default sm_90), JOBS (default nproc).
#
# Needs there: nvcc (CUDA 12+; PATH or /usr/local/cuda/bin), g++ with C++20,
# nvidia driver. Not needed: CMake, Catch2, spdlog, Boost, libsecp256k1-dev
# (the build is plain nvcc/g++ over the few sources gpu_check uses).
# Files in $OUT: summary.txt, env.txt, build.log, ptxas.txt, gpu_check.txt
# (main run), gpu_check_tpb256.txt, gpu_check_{inline,regcap,batch8}.txt
# (kernel variants at EXTRA_ROWS; skipped past VARIANT_DEADLINE, default 420 s).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEPS="$ROOT/build-gpu-deps/secp256k1"

if [[ "${1:-}" == "stage" ]]; then
    inc=""
    for d in /usr/include /usr/local/include; do
        [[ -f "$d/secp256k1.h" ]] && inc="$d" && break
    done
    lib=""
    for d in /usr/lib/x86_64-linux-gnu /usr/local/lib /usr/lib; do
        [[ -f "$d/libsecp256k1.a" ]] && lib="$d/libsecp256k1.a" && break
    done
    if [[ -z "$inc" || -z "$lib" ]]; then
        echo "stage: libsecp256k1 headers or static library not found here" >&2
        exit 1
    fi
    mkdir -p "$DEPS/include" "$DEPS/lib"
    cp "$inc"/secp256k1*.h "$DEPS/include/"
    cp "$lib" "$DEPS/lib/"
    echo "staged libsecp256k1 from $inc and $lib into ${DEPS#$ROOT/} ($(du -sh "$DEPS" | cut -f1)); carry build-gpu-deps"
    exit 0
fi

OUT=${OUT:-$ROOT/gpu-check-out}
ROWS=${ROWS:-1000000}
EXTRA_ROWS=${EXTRA_ROWS:-300000}
ARCH=${ARCH:-sm_90}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
BUILD=$(mktemp -d /tmp/sigverify-gpu-check.XXXXXX)
mkdir -p "$OUT"
: >"$OUT/summary.txt"
say() { echo "[gpu-check] $*" | tee -a "$OUT/summary.txt"; }

NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CXX=${CXX:-g++}
{
    date -u
    uname -a
    nvidia-smi 2>&1 || echo "nvidia-smi: not available"
    "$NVCC" --version 2>&1 || echo "nvcc: not found at $NVCC"
    "$CXX" --version 2>&1 | head -1 || echo "$CXX: not found"
    echo "cores: $JOBS"
} >"$OUT/env.txt" 2>&1
say "repo $ROOT ($(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo 'no git')), build dir $BUILD"
if [[ ! -x "$NVCC" ]]; then say "FAIL: nvcc not found (set NVCC=)"; exit 2; fi
if ! command -v "$CXX" >/dev/null; then say "FAIL: host compiler $CXX not found (set CXX=)"; exit 2; fi
CUDA_HOME=$(cd "$(dirname "$NVCC")/.." && pwd)

# --- oracle: libsecp256k1 if staged or installed, else the host kernel math
REF_FLAGS=()
REF_SRCS=()
REF_LIBS=()
if [[ -f "$DEPS/include/secp256k1.h" && -f "$DEPS/lib/libsecp256k1.a" ]]; then
    REF_FLAGS=(-DSIGVERIFY_GPU_CHECK_WITH_REFERENCE=1 -I"$DEPS/include")
    REF_LIBS=("$DEPS/lib/libsecp256k1.a")
    say "oracle: libsecp256k1 (staged in build-gpu-deps)"
elif [[ -f /usr/include/secp256k1.h ]] && ls /usr/lib/*/libsecp256k1.* /usr/lib/libsecp256k1.* >/dev/null 2>&1; then
    REF_FLAGS=(-DSIGVERIFY_GPU_CHECK_WITH_REFERENCE=1)
    REF_LIBS=(-lsecp256k1)
    say "oracle: libsecp256k1 (system)"
else
    say "oracle: host-compiled kernel math (libsecp256k1 not found: run 'scripts/gpu-check.sh stage' on the build machine and carry build-gpu-deps for the stronger check)"
fi
if [[ ${#REF_FLAGS[@]} -gt 0 ]]; then
    REF_SRCS=("$ROOT/reference/reference_verifier.cpp" "$ROOT/reference/row_generator.cpp")
fi

# --- build: host objects with g++, the kernel twice with nvcc (default: big
# functions as device calls; inline: everything inlined), all in parallel
CXXFLAGS=(-std=c++20 -O3 -DNDEBUG -I"$ROOT" -I"$CUDA_HOME/include" -pthread)
NVFLAGS=(-std=c++17 -O3 -DNDEBUG -I"$ROOT" -gencode "arch=compute_${ARCH#sm_},code=$ARCH"
    -gencode "arch=compute_${ARCH#sm_},code=compute_${ARCH#sm_}" -Xptxas -v)
say "building for $ARCH with $NVCC ($("$NVCC" --version | grep -o 'release [0-9.]*'))"
t0=$(date +%s)
pids=()
compile() {  # out, cmd...
    local out=$1
    shift
    ( "$@" >"$BUILD/$out.log" 2>&1 || { echo "FAILED: $*" >>"$BUILD/$out.log"; exit 1; } ) &
    pids+=($!)
}
compile kernel_math.o "$CXX" "${CXXFLAGS[@]}" -c "$ROOT/kernels/kernel_math.cpp" -o "$BUILD/kernel_math.o"
compile gpu_common.o "$CXX" "${CXXFLAGS[@]}" -c "$ROOT/kernels/gpu_common.cpp" -o "$BUILD/gpu_common.o"
compile gpu_check.o "$CXX" "${CXXFLAGS[@]}" "${REF_FLAGS[@]}" -c "$ROOT/tests/kernels/gpu_check.cpp" -o "$BUILD/gpu_check.o"
for s in "${REF_SRCS[@]}"; do
    b=$(basename "$s" .cpp)
    compile "$b.o" "$CXX" "${CXXFLAGS[@]}" "${REF_FLAGS[@]}" -c "$s" -o "$BUILD/$b.o"
done
compile gpu_verifier.o "$NVCC" "${NVFLAGS[@]}" -c "$ROOT/kernels/gpu_verifier.cu" -o "$BUILD/gpu_verifier.o"
fail=0
for p in "${pids[@]}"; do wait "$p" || fail=1; done
cat "$BUILD"/*.o.log >"$OUT/build.log"
grep -E "Compiling entry|Used [0-9]+ registers|stack frame" "$BUILD/gpu_verifier.o.log" >"$OUT/ptxas.txt" 2>/dev/null
if [[ $fail -ne 0 ]]; then
    say "FAIL: build (see build.log)"
    grep -B2 -A8 -E "error|FAILED" "$OUT/build.log" | head -40 | tee -a "$OUT/summary.txt"
    exit 2
fi
HOST_OBJS=("$BUILD/kernel_math.o" "$BUILD/gpu_common.o" "$BUILD/gpu_check.o")
for s in "${REF_SRCS[@]}"; do HOST_OBJS+=("$BUILD/$(basename "$s" .cpp).o"); done
LINK=(-L"$CUDA_HOME/lib64" -lcudart_static -ldl -lrt -pthread)
"$CXX" -o "$BUILD/gpu_check" "${HOST_OBJS[@]}" "$BUILD/gpu_verifier.o" "${REF_LIBS[@]}" "${LINK[@]}" >>"$OUT/build.log" 2>&1
if [[ $? -ne 0 ]]; then
    for v in "${!VPIDS[@]}"; do kill "${VPIDS[$v]}" 2>/dev/null; done
    say "FAIL: link (see build.log)"
    tail -20 "$OUT/build.log" | tee -a "$OUT/summary.txt"
    exit 2
fi
say "built in $(($(date +%s) - t0))s; registers: $(grep -h -o 'Used [0-9]* registers' "$OUT/ptxas.txt" | tr '\n' ' ')"

# Kernel variants, compiled in parallel after the main run (so that its CPU
# figures have the whole machine):
#   inline  -DSV_GPU_INLINE_ALL        everything inlined into the kernel
#   regcap  -DSV_MIN_BLOCKS_PER_SM=2   registers capped at 128
#   batch8  -DSV_VERIFY_BATCH=8        8 rows per thread share an inversion
# GPU_CHECK_VARIANTS picks them (space-separated; empty = none); fastest compile first.
read -r -a VARIANTS <<<"${GPU_CHECK_VARIANTS-regcap batch8 inline}"
declare -A VDEFS=([inline]="-DSV_GPU_INLINE_ALL" [regcap]="-DSV_MIN_BLOCKS_PER_SM=2" [batch8]="-DSV_VERIFY_BATCH=8")
declare -A VPIDS=()
start_variants() {
    for v in "${VARIANTS[@]}"; do
        # the batch size is also used by host code (kernel_math.cpp): only the kernel changes here
        "$NVCC" "${NVFLAGS[@]}" ${VDEFS[$v]} -c "$ROOT/kernels/gpu_verifier.cu" -o "$BUILD/gpu_verifier_$v.o" \
            >"$BUILD/variant_$v.log" 2>&1 &
        VPIDS[$v]=$!
    done
}

# --- runs
rc_main=0
run() {  # name, timeout, args...
    local name=$1 limit=$2
    shift 2
    say "run $name: $*"
    local t=$(date +%s)
    timeout "$limit" "$@" >"$OUT/$name.txt" 2>&1
    local rc=$?
    say "  $name exit $rc after $(($(date +%s) - t))s: $(grep -E '^RESULT|^self-test|no GPU' "$OUT/$name.txt" | tr '\n' ' ')"
    return $rc
}
# Whole script budget: one device command may run 600 s; keep well inside it.
run gpu_check 300 "$BUILD/gpu_check" --rows "$ROWS"
rc_main=$?
grep -E "^(table|ecdsa|multisig|schnorr|threshold) " "$OUT/gpu_check.txt" | tee -a "$OUT/summary.txt"
if [[ $rc_main -eq 0 ]] && ! grep -q "no GPU" "$OUT/gpu_check.txt"; then
    start_variants
    say "variant runs below share the CPU with the variant compiles: compare their GPU columns only"
    run gpu_check_tpb256 90 "$BUILD/gpu_check" --rows "$EXTRA_ROWS" --tpb 256
    grep -E "^(table|ecdsa|multisig|schnorr|threshold) " "$OUT/gpu_check_tpb256.txt" | sed 's/^/tpb256 /' | tee -a "$OUT/summary.txt"
    for v in "${VARIANTS[@]}"; do
        pid=${VPIDS[$v]:-}
        [[ -z "$pid" ]] && continue
        # wait for the compile, but not past the deadline
        while kill -0 "$pid" 2>/dev/null && [[ $SECONDS -lt ${VARIANT_DEADLINE:-420} ]]; do sleep 2; done
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null
            say "variant $v still compiling at ${SECONDS}s: skipped"
            continue
        fi
        if [[ $SECONDS -ge ${VARIANT_DEADLINE:-420} ]]; then
            say "variant $v: past the deadline, skipped"
            continue
        fi
        if wait "$pid" &&
            "$CXX" -o "$BUILD/gpu_check_$v" "${HOST_OBJS[@]}" "$BUILD/gpu_verifier_$v.o" "${REF_LIBS[@]}" "${LINK[@]}" >>"$BUILD/variant_$v.log" 2>&1; then
            { echo "--- variant $v (${VDEFS[$v]})"; grep -E "Compiling entry|Used [0-9]+ registers|stack frame" "$BUILD/variant_$v.log" | head -3; } >>"$OUT/ptxas.txt"
            run "gpu_check_$v" 90 "$BUILD/gpu_check_$v" --rows "$EXTRA_ROWS"
            grep -E "^(table|ecdsa|multisig|schnorr|threshold) " "$OUT/gpu_check_$v.txt" | sed "s/^/$v /" | tee -a "$OUT/summary.txt"
        else
            say "variant $v failed to build (build.log)"
        fi
    done
fi
for v in "${VARIANTS[@]}"; do
    pid=${VPIDS[$v]:-}
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then kill "$pid" 2>/dev/null; fi
    cat "$BUILD/variant_$v.log" >>"$OUT/build.log" 2>/dev/null
done
say "done after ${SECONDS}s: gpu_check exit $rc_main"
exit $rc_main
