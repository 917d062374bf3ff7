#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Go parts through the go tool, against private daemons:
#   client  go/: go vet, CGO_ENABLED=0 go build, go test -race (a real
#           sigverifyd, rows from `sigverify gen`, the BIP-340 vectors, a
#           hostile daemon stand-in), the allocation test without -race, and
#           one pass of every benchmark (-benchtime 1x: they run, not timed)
#   nostr   examples/go/nostr-verify: go vet, CGO_ENABLED=0 go build, go test
#           -race, and `go run . FILE` from its folder against a daemon found
#           through SIGVERIFY_RUNTIME_DIR
# Exits 77 (skipped) without go. Nothing is downloaded: the modules use the
# standard library only (GOPROXY=off, GOFLAGS=-mod=readonly). GOPATH lives in
# the build directory, so any HOME works (CI runs as root); the build cache is
# the user's own where it is usable (it is content-addressed, safe to share
# between checkouts, and a fresh clone then does not compile the standard
# library again for -race), else one in the build directory.
# usage: test_go.sh client|nostr SOURCE_DIR BINARY_DIR SIGVERIFYD SIGVERIFY_CLI
set -euo pipefail
what=$1 SRC=$2 BIN=$3
export SIGVERIFYD=$4 SIGVERIFY_CLI=$5
GO=$(command -v go || true)
if [ -z "$GO" ]; then
  echo "SKIP: no go tool (Debian: apt-get install golang-go)"
  exit 77
fi
cache=$("$GO" env GOCACHE 2>/dev/null || true)
case $cache in /*) mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] || cache= ;; *) cache= ;; esac
[ -n "$cache" ] || cache=$BIN/gocache
mkdir -p "$cache" "$BIN/gopath"
export GOCACHE=$cache GOPATH=$BIN/gopath GOMODCACHE=$BIN/gopath/pkg/mod GOPROXY=off GOFLAGS=-mod=readonly
export GOTOOLCHAIN=local GO111MODULE=on GOTELEMETRY=off
# -race needs cgo; the cgo test helper needs libsecp256k1's pkg-config file.
export CGO_ENABLED=1
"$GO" version
step() { echo "==> $*"; "$@"; }

case $what in
client)
  cd "$SRC/go"
  step "$GO" vet ./...
  CGO_ENABLED=0 step "$GO" build ./...
  CGO_ENABLED=0 step "$GO" vet ./...
  step "$GO" test -race -count=1 -timeout 300s ./...
  # The race detector's own bookkeeping may allocate; the promise is for
  # the plain build.
  step "$GO" test -count=1 -run 'Allocations' -v ./...
  step "$GO" test -count=1 -run '^$' -bench . -benchtime 1x -benchmem ./...
  ;;
nostr)
  cd "$SRC/examples/go/nostr-verify"
  step "$GO" vet ./...
  CGO_ENABLED=0 step "$GO" build -o "$BIN/nostr-verify" .
  step "$GO" test -race -count=1 -timeout 300s ./...
  # go run . FILE from the folder, as docs/go.md shows it.
  source "$SRC/tests/support/daemon_test.sh" go-nostr
  "$SIGVERIFYD" --foreground --runtime-dir "$T/run" --cpu-threads 2 --log-file "$T/daemon.log" &
  DPID=$!
  wait_for_socket "$T/run/sigverifyd.sock"
  "$GO" test -count=1 -run 'TestWriteSample' . -args -sample "$T/events.jsonl" >/dev/null
  out=$(SIGVERIFY_RUNTIME_DIR=$T/run "$GO" run . "$T/events.jsonl")
  echo "$out" | tail -3
  last=$(tail -1 <<<"$out")
  [[ $last =~ ^events=8\ valid=3\ invalid=3\ malformed=2\ seconds=[0-9.]+\ events/s=[0-9.]+$ ]] ||
    fail "summary line: $last"
  ;;
*) echo "usage: $0 client|nostr SOURCE_DIR BINARY_DIR SIGVERIFYD SIGVERIFY_CLI" >&2; exit 2 ;;
esac
echo PASS
