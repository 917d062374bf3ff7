#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every metric name in the Grafana dashboard's and the alert rules' PromQL
expressions must be one the daemon exports, so renaming a metric without
updating contrib/monitoring/ fails a test instead of blanking a panel or
silencing an alert.

usage: monitoring_names.py EXPOSITION DASHBOARD_JSON ALERTS_YML [EXPECTED_RULES]

EXPOSITION is Prometheus text as the daemon serves it. Names from outside the
daemon (Prometheus's own, node_exporter's) must be listed in EXTERNAL.
Prints each unknown name with where it is used; exit 1 if there is any.
"""
import json
import re
import sys

# Functions and keywords are recognised by syntax below; series names that do
# not come from sigverifyd (node_exporter's, Prometheus's `up`) go here. None
# are used now: "down" is told from the daemon's own start time and uptime.
EXTERNAL = set()

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
            "offset", "inf", "nan", "atan2"}


def known_names(exposition):
    """Sample names, and the families of # TYPE lines with their histogram/summary series."""
    names = set()
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            _, _, family, kind = line.split(None, 3)
            names.add(family)
            if kind.strip() in ("histogram", "gaugehistogram"):
                names.update(family + s for s in ("_bucket", "_sum", "_count"))
            elif kind.strip() == "summary":
                names.update(family + s for s in ("_sum", "_count"))
        elif line and not line.startswith("#"):
            names.add(re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0))
    return names


def metric_names(expr):
    """Series names a PromQL expression selects (a small tokenizer: enough for these files)."""
    e = re.sub(r'"(?:\\.|[^"\\])*"', '""', expr)           # string literals
    e = re.sub(r"'(?:\\.|[^'\\])*'", "''", e)
    e = re.sub(r"\{[^}]*\}", " ", e)                        # label matchers
    e = re.sub(r"\[[^\]]*\]", " ", e)                       # ranges, subqueries
    e = re.sub(r"\$\{?\w+\}?", " 1 ", e)                    # Grafana variables
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)  # label lists
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        name = m.group(0)
        before = e[m.start() - 1] if m.start() > 0 else " "
        if before.isdigit() or before == ".":
            continue  # a duration or number suffix: 5m, 1e3
        if e[m.end():].lstrip().startswith("("):
            continue  # a function or an aggregation
        if name.lower() in KEYWORDS:
            continue
        names.add(name)
    return names


def dashboard_exprs(path):
    """(where, expr) of every panel target, annotation and template query."""
    dash = json.load(open(path))
    out = []

    def panels(ps):
        for p in ps:
            yield p
            yield from panels(p.get("panels", []))

    for p in panels(dash.get("panels", [])):
        for t in p.get("targets", []):
            if "expr" in t:
                out.append((f"panel '{p.get('title')}' {t.get('refId')}", t["expr"]))
    for a in dash.get("annotations", {}).get("list", []):
        if "expr" in a:
            out.append((f"annotation '{a.get('name')}'", a["expr"]))
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v.get("query")
        q = q.get("query", "") if isinstance(q, dict) else q or ""
        m = re.fullmatch(r"\s*label_values\(\s*(.*?)\s*,\s*\w+\s*\)\s*", q)
        out.append((f"variable '{v.get('name')}'", m.group(1) if m else q))
    return out


def rule_exprs(path):
    """(where, expr) of each `expr:` in a rules file: plain one-line values and block scalars."""
    lines = open(path).read().splitlines()
    out, name, i = [], "?", 0
    while i < len(lines):
        line = lines[i]
        m = re.match(r"\s*-?\s*(alert|record):\s*(\S+)", line)
        if m:
            name = m.group(2)
        m = re.match(r"(\s*-?\s*)expr:\s*(.*)$", line)
        if m:
            value = m.group(2).strip()
            if value in ("|", "|-", ">", ">-", "|+", ">+"):
                key_column = len(m.group(1))
                block = []
                while i + 1 < len(lines) and (not lines[i + 1].strip() or
                                              len(lines[i + 1]) - len(lines[i + 1].lstrip()) > key_column):
                    i += 1
                    block.append(lines[i].strip())
                value = " ".join(block)
            elif value[:1] in "'\"":
                value = value[1:-1]
            out.append((f"rule {name}", value))
        i += 1
    return out


def main():
    exposition = open(sys.argv[1]).read()
    known = known_names(exposition) | EXTERNAL
    rules = rule_exprs(sys.argv[3])
    used = dashboard_exprs(sys.argv[2]) + rules
    bad = 0
    if len(sys.argv) > 4 and len(rules) != int(sys.argv[4]):
        print(f"read {len(rules)} rule expressions from {sys.argv[3]}, promtool counted {sys.argv[4]} rules")
        bad += 1
    for where, expr in used:
        names = metric_names(expr)
        if not names:
            print(f"{where}: no metric name found in '{expr}'")
            bad += 1
        for n in sorted(names - known):
            print(f"{where}: '{n}' is not in the daemon's exposition")
            bad += 1
    print(f"{len(used)} expressions checked, {bad} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
