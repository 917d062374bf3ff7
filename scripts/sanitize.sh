#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sanitizer builds and runs (CPU only, CUDA off), in build directories of their own.
#
#   scripts/sanitize.sh [asan|tsan|all]     (default: all)
#
# asan: ASan + UBSan (gcc), runs the ctest tests labelled unit or integration
#       (not long/differential/bench/gpu, nor kernel v1 math or the symbol list) — real sigverifyd and client processes,
#       all instrumented, the client library too (test_c_abi_versions puts old C callers' option structs at the end
#       of heap blocks of exactly their size). Any report fails the run (abort_on_error, halt_on_error).
# tsan: ThreadSanitizer, runs the ring and scheduler tests: the ring ABI tests and
#       the raw/hostile clients against an instrumented daemon (test_daemon_ring),
#       the scheduler under concurrent client processes (test_daemon_e2e),
#       registered buffers (test_daemon_columns [registered]), the
#       cross-checking backend, the GPU launch coalescer (with a CPU launch), the
#       confirmation rule against a lying host-kernel GPU in real daemons
#       (test_daemon_lying, less its longest case [sample]), and the reference
#       verifier's thread pool.
#
# Only the targets the selected tests need are built. Environment:
#   SANITIZE_ASAN_DIR, SANITIZE_TSAN_DIR   build directories (default $ROOT/build-asan, $ROOT/build-tsan)
#   SANITIZE_ASAN_LABELS                   ctest -L regex (default "unit|integration")
#   SANITIZE_ASAN_EXCLUDE                  ctest -LE regex (default "long|differential|bench|gpu|fuzz|cli|vectors|generator|package|install|docs")
#   SANITIZE_JOBS                          build and ctest parallelism (default nproc)
#   SANITIZE_DEBUG_INFO                    debug-info flag (default -g1: line tables; -g for a debugger)
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

what=${1:-all}
case "$what" in asan | tsan | all) ;; *)
  echo "usage: $0 [asan|tsan|all]" >&2
  exit 2
  ;;
esac
JOBS=${SANITIZE_JOBS:-$(nproc)}
ASAN_DIR=${SANITIZE_ASAN_DIR:-$ROOT/build-asan}
# -g1: line tables only, which is all a sanitizer report prints (file:line per
# frame); full -g made the ASan compile of daemon/schedule/scheduler.cpp 35-50 % slower.
DEBUG_INFO=${SANITIZE_DEBUG_INFO:--g1}
TSAN_DIR=${SANITIZE_TSAN_DIR:-$ROOT/build-tsan}

install_packages --tests

# configure DIR FLAGS
# Ninja, not Makefiles: CMake's top-level Makefile is .NOTPARALLEL, so
# `cmake --build --target a --target b ...` builds the named targets one after
# another, and the tests here are one source file each: a Makefiles build of
# two dozen of them used one core. Ninja builds them all at once. A directory
# configured for another generator is reconfigured from scratch.
configure() {
  local dir=$1 flags=$2
  echo "==> configuring $dir ($flags)"
  if [ -f "$dir/CMakeCache.txt" ] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$dir/CMakeCache.txt"; then
    rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
  fi
  # The Debug type's own flags are only the debug info (CMake's default, -g,
  # would override -g1).
  cmake -S "$ROOT" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DSIGVERIFY_CUDA=OFF -DSIGVERIFY_BUILD_TESTS=ON \
    -DCMAKE_C_FLAGS_DEBUG="$DEBUG_INFO" -DCMAKE_CXX_FLAGS_DEBUG="$DEBUG_INFO" \
    -DCMAKE_C_FLAGS="$flags" -DCMAKE_CXX_FLAGS="$flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_SHARED_LINKER_FLAGS="$flags" >/dev/null
}

# Test names of a ctest selection (sigverify_add_test: test name = target name).
selected_tests() {
  local dir=$1
  shift
  (cd "$dir" && ctest -N "$@" | sed -n 's/^ *Test *#[0-9]*: *//p')
}

