# SPDX-License-Identifier: MIT
# Sourced by the shell tests that start a private sigverifyd (bash, set -euo pipefail):
#   source "$(dirname "${BASH_SOURCE[0]}")/../support/daemon_test.sh" NAME
# gives them a scratch directory $T (/tmp/sigverify-NAME-XXXXXX, removed on exit),
# $DPID (set it to the daemon's pid: it gets SIGTERM and is waited for on exit),
# fail MESSAGE (prints the daemon log's tail when there is one, exits 1), and
# wait_for_socket PATH (up to 10 s for a daemon socket to appear).
T=$(mktemp -d "/tmp/sigverify-$1-XXXXXX")
DPID=
cleanup() {
  if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then kill -TERM "$DPID"; wait "$DPID" || true; fi
  rm -rf "$T"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  if [ -f "$T/daemon.log" ]; then tail -20 "$T/daemon.log" >&2; fi
  exit 1
}
wait_for_socket() {
  for _ in $(seq 200); do [ -S "$1" ] && return 0; sleep 0.05; done
  fail "sigverifyd did not come up: no socket $1"
}
