#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CLI cases for column directories and group verdicts (docs/columns.md):
# verify --columns against verify --in, collect byte by byte, conversions both
# ways, groups against an independent Python statement of the rules, errors.
# With PATH_TO_SIGVERIFYD also: verify --columns through a real daemon (a small
# arena, so batches are split) must write exactly what --local writes.
# Usage: test_columns_cli.sh PATH_TO_SIGVERIFY [PATH_TO_SIGVERIFYD]
set -u
SV=$1
SVD=${2:-}
dir=$(mktemp -d)
daemon_pid=
cleanup() {
  [ -n "$daemon_pid" ] && kill -TERM "$daemon_pid" 2>/dev/null && wait "$daemon_pid" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
source "$(dirname "${BASH_SOURCE[0]}")/../support/cli_checks.sh"
counts() { grep -o 'rows=[0-9]* valid=[0-9]* invalid=[0-9]*' "$1"; }

# --- verify --columns against the row path, every table and encoding ---------
for table in ecdsa multisig schnorr threshold; do
  for fmt in opaque compact; do
    case $table in schnorr|threshold) [ $fmt = compact ] && continue;; esac
    f=$dir/$table-$fmt.rows c=$dir/$table-$fmt.cols
    expect_status 0 "gen $table $fmt" "$SV" gen --table $table --count 2500 --sig-format $fmt --invalid-rate 0.3 --high-s-rate 0.3 --seed 11 --out "$f"
    expect_status 0 "rows verify $table $fmt" "$SV" verify --local --table $table --sig-format $fmt --in "$f" --out "$f.res"
    counts "$dir/out" >"$dir/row.counts"
    expect_status 0 "split $table $fmt" "$SV" columns --from-rows "$f" --table $table --sig-format $fmt --out "$c"
    expect_status 0 "columns verify $table $fmt" "$SV" verify --local --columns "$c" --out "$c.res"
    counts "$dir/out" >"$dir/col.counts"
    cmp -s "$f.res" "$c.res" && ok || fail "$table $fmt: column results differ from row results"
    cmp -s "$dir/row.counts" "$dir/col.counts" && ok || fail "$table $fmt: summaries differ"
    # Collect: the collected correlate column equals the tails of the collected rows.
    expect_status 0 "rows collect $table" "$SV" verify --local --collect --table $table --sig-format $fmt --in "$f" --out "$f.col"
    expect_status 0 "columns collect $table" "$SV" verify --local --collect --columns "$c" --out "$c.corr"
    python3 - "$f.col" "$c.corr" "$f.res" $table <<'PY' && ok || fail "$table $fmt: collected correlate bytes"
import sys
rows, corr, res = (open(p, 'rb').read() for p in sys.argv[1:4])
table = sys.argv[4]
rec = 129 if table in ('ecdsa', 'multisig') else 128
ks = 3 if table in ('ecdsa', 'schnorr') else 6
st = rec + ks
assert len(corr) == ks * len(res) and len(rows) == st * len(res)
for i in range(len(res)):
    assert corr[i*ks:(i+1)*ks] == rows[i*st+rec:(i+1)*st], i
    if res[i]: assert corr[i*ks:(i+1)*ks] == bytes(ks), i
