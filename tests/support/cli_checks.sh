# SPDX-License-Identifier: MIT
# Sourced by the CLI shell tests that count their checks (set -u, not -e):
#   source "$(dirname "${BASH_SOURCE[0]}")/<up>/support/cli_checks.sh"
# after they set $dir (their scratch directory). Gives ok, fail MESSAGE
# (counts and prints, goes on), expect_status CODE WHAT COMMAND... (runs the
# command with its output in $dir/out and $dir/err, checks its exit status),
# and finish (prints the counts; its status is the tests').
passed=0 failed=0
ok() { passed=$((passed + 1)); }
fail() { failed=$((failed + 1)); echo "FAIL: $*"; }
expect_status() {  # expect_status CODE description command...
  local want=$1 what=$2; shift 2
  "$@" >"$dir/out" 2>"$dir/err"; local got=$?
  if [ "$got" -eq "$want" ]; then ok; else fail "$what: exit $got, want $want"; cat "$dir/out" "$dir/err"; fi
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
