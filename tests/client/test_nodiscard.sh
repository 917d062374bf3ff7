#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A dropped status warns: the C++ API's [[nodiscard]] and the C ABI's
# warn_unused_result (SIGVERIFY_NODISCARD, sigverify/export.h). Compiles
# nodiscard/dropped_status.cpp and .c (compiled to no object, nothing runs; GCC checks warn_unused_result only when it generates code): every line
# marked DROPPED must draw a -Wunused-result warning and no other line any;
# with -Werror=unused-result the compile must fail, and the control part of
# each file (its used() function) alone must compile with -Werror.
# usage: test_nodiscard.sh SOURCE_DIR BUILD_DIR CXX CC
set -euo pipefail
SRC=$1 BUILD=$2 CXX=$3 CC=$4
HERE=$SRC/tests/client/nodiscard
T=$(mktemp -d /tmp/sigverify-nodiscard-XXXXXX)
trap 'rm -rf "$T"' EXIT
errors=0
fail() { echo "FAIL: $*" >&2; errors=$((errors + 1)); }
INC=(-I"$SRC/client/include" -I"$SRC/shm_protocol/include" -I"$BUILD/include")

check() {  # check LANGUAGE FILE COMPILER FLAGS...
  local lang=$1 file=$2 cc=$3 before=$errors; shift 3
  # Every warning of the file, as line numbers (-Wall -Wextra: any other warning fails too).
  "$cc" "$@" "${INC[@]}" -c -o /dev/null -Wall -Wextra -Wunused-result -fno-diagnostics-show-caret \
    "$file" 2>"$T/$lang.err" || { cat "$T/$lang.err"; fail "$lang: the file does not compile"; return; }
  grep -E "^$file:[0-9]+:[0-9]+: warning:" "$T/$lang.err" | cut -d: -f2 | sort -un >"$T/$lang.warned"
  # The comment at the top names DROPPED too: only call lines count.
  grep -nE '^\s+[a-zA-Z(].*(DROPPED)' "$file" | cut -d: -f1 | sort -un >"$T/$lang.marked"
  local n; n=$(wc -l <"$T/$lang.marked")
  [ "$n" -ge 15 ] || fail "$lang: only $n DROPPED lines found"
  if ! diff -u "$T/$lang.marked" "$T/$lang.warned" >"$T/$lang.diff"; then
    cat "$T/$lang.err"; cat "$T/$lang.diff"
    fail "$lang: warned lines (+) differ from the DROPPED lines (-)"
  fi
  grep -q 'unused-result' "$T/$lang.err" || fail "$lang: no -Wunused-result warning at all"
  # -Werror=unused-result: a dropped status stops the build.
  if "$cc" "$@" "${INC[@]}" -c -o /dev/null -Werror=unused-result "$file" 2>/dev/null; then
    fail "$lang: compiles with -Werror=unused-result although statuses are dropped"
  fi
  # The control alone (dropped() removed) compiles with every warning an error.
  awk '/^(void|int) dropped\(/ { skip = 1 } skip && /^}/ { skip = 0; next } !skip' "$file" >"$T/control.$lang"
  "$cc" "$@" "${INC[@]}" -x "$lang" -c -o /dev/null -Wall -Wextra -Werror "$T/control.$lang" 2>"$T/$lang.control.err" ||
    { cat "$T/$lang.control.err"; fail "$lang: the control does not compile with -Werror"; }
  [ "$errors" -ne "$before" ] || echo "$lang: $n dropped statuses warn, the control compiles with -Werror"
}

check c++ "$HERE/dropped_status.cpp" "$CXX" -std=c++20
check c "$HERE/dropped_status.c" "$CC" -std=c11

[ $errors -eq 0 ] || { echo "$errors failure(s)" >&2; exit 1; }
echo "PASS"