PY
    # The column directory itself is untouched by verification.
    expect_status 0 "join $table $fmt" "$SV" columns --to-rows "$c" --out "$c.rows"
    cmp -s "$f" "$c.rows" && ok || fail "$table $fmt: rows -> columns -> rows changed bytes"
    # libbitcoin correlate: round trip except threshold (no mn/group in the Schnorr correlate).
    expect_status 0 "split libbitcoin $table" "$SV" columns --from-rows "$f" --table $table --sig-format $fmt --correlate libbitcoin --out "$c.lb"
    want_size=$(( 2500 * $( [ $table = ecdsa ] || [ $table = multisig ] && echo 6 || echo 3) ))
    [ "$(stat -c %s "$c.lb/correlate")" -eq $want_size ] && ok || fail "$table: libbitcoin correlate size"
    expect_status 0 "verify libbitcoin $table" "$SV" verify --local --columns "$c.lb" --out "$c.lb.res"
    cmp -s "$f.res" "$c.lb.res" && ok || fail "$table $fmt: libbitcoin-correlate results differ"
    if [ $table = threshold ]; then
      expect_status 3 "threshold from libbitcoin columns" "$SV" columns --to-rows "$c.lb" --out "$c.lb.rows"
    else
      expect_status 0 "join libbitcoin $table" "$SV" columns --to-rows "$c.lb" --out "$c.lb.rows"
      cmp -s "$f" "$c.lb.rows" && ok || fail "$table $fmt: libbitcoin round trip changed bytes"
    fi
  done
done

# Manifest and files.
python3 - "$dir/multisig-opaque.cols" <<'PY' && ok || fail "manifest contents"
import json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, 'columns.json')))
assert m == {'format': 'sigverify-columns', 'version': 1, 'kind': 'ecdsa', 'count': 2500, 'encoding': 'opaque',
             'tail_size': 6, 'correlate': 'tail', 'table': 'multisig'}, m
sizes = {n: os.path.getsize(os.path.join(d, n)) for n in ('message', 'key', 'signature', 'correlate')}
assert sizes == {'message': 80000, 'key': 82500, 'signature': 160000, 'correlate': 15000}, sizes
PY
expect_status 0 "split without correlate" "$SV" columns --from-rows "$dir/schnorr-opaque.rows" --table schnorr --correlate none --out "$dir/bare"
[ ! -e "$dir/bare/correlate" ] && grep -q '"tail_size": 0' "$dir/bare/columns.json" && ok || fail "correlate none"
expect_status 0 "verify bare" "$SV" verify --local --columns "$dir/bare" --out "$dir/bare.res"
cmp -s "$dir/bare.res" "$dir/schnorr-opaque.rows.res" && ok || fail "bare columns results"

# --- groups ---------------------------------------------------------------------
# An independent statement of the rules: brute force over increasing key choices.
cat >"$dir/groups.py" <<'PY'
import itertools, json, sys
rows_path, res_path, table, report_path = sys.argv[1:5]
rows, res = open(rows_path, 'rb').read(), open(res_path, 'rb').read()
rec = 129 if table == 'multisig' else 128
st = rec + 6
groups, skipped = {}, 0
for i in range(len(res)):
    t = rows[i*st+rec:(i+1)*st]
    mn, group, fk = t[0], t[1] | t[2] << 8, t[3] | t[4] << 8 | t[5] << 16
    if fk == 0xFFFFFF:
        skipped += 1
        continue
    groups.setdefault((fk, group), []).append((mn, res[i] != 0))
def multisig(lst):
    m = max(mn >> 4 for mn, _ in lst) + 1
    def usable(s, k):
        hits = [ok for mn, ok in lst if mn == (s << 4 | k)]
        return bool(hits) and all(hits)
    return any(all(usable(i, ks[i]) for i in range(m)) for ks in itertools.combinations(range(16), m))
def threshold(lst):  # BIP-342: every row is a non-empty signature; one failed row fails
    m = lst[0][0]
    return all(mn == m for mn, _ in lst) and m >= 1 and all(ok for _, ok in lst) and len(lst) >= m
want = {k: (multisig if table == 'multisig' else threshold)(v) for k, v in groups.items()}
blocks = {}
for (fk, g), p in want.items():
    blocks[fk] = blocks.get(fk, True) and p
