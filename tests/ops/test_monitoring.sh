#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# contrib/monitoring/ against the real daemon: the Grafana dashboard parses, is
# importable (datasource input, instance variable) and its queries are PromQL;
# the alert rules pass `promtool check rules` and their unit tests
# (tests/ops/sigverifyd-alerts.test.yml); the live exposition of daemons that
# verified rows passes `promtool check metrics` (stats socket and
# --metrics-textfile); and every metric name the dashboard and the rules use is
# in that exposition.
# usage: test_monitoring.sh SIGVERIFY_BIN SIGVERIFYD_BIN SOURCE_DIR
set -euo pipefail
CLI=$1 DAEMON=$2 SRC=$3
DASHBOARD=$SRC/contrib/monitoring/sigverifyd-dashboard.json
ALERTS=$SRC/contrib/monitoring/sigverifyd-alerts.yml
T=$(mktemp -d /tmp/sigverify-monitoring-XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do
    if kill -0 "$p" 2>/dev/null; then kill -TERM "$p"; wait "$p" || true; fi
  done
  rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# The interpreter itself, once: a version manager's shim costs a second a call on a busy machine.
PYTHON=$(python3 -c 'import sys; print(sys.executable)')

command -v promtool >/dev/null || fail "promtool not found: apt-get install prometheus (scripts/lib.sh installs it)"

# --- The dashboard: valid JSON that Grafana can import with its own datasource.
export PYTHONDONTWRITEBYTECODE=1  # importing monitoring_names.py leaves no __pycache__ in the source tree
"$PYTHON" -m json.tool "$DASHBOARD" >/dev/null || fail "$DASHBOARD is not valid JSON"
"$PYTHON" - "$DASHBOARD" <<'PY' || fail "dashboard structure"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schemaVersion"] >= 36, d["schemaVersion"]
assert any(i["name"] == "DS_PROMETHEUS" and i["pluginId"] == "prometheus" for i in d["__inputs"]), "no DS_PROMETHEUS input"
variables = {v["name"]: v for v in d["templating"]["list"]}
assert variables["DS_PROMETHEUS"]["type"] == "datasource", "no DS_PROMETHEUS datasource variable"
assert variables["instance"]["type"] == "query", "no instance variable"
def panels(ps):
    for p in ps:
        yield p
        yield from panels(p.get("panels", []))
all_panels = list(panels(d["panels"]))
ids = [p["id"] for p in all_panels]
assert len(ids) == len(set(ids)), "duplicate panel ids"
graphs = [p for p in all_panels if p["type"] != "row"]
assert len(graphs) >= 10, len(graphs)
for p in graphs:
    assert p["datasource"]["uid"] == "${DS_PROMETHEUS}", p["title"]
    assert p["targets"], p["title"]
    for t in p["targets"]:
        assert t["datasource"]["uid"] == "${DS_PROMETHEUS}", p["title"]
        assert '$instance' in t["expr"], (p["title"], "does not follow the instance variable")
PY

# Every dashboard query is valid PromQL: promtool parses them as recording rules
# (Grafana's $__rate_interval and $instance replaced by what Grafana would put there).
"$PYTHON" - "$DASHBOARD" "$T/dashboard-rules.yml" "$SRC/tests/ops" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[3])
from monitoring_names import dashboard_exprs
rules = [{"record": f"dashboard:query_{i}", "expr": expr.replace("$__rate_interval", "1m").replace("$instance", ".*")}
         for i, (_, expr) in enumerate(dashboard_exprs(sys.argv[1]))]
json.dump({"groups": [{"name": "dashboard", "rules": rules}]}, open(sys.argv[2], "w"), indent=1)
PY
out=$(promtool check rules "$T/dashboard-rules.yml" 2>&1) || fail "dashboard queries that are not PromQL: $out"

# --- The alert rules: promtool's check, then its unit tests on a copy without annotations.
out=$(promtool check rules "$ALERTS") || fail "promtool check rules: $out"
rules=$(sed -n 's/.*SUCCESS: \([0-9]*\) rules found.*/\1/p' <<<"$out")
[ -n "$rules" ] && [ "$rules" -ge 10 ] || fail "promtool check rules: '$out'"
mkdir "$T/rules"
"$PYTHON" - "$ALERTS" "$T/rules/sigverifyd-alerts.yml" <<'PY'
import re, sys
out, skip = [], None
for line in open(sys.argv[1]).read().splitlines():
    indent = len(line) - len(line.lstrip())
    if skip is not None:
        if not line.strip() or indent > skip:
            continue
        skip = None
    if re.match(r"\s*annotations:\s*$", line):
        skip = indent
        continue
    out.append(line)
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
cp "$SRC/tests/ops/sigverifyd-alerts.test.yml" "$T/rules/"
out=$(cd "$T/rules" && promtool test rules sigverifyd-alerts.test.yml 2>&1) || fail "promtool test rules: $out"