# build DIR TARGETS...: only what the tests need (sigverifyd for the real-process tests).
# Tests without a target of their own (scripts such as test_layers) are left out.
build_targets() {
  local dir=$1
  shift
  local known args=() names=()
  known=$(cmake --build "$dir" --target help | sed -n 's/^\([^ :]*\): .*/\1/p')
  for t in "$@"; do
    if grep -qx -- "$t" <<<"$known"; then
      args+=(--target "$t")
      names+=("$t")
    fi
  done
  echo "==> building in $dir: ${names[*]}"
  cmake --build "$dir" -j "$JOBS" "${args[@]}"
}

run_asan() {
  local start=$SECONDS
  configure "$ASAN_DIR" "-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -O1"
  local labels=${SANITIZE_ASAN_LABELS:-unit|integration}
  # Every test has a size class (tests/CMakeLists.txt): the component labels
  # below keep out what needs no sanitizer or builds what this directory does
  # not (the CLI's scripts, packages, installs, fuzzing, generators).
  local exclude=${SANITIZE_ASAN_EXCLUDE:-long|differential|bench|gpu|fuzz|cli|vectors|generator|package|install|docs}
  # Left out by name: kernel v1's math in both forms (v2, the kernel that runs,
  # and the row parser stay) and the checks of the library's interface, which
  # read the built files rather than run code (no memory to check): the exported
  # symbols, the ABI baseline, the version numbers, the nodiscard warnings; and
  # the operators' shell tests, which run programs this build does not make.
  local names=${SANITIZE_ASAN_EXCLUDE_NAMES:-^(test_kernel_math|test_kernel_math_devform|test_exports|test_abi|test_version|test_nodiscard|test_systemd_units|test_exit_codes|test_sandbox|test_journal|test_monitoring|test_lbtc_compat|test_example_node)\$}
  mapfile -t tests < <(selected_tests "$ASAN_DIR" -L "$labels" -LE "$exclude" -E "$names")
  [ ${#tests[@]} -gt 0 ] || { echo "no tests selected" >&2; return 1; }
  build_targets "$ASAN_DIR" sigverifyd "${tests[@]}"
  echo "==> ASan+UBSan: running ${tests[*]}"
  # Every process (tests, forked clients, spawned daemons) inherits these.
  # detect_leaks: LeakSanitizer runs at exit of every process that exits normally.
  export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=0:strict_string_checks=1:check_initialization_order=1
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

  (cd "$ASAN_DIR" && ctest --output-on-failure -j "$JOBS" -L "$labels" -LE "$exclude" -E "$names")
  echo "==> ASan+UBSan: clean ($((SECONDS - start)) s)"
}

run_tsan() {
  local start=$SECONDS
  configure "$TSAN_DIR" "-fsanitize=thread -O1"
  build_targets "$TSAN_DIR" sigverifyd test_daemon_ring test_daemon_e2e test_daemon_columns test_daemon_lying test_checked_backend test_launch_coalescer \
    test_scheduler test_lane_workers test_confirmation test_striped_backend test_split_planner test_in_place \
    test_reference_differential test_columns
  echo "==> TSan: ring, scheduler, GPU-path and pool tests"
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:die_after_fork=0:suppressions=$ROOT/scripts/tsan-suppressions.txt
  local b=$TSAN_DIR/tests
  local rc=0
  run1() {
    echo "--- $*"
    "$@" || rc=1
  }
  run1 "$b/daemon/test_daemon_ring"
  run1 "$b/daemon/test_daemon_e2e"
  run1 "$b/daemon/test_daemon_columns" "[registered]"
  run1 "$b/daemon/test_daemon_lying" "[lying]~[sample]"
  run1 "$b/backend/test_checked_backend"
  run1 "$b/backend/test_launch_coalescer"
  run1 "$b/backend/test_scheduler"
  run1 "$b/backend/test_lane_workers"
  run1 "$b/backend/test_confirmation"
  run1 "$b/backend/test_striped_backend"
  run1 "$b/backend/test_split_planner"
  run1 "$b/backend/test_in_place"
  run1 "$b/test_reference_differential" "thread count does not change verdicts; results are zeroed first"
  run1 "$b/columns/test_columns" "[pool]"
  [ $rc -eq 0 ] || { echo "==> TSan: FAILED" >&2; return 1; }
  echo "==> TSan: clean ($((SECONDS - start)) s)"
}

case "$what" in
asan) run_asan ;;
tsan) run_tsan ;;
all)
  run_asan
  run_tsan
  ;;
esac