rep = json.load(open(report_path))
got = {(g['block_fk'], g['group']): g['pass'] for g in rep['groups']}
assert got == want, [k for k in want if got.get(k) != want[k]][:5]
assert {b['block_fk']: b['pass'] for b in rep['blocks']} == blocks
assert rep['skipped_rows'] == skipped and rep['rows'] == len(res)
assert rep['failed_groups'] == sum(not p for p in want.values())
assert 0 < rep['failed_groups'] < len(want), rep['failed_groups']
print(len(want), 'groups', rep['failed_groups'], 'failed', skipped, 'skipped')
PY
for table in multisig threshold; do
  f=$dir/g-$table.rows
  "$SV" gen --table $table --count 4000 --invalid-rate 0.01 --seed 23 --out "$f" >/dev/null
  # Mark some rows of the last block as still being written.
  python3 - "$f" $table <<'PY'
import sys
p, table = sys.argv[1], sys.argv[2]
st = (129 if table == 'multisig' else 128) + 6
b = bytearray(open(p, 'rb').read())
for i in range(len(b) // st - 50, len(b) // st, 5):
    b[i*st+st-3:i*st+st] = b'\xff\xff\xff'
open(p, 'wb').write(b)
PY
  expect_status 0 "groups $table" "$SV" groups --table $table --in "$f" --json "$f.json" --all
  cp "$dir/out" "$f.txt"
  grep -q '^groups ('$table'): rows=4000 .* skipped=10 ' "$f.txt" && ok || fail "$table groups summary: $(head -1 "$f.txt")"
  grep -q 'skipped 10 rows whose block_fk is FF FF FF .*first: 3950 3955' "$f.txt" && ok || fail "$table skipped rows line"
  grep -q '^block [0-9]* FAIL groups=' "$f.txt" && grep -q '^block [0-9]* pass groups=' "$f.txt" && ok || fail "$table block lines"
  "$SV" verify --local --table $table --in "$f" --out "$f.res" >/dev/null
  python3 "$dir/groups.py" "$f" "$f.res" $table "$f.json" >/dev/null && ok || fail "$table groups differ from brute force"
  # Given results, the same report.
  expect_status 0 "groups --results $table" "$SV" groups --table $table --in "$f" --results "$f.res" --all
  cmp -s "$dir/out" "$f.txt" && ok || fail "$table: --results report differs"
  expect_status 1 "groups --strict $table" "$SV" groups --strict --table $table --in "$f"
  # Flip every verdict: a different, still consistent report.
  python3 -c "import sys; d=open(sys.argv[1],'rb').read(); open(sys.argv[2],'wb').write(bytes(1-x for x in d))" "$f.res" "$f.flip"
  expect_status 0 "groups flipped $table" "$SV" groups --table $table --in "$f" --results "$f.flip" --json "$f.flip.json"
  python3 "$dir/groups.py" "$f" "$f.flip" $table "$f.flip.json" >/dev/null && ok || fail "$table flipped verdicts"
  # Columns with the row tail as correlate give the same report.
  "$SV" columns --from-rows "$f" --table $table --out "$f.cols" >/dev/null
  expect_status 0 "groups --columns $table" "$SV" groups --columns "$f.cols" --all
  cmp -s "$dir/out" "$f.txt" && ok || fail "$table: groups from columns differ"
done
# Multisig from the libbitcoin ECDSA correlate.
f=$dir/g-multisig.rows
"$SV" columns --from-rows "$f" --table multisig --correlate libbitcoin --out "$f.lb" >/dev/null
expect_status 0 "groups libbitcoin columns" "$SV" groups --columns "$f.lb" --all
cmp -s "$dir/out" "$f.txt" && ok || fail "groups from libbitcoin correlate differ"
# Threshold through libbitcoin's Schnorr correlate (the id alone): every row is
# its own group, libbitcoin's rule. On a table whose groups are satisfied when
# all their signatures verify (the only spends libbitcoin captures), the block
# verdicts equal the threshold rule's on the row table.
f=$dir/g-lb-threshold.rows
"$SV" gen --table threshold --count 4000 --invalid-rate 0.01 --seed 31 --out "$f.all" >/dev/null
python3 - "$f.all" "$f" <<'PY'
import sys
src, dst = sys.argv[1:3]
st = 128 + 6
b = open(src, 'rb').read()
last = b[-6+1:]  # group || block_fk of the last row: drop its group (perhaps cut short by --count)
n = len(b) // st
while n and b[n*st-5:n*st] == last: n -= 1
open(dst, 'wb').write(b[:n*st])
PY
expect_status 0 "threshold to libbitcoin columns" "$SV" columns --from-rows "$f" --table threshold --correlate libbitcoin --out "$f.lb"
expect_status 0 "groups threshold rows" "$SV" groups --table threshold --in "$f" --json "$f.json"
expect_status 0 "groups threshold libbitcoin columns" "$SV" groups --columns "$f.lb" --json "$f.lb.json"
python3 - "$f.json" "$f.lb.json" <<'PY' && ok || fail "threshold: libbitcoin correlate block verdicts differ from the threshold rule"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a['kind'] == 'threshold' and b['kind'] == 'single', (a['kind'], b['kind'])
assert b['rows'] == a['rows'] and len(b['groups']) == a['rows']
assert [(x['block_fk'], x['pass']) for x in a['blocks']] == [(x['block_fk'], x['pass']) for x in b['blocks']]
assert 0 < a['failed_blocks'] < len(a['blocks']), a['failed_blocks']
PY
# A group that fails even with every signature valid (m above its row count)
# has no place in libbitcoin's table: the conversion refuses it.
python3 - "$f" "$f.short" <<'PY'
import sys
b = bytearray(open(sys.argv[1], 'rb').read())
st = 128 + 6
first = b[128+1:st]  # group || block_fk of row 0
i = 0
while i * st < len(b) and b[i*st+128+1:(i+1)*st] == first:
    b[i*st+128] = 30  # m = 30 > the group's rows
    i += 1
open(sys.argv[2], 'wb').write(b)
PY
expect_status 3 "unsatisfiable threshold group to libbitcoin columns" "$SV" columns --from-rows "$f.short" --table threshold --correlate libbitcoin --out "$f.short.lb"
grep -q 'fail even with every signature valid (first: block [0-9]* group 0, short)' "$dir/err" && ok || fail "unsatisfiable threshold message: $(cat "$dir/err")"
expect_status 0 "unsatisfiable threshold group, row tail correlate" "$SV" columns --from-rows "$f.short" --table threshold --out "$f.short.cols"

# Single signatures: each its own group, so a block fails iff one of its rows is invalid.
cat >"$dir/singles.py" <<'PY'
import json, sys
rows_path, res_path, table, report_path = sys.argv[1:5]
rows, res = open(rows_path, 'rb').read(), open(res_path, 'rb').read()
rec = 129 if table == 'ecdsa' else 128
st = rec + 3
blocks = {}
for i in range(len(res)):
    fk = int.from_bytes(rows[i*st+rec:(i+1)*st], 'little')
    blocks[fk] = blocks.get(fk, True) and res[i] != 0
rep = json.load(open(report_path))
assert rep['kind'] == 'single', rep['kind']
assert len(rep['groups']) == len(res), len(rep['groups'])
assert all(g['rows'] == 1 and g['required'] == 1 and 'duplicate-rows' not in g['flags'] for g in rep['groups'])
assert rep['failed_groups'] == sum(1 for x in res if x == 0)
assert {b['block_fk']: b['pass'] for b in rep['blocks']} == blocks
assert 0 < rep['failed_blocks'] < len(blocks), (rep['failed_blocks'], len(blocks))
print(len(blocks), 'blocks', rep['failed_blocks'], 'failed')
PY
for table in ecdsa schnorr; do
  f=$dir/s-$table.rows
  "$SV" gen --table $table --count 10000 --invalid-rate 0.0003 --seed 29 --out "$f" >/dev/null
  "$SV" verify --local --table $table --in "$f" --out "$f.res" >/dev/null
  expect_status 0 "groups single $table" "$SV" groups --table $table --in "$f" --all --json "$f.json"
  cp "$dir/out" "$f.txt"
  grep -q '^groups (single): rows=10000 ' "$f.txt" && ok || fail "$table single summary: $(head -1 "$f.txt")"
  python3 "$dir/singles.py" "$f" "$f.res" $table "$f.json" && ok || fail "$table single-signature groups"
  # libbitcoin columns: the same report.
  "$SV" columns --from-rows "$f" --table $table --correlate libbitcoin --out "$f.lb" >/dev/null
  expect_status 0 "groups single $table libbitcoin columns" "$SV" groups --columns "$f.lb" --all
  cmp -s "$dir/out" "$f.txt" && ok || fail "$table: single groups from libbitcoin columns differ"
done
# The ECDSA libbitcoin correlate itself gives each single its own group: without
# the manifest's table, groups reads the correlate's groups (as for a mixed
# table) and still judges each single alone (no duplicate-rows, no shared group).
f=$dir/s-ecdsa.rows
cp -r "$f.lb" "$f.notable"
python3 -c "import json,sys; m=json.load(open(sys.argv[1])); m.pop('table',None); json.dump(m,open(sys.argv[1],'w'))" "$f.notable/columns.json"
expect_status 0 "groups ecdsa libbitcoin columns without table" "$SV" groups --columns "$f.notable" --json "$f.notable.json"
python3 - "$f.json" "$f.notable.json" <<'PY' && ok || fail "ecdsa correlate groups: singles not judged alone"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert b['kind'] == 'multisig'
assert len(b['groups']) == len(a['groups']), (len(b['groups']), len(a['groups']))
assert all(g['rows'] == 1 and 'duplicate-rows' not in g['flags'] for g in b['groups'])
assert [(x['block_fk'], x['pass']) for x in a['blocks']] == [(x['block_fk'], x['pass']) for x in b['blocks']]
PY
# Columns written before each single got its own group (all group 0) are still
# judged per row when the manifest names the table.
cp -r "$f.lb" "$f.old"
python3 -c "
import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read())
for i in range(0, len(b), 6): b[i+4:i+6] = b'\0\0'
open(p,'wb').write(b)" "$f.old/correlate"
expect_status 0 "groups single old libbitcoin columns" "$SV" groups --columns "$f.old" --all
cmp -s "$dir/out" "$f.txt" && ok || fail "single groups from group-0 columns differ"