# --- A real daemon on the GPU code path (the kernels' host twin, so the GPU,
# confirmation and split metrics exist) and one on the CPU backend.
start_daemon() {  # start_daemon NAME ARGS...: runtime dir $T/NAME, metrics file $T/NAME.prom
  local name=$1; shift
  "$DAEMON" --foreground --runtime-dir "$T/$name" --log-file "$T/$name.log" --cpu-threads 2 \
    --metrics-textfile "$T/$name.prom" --metrics-interval 1 "$@" &
  PIDS+=($!)
  for _ in $(seq 200); do [ -S "$T/$name/stats.sock" ] && return 0; sleep 0.05; done
  fail "sigverifyd ($name) did not come up: $(tail -5 "$T/$name.log")"
}
start_daemon gpu --backend host-kernel
start_daemon cpu --backend cpu

"$CLI" gen --table schnorr --count 300 --invalid-rate 0.3 --seed 3 --threads 2 --out "$T/s.rows" >/dev/null
"$CLI" gen --table multisig --count 300 --invalid-rate 0.3 --seed 4 --threads 2 --out "$T/m.rows" >/dev/null
for name in gpu cpu; do
  for table in schnorr:s multisig:m; do
    "$CLI" verify --runtime-dir "$T/$name" --table "${table%%:*}" --in "$T/${table##*:}.rows" >/dev/null \
      || fail "verify through the $name daemon"
  done
  "$CLI" stats --runtime-dir "$T/$name" >"$T/$name.live"
  out=$(promtool check metrics <"$T/$name.live" 2>&1) || fail "promtool check metrics ($name daemon, stats socket): $out"
  # Counters moved: 600 rows, 2 batches, 2 latency observations.
  "$PYTHON" - "$T/$name.live" <<'PY' || fail "$name daemon: counters after two batches"
import re, sys
samples = {}
for line in open(sys.argv[1]):
    if line.strip() and not line.startswith("#"):
        key, value = line.rsplit(" ", 1)
        samples[key] = float(value)
rows = sum(v for k, v in samples.items() if k.startswith("sigverifyd_rows_verified_total{"))
assert rows == 600, rows
assert samples["sigverifyd_batch_latency_seconds_count"] == 2
assert sum(v for k, v in samples.items() if k.startswith("sigverifyd_batches_total{")) == 2
assert samples["sigverifyd_chunks_total"] > 0
PY
  # The textfile (written each second) catches up with the two batches and passes the same check.
  for _ in $(seq 100); do
    grep -q '^sigverifyd_batch_latency_seconds_count 2$' "$T/$name.prom" 2>/dev/null && break
    sleep 0.1
  done
  grep -q '^sigverifyd_batch_latency_seconds_count 2$' "$T/$name.prom" || fail "$name daemon: metrics textfile not updated"
  out=$(promtool check metrics <"$T/$name.prom" 2>&1) || fail "promtool check metrics ($name daemon, textfile): $out"
done
grep -q '^sigverifyd_backend_enabled{backend="gpu0",kind="gpu"} 1$' "$T/gpu.live" || fail "gpu daemon: gpu0 not enabled"
grep -q '^sigverifyd_confirm_batches_total{rule="strict"} [1-9]' "$T/gpu.live" || fail "gpu daemon: no confirmed batch"
grep -q '^sigverifyd_backend_enabled{backend="cpu",kind="cpu"} 1$' "$T/cpu.live" || fail "cpu daemon: backend_enabled"

# --- Every metric name in the dashboard and the rules is exported (the GPU
# daemon's exposition has every family the CPU one has, and more).
NAMES=$SRC/tests/ops/monitoring_names.py
out=$("$PYTHON" "$NAMES" "$T/gpu.live" "$DASHBOARD" "$ALERTS" "$rules" 2>&1) || fail "metric names: $out"
# The check can fail: a renamed metric is reported by name.
sed 's/sigverifyd_queue_depth/sigverifyd_queue_length/g' "$T/gpu.live" >"$T/renamed.live"
if out=$("$PYTHON" "$NAMES" "$T/renamed.live" "$DASHBOARD" "$ALERTS" "$rules" 2>&1); then
  fail "metric names: a renamed sigverifyd_queue_depth went unnoticed"
fi
grep -q "'sigverifyd_queue_depth' is not in the daemon's exposition" <<<"$out" || fail "metric names: '$out'"
echo "test_monitoring: all checks passed ($rules alert rules)"
