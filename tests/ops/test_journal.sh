#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --log-format auto under systemd: when JOURNAL_STREAM names the daemon's
# stderr it logs through the journal's native protocol (one datagram per line
# with PRIORITY= from the level, SYSLOG_IDENTIFIER=sigverifyd, the message
# without a timestamp of ours) and writes nothing to stderr; when
# JOURNAL_STREAM names another file it logs text to stderr. The journal is a
# datagram socket bound by this test at /run/systemd/journal/socket inside a
# private mount namespace (a tmpfs over /run), so no journald is needed.
# usage: test_journal.sh SIGVERIFYD_BIN
set -euo pipefail
BIN=$1
if [ "${SIGVERIFY_TEST_PRIVATE_RUN:-}" != 1 ]; then
  # A mount namespace needs CAP_SYS_ADMIN: containers without it cannot run this.
  if ! unshare -m true 2>/dev/null; then echo "unshare -m not permitted here: skipped"; exit 77; fi
  exec env SIGVERIFY_TEST_PRIVATE_RUN=1 unshare -m --propagation private "$0" "$@"
fi
mount -t tmpfs -o mode=0755 sigverify-test-run /run
mkdir -p /run/systemd/journal
T=$(mktemp -d /tmp/sigverify-journal-XXXXXX)
DPID= JPID=
cleanup() {
  if [ -n "$DPID" ] && kill -0 "$DPID" 2>/dev/null; then kill -KILL "$DPID"; fi
  if [ -n "$JPID" ] && kill -0 "$JPID" 2>/dev/null; then kill -KILL "$JPID"; wait "$JPID" 2>/dev/null || true; fi
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$T/journal.jsonl" ] && sed 's/^/  journal: /' "$T/journal.jsonl" >&2; exit 1; }

# The journal: each datagram of the native protocol ("KEY=value" lines, or
# "KEY", a 64-bit little-endian length and binary data) as one JSON object.
/usr/bin/python3 - "$T/journal.jsonl" <<'PY' &
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/run/systemd/journal/socket")
out = open(sys.argv[1], "a", buffering=1)
while True:
    data = s.recv(1 << 20)
    fields, i = {}, 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if b"=" in line:
            key, value = line.split(b"=", 1)
            i = nl + 1
        else:
            key = line
            (size,) = struct.unpack_from("<Q", data, nl + 1)
            value = data[nl + 9:nl + 9 + size]
            i = nl + 9 + size + 1
        fields[key.decode()] = value.decode(errors="replace")
    out.write(json.dumps(fields) + "\n")
PY
JPID=$!
for _ in $(seq 100); do [ -S /run/systemd/journal/socket ] && break; sleep 0.05; done
[ -S /run/systemd/journal/socket ] || fail "the test journal did not come up"

# stderr is a file; JOURNAL_STREAM names it, as systemd does for a unit whose stderr is the journal.
: > "$T/stderr"
JOURNAL_STREAM=$(stat -c '%d:%i' "$T/stderr") "$BIN" --foreground --runtime-dir "$T/run" --backend cpu \
  --cpu-threads 1 2>>"$T/stderr" &
DPID=$!
for _ in $(seq 600); do grep -q 'listening on' "$T/journal.jsonl" 2>/dev/null && break; sleep 0.05; done
kill -HUP "$DPID"
for _ in $(seq 100); do grep -q 'SIGHUP: reloaded' "$T/journal.jsonl" && break; sleep 0.05; done
kill -TERM "$DPID"
rc=0; wait "$DPID" || rc=$?
DPID=
[ "$rc" = 0 ] || fail "exit $rc"
/usr/bin/python3 - "$T/journal.jsonl" <<'PY' || fail "journal entries"
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1])]
def find(text):
    hits = [e for e in entries if text in e.get("MESSAGE", "")]
    assert hits, f"no journal entry with {text!r}"
    return hits[0]
listening = find("listening on")
assert listening["PRIORITY"] == "6", listening           # info
assert listening["SYSLOG_IDENTIFIER"] == "sigverifyd", listening
assert listening["MESSAGE"].startswith("sigverifyd "), listening  # no "[2026-...] [info]" of ours
assert find("SIGHUP: reloaded")["PRIORITY"] == "4"        # warn
assert find("stopped")["PRIORITY"] == "6"
print(f"{len(entries)} journal entries, priorities and identifier as expected")
PY
[ ! -s "$T/stderr" ] || fail "the daemon also wrote to stderr: $(cat "$T/stderr")"

# JOURNAL_STREAM naming another file (stderr was redirected): text on stderr, nothing to the journal.
before=$(wc -l < "$T/journal.jsonl")
JOURNAL_STREAM=1:1 "$BIN" --foreground --runtime-dir "$T/run" --backend cpu --cpu-threads 1 2>"$T/stderr2" &
DPID=$!
for _ in $(seq 600); do grep -q 'listening on' "$T/stderr2" && break; sleep 0.05; done
kill -TERM "$DPID"
rc=0; wait "$DPID" || rc=$?
DPID=
[ "$rc" = 0 ] || fail "exit $rc (stderr not the journal)"
grep -q '^\[20[0-9-]* [0-9:.]*\] \[sigverifyd\] \[info\] sigverifyd .* listening on' "$T/stderr2" ||
  fail "no text log line on stderr: $(cat "$T/stderr2")"
[ "$(wc -l < "$T/journal.jsonl")" = "$before" ] || fail "logged to the journal although stderr is not the journal"
echo PASS