# A clean table: every group passes but perhaps the last, cut short by --count.
"$SV" gen --table threshold --count 3000 --seed 4 --out "$dir/clean" >/dev/null
"$SV" groups --table threshold --in "$dir/clean" --json "$dir/clean.json" >/dev/null
python3 -c "
import json; r = json.load(open('$dir/clean.json'))
assert all(g['pass'] for g in r['groups'][:-1]) and len(r['groups']) > 100 and r['failed_groups'] <= 1" && ok || fail "clean table"

# --- errors and usage --------------------------------------------------------
c=$dir/ecdsa-opaque.cols
cp -r "$c" "$dir/short" && truncate -s -1 "$dir/short/signature"
expect_status 3 "truncated signature column" "$SV" verify --local --columns "$dir/short" --out "$dir/x"
grep -q 'signature column' "$dir/err" && ok || fail "truncated signature message: $(cat "$dir/err")"
cp -r "$c" "$dir/count" && sed -i 's/"count": 2500/"count": 2499/' "$dir/count/columns.json"
expect_status 3 "manifest count mismatch" "$SV" verify --local --columns "$dir/count"
cp -r "$c" "$dir/badjson" && echo '{"format": ' >"$dir/badjson/columns.json"
expect_status 3 "bad manifest JSON" "$SV" verify --local --columns "$dir/badjson"
cp -r "$c" "$dir/nomanifest" && rm "$dir/nomanifest/columns.json"
expect_status 3 "no manifest" "$SV" verify --local --columns "$dir/nomanifest"
cp -r "$c" "$dir/kind" && sed -i 's/"kind": "ecdsa"/"kind": "schnorr"/' "$dir/kind/columns.json"
expect_status 3 "kind disagrees with key width and table" "$SV" verify --local --columns "$dir/kind"
cp -r "$c" "$dir/nocorr" && rm "$dir/nocorr/correlate"
expect_status 3 "missing correlate" "$SV" verify --local --columns "$dir/nocorr"
expect_status 2 "--columns with --table" "$SV" verify --local --columns "$c" --table ecdsa
expect_status 2 "--columns with --in" "$SV" verify --local --columns "$c" --in "$dir/ecdsa-opaque.rows"
expect_status 2 "--columns --collect without --out" "$SV" verify --local --collect --columns "$c"
expect_status 2 "verify without input" "$SV" verify --local
expect_status 2 "verify --in without --table" "$SV" verify --local --in "$dir/ecdsa-opaque.rows"
expect_status 4 "columns through an absent daemon" "$SV" verify --columns "$c" --runtime-dir "$dir/nodaemon"
grep -q "no sigverifyd at $dir/nodaemon/sigverifyd.sock" "$dir/err" && ok || fail "absent daemon message: $(cat "$dir/err")"
expect_status 1 "--strict with invalid rows" "$SV" verify --local --strict --columns "$c"
expect_status 2 "columns: both directions" "$SV" columns --from-rows "$dir/ecdsa-opaque.rows" --to-rows "$c" --out "$dir/y"
expect_status 2 "columns: no direction" "$SV" columns --out "$dir/y"
expect_status 2 "columns: --from-rows without --table" "$SV" columns --from-rows "$dir/ecdsa-opaque.rows" --out "$dir/y"
"$SV" gen --table ecdsa --count 10 --key-size 9 --out "$dir/k9" >/dev/null
expect_status 3 "columns: libbitcoin needs the canonical tail" "$SV" columns --from-rows "$dir/k9" --table ecdsa --key-size 9 --correlate libbitcoin --out "$dir/y"
expect_status 0 "columns: any tail verbatim" "$SV" columns --from-rows "$dir/k9" --table ecdsa --key-size 9 --out "$dir/k9.cols"
grep -q '"tail_size": 9' "$dir/k9.cols/columns.json" && ! grep -q '"table"' "$dir/k9.cols/columns.json" && ok || fail "key_size 9 manifest"
expect_status 3 "columns: bad row file size" "$SV" columns --from-rows "$dir/ecdsa-opaque.rows" --table multisig --out "$dir/y"
expect_status 2 "groups: --in without --table" "$SV" groups --in "$dir/ecdsa-opaque.rows"
expect_status 2 "groups: no input" "$SV" groups --table multisig
expect_status 2 "groups: both inputs" "$SV" groups --table multisig --in "$f" --columns "$f.lb"
expect_status 3 "groups: results of the wrong size" "$SV" groups --table multisig --in "$f" --results "$dir/bare.res"
expect_status 3 "groups: columns without grouping fields" "$SV" groups --columns "$dir/bare"
for cmd in "verify" "columns" "groups"; do
  expect_status 0 "$cmd --help" "$SV" $cmd --help
done
# Help text is read into a variable first: in `cmd | grep -q`, grep exits at
# the first match and the writer may get SIGPIPE, which fails the pipeline
# under pipefail (a flake).
help_has() {  # help_has PATTERN description command...
  local pattern=$1 what=$2 out; shift 2
  out=$("$@" 2>&1) || { fail "$what: exit $?"; return; }
  grep -q -- "$pattern" <<<"$out" && ok || fail "$what"
}
help_has '--columns' "verify --help lacks --columns" "$SV" verify --help
help_has '--correlate' "columns --help lacks --correlate" "$SV" columns --help
help_has '--results' "groups --help lacks --results" "$SV" groups --help
help_has 'groups' "top-level --help lacks groups" "$SV" --help

# --- verify --columns through sigverifyd ---------------------------------------
if [ -n "$SVD" ]; then
  "$SVD" --foreground --runtime-dir "$dir/run" --arena-size 128K --cpu-threads 2 --log-file "$dir/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 200); do grep -q "listening on" "$dir/daemon.log" 2>/dev/null && break; sleep 0.05; done
  for table in ecdsa multisig schnorr threshold; do
    for fmt in opaque compact; do
      case $table in schnorr|threshold) [ $fmt = compact ] && continue;; esac
      f=$dir/$table-$fmt.rows c=$dir/$table-$fmt.cols
      for layout in tail lb; do
        cd_=$c; [ $layout = lb ] && cd_=$c.lb
        # 2500 rows of 136 bytes and more: never one piece of a 128 KiB arena.
        expect_status 0 "daemon columns verify $table $fmt $layout" "$SV" verify --columns "$cd_" --runtime-dir "$dir/run" --out "$cd_.dres"
        grep -q "verify (daemon, columns, epoch" "$dir/out" && ok || fail "daemon columns summary: $(cat "$dir/out")"
        counts "$dir/out" >"$dir/daemon.counts"
        cmp -s "$f.res" "$cd_.dres" && ok || fail "$table $fmt $layout: daemon column results differ from --local"
        python3 -c "import sys; r = open(sys.argv[1], 'rb').read(); v = r.count(1); print(f'rows={len(r)} valid={v} invalid={len(r) - v}')" "$f.res" >"$dir/want.counts"
        cmp -s "$dir/want.counts" "$dir/daemon.counts" && ok || fail "$table $fmt $layout: daemon counts $(cat "$dir/daemon.counts"), want $(cat "$dir/want.counts")"
        expect_status 0 "local columns collect $table $fmt $layout" "$SV" verify --local --collect --columns "$cd_" --out "$cd_.lcorr"
        expect_status 0 "daemon columns collect $table $fmt $layout" "$SV" verify --collect --columns "$cd_" --runtime-dir "$dir/run" --out "$cd_.dcorr"
        grep -q "collect (daemon, columns, epoch" "$dir/out" && ok || fail "daemon collect summary"
        cmp -s "$cd_.lcorr" "$cd_.dcorr" && ok || fail "$table $fmt $layout: daemon collected correlate differs from --local"
        # Some entries were zeroed and some kept (the comparison means something).
        python3 - "$cd_.dcorr" "$f.res" <<'PY' && ok || fail "$table $fmt $layout: collected correlate is trivial"
import sys
corr, res = (open(p, 'rb').read() for p in sys.argv[1:3])
ks = len(corr) // len(res)
assert ks * len(res) == len(corr) and ks > 0
zeroed = [corr[i*ks:(i+1)*ks] == bytes(ks) for i in range(len(res))]
assert all(zeroed[i] for i in range(len(res)) if res[i])
assert sum(1 for i in range(len(res)) if not res[i] and not zeroed[i]) > 100
PY
      done
    done
  done
  c=$dir/ecdsa-opaque.cols
  expect_status 1 "daemon columns --strict with invalid rows" "$SV" verify --strict --columns "$c" --runtime-dir "$dir/run"
  expect_status 0 "daemon columns without correlate" "$SV" verify --columns "$dir/bare" --runtime-dir "$dir/run" --out "$dir/bare.dres"
  cmp -s "$dir/bare.res" "$dir/bare.dres" && ok || fail "bare columns through the daemon"
  SIGVERIFY_RUNTIME_DIR="$dir/run" expect_status 0 "daemon columns via SIGVERIFY_RUNTIME_DIR" "$SV" verify --columns "$c" --out "$dir/env.res"
  cmp -s "$dir/env.res" "$dir/ecdsa-opaque.rows.res" && ok || fail "columns via SIGVERIFY_RUNTIME_DIR"
  kill -TERM "$daemon_pid"; wait "$daemon_pid"; rc=$?; daemon_pid=
  [ $rc = 0 ] && ok || fail "sigverifyd exit status $rc after SIGTERM"
  expect_status 4 "daemon columns after the daemon stopped" "$SV" verify --columns "$c" --runtime-dir "$dir/run"
fi

finish
