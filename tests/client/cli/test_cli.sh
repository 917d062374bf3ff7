#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CLI round trips and error handling of `sigverify` (local mode).
# Usage: test_cli.sh PATH_TO_SIGVERIFY
set -u
SV=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/../../support/cli_checks.sh"

for table in ecdsa multisig schnorr threshold; do
  for fmt in opaque compact; do
    case $table in schnorr|threshold) [ $fmt = compact ] && continue;; esac
    f=$dir/$table-$fmt.rows
    expect_status 0 "gen $table $fmt" "$SV" gen --table $table --count 3000 --sig-format $fmt --invalid-rate 0.3 --high-s-rate 0.3 --seed 5 --out "$f"
    expect_status 0 "verify $table $fmt" "$SV" verify --local --table $table --sig-format $fmt --in "$f" --out "$f.res"
    summary=$(cat "$dir/out")
    # One result byte per row, each 0 or 1, and the summary counts them.
    [ "$(stat -c %s "$f.res")" -eq 3000 ] && ok || fail "$table: results size"
    ones=$(od -An -v -tu1 "$f.res" | tr -s ' ' '\n' | grep -c '^1$')
    others=$(od -An -v -tu1 "$f.res" | tr -s ' ' '\n' | grep -cvE '^(0|1|)$')
    [ "$others" -eq 0 ] && ok || fail "$table: result bytes other than 0/1"
    echo "$summary" | grep -q "rows=3000 valid=$ones " && ok || fail "$table: summary '$summary' vs $ones valid"
    [ "$ones" -gt 500 ] && [ "$ones" -lt 2900 ] && ok || fail "$table: $ones valid rows is implausible"
    # --strict fails when there are invalid rows
    expect_status 1 "strict $table" "$SV" verify --local --strict --table $table --sig-format $fmt --in "$f"
    # Collect mode: valid rows get a zero tail, invalid rows keep theirs.
    expect_status 0 "collect $table" "$SV" verify --local --collect --table $table --sig-format $fmt --in "$f" --out "$f.col"
    python3 - "$f" "$f.col" "$f.res" $table <<'PY' && ok || fail "$table: collect bytes"
import sys
rows, col, res, table = open(sys.argv[1],'rb').read(), open(sys.argv[2],'rb').read(), open(sys.argv[3],'rb').read(), sys.argv[4]
rec = 129 if table in ('ecdsa','multisig') else 128
ks = 3 if table in ('ecdsa','schnorr') else 6
st = rec + ks
assert len(rows) == len(col) == st * len(res)
for i, v in enumerate(res):
    a, b = rows[i*st:(i+1)*st], col[i*st:(i+1)*st]
    assert a[:rec] == b[:rec]
    assert b[rec:] == (bytes(ks) if v else a[rec:]), i
PY
  done
done

# Same seed, same file; another seed, another file.
expect_status 0 "gen seed 9" "$SV" gen --table schnorr --count 500 --seed 9 --out "$dir/a"
expect_status 0 "gen seed 9, 1 thread" "$SV" gen --table schnorr --count 500 --seed 9 --threads 1 --out "$dir/b"
expect_status 0 "gen seed 10" "$SV" gen --table schnorr --count 500 --seed 10 --out "$dir/c"
for x in a b c; do
  [ -f "$dir/$x" ] && [ "$(stat -c %s "$dir/$x")" -eq $((500 * 131)) ] && ok || fail "gen output $x missing or of the wrong size"
done
# cmp: 0 = same, 1 = different, 2 = trouble (e.g. a missing file): only 0 resp. 1 pass.
cmp -s "$dir/a" "$dir/b"; rc=$?
[ $rc -eq 0 ] && ok || fail "gen not deterministic (cmp exit $rc)"
cmp -s "$dir/a" "$dir/c"; rc=$?
[ $rc -eq 1 ] && ok || fail "seed ignored or output missing (cmp exit $rc)"

# Generic key sizes.
for ks in 0 200; do
  expect_status 0 "gen key_size $ks" "$SV" gen --table ecdsa --count 100 --key-size $ks --out "$dir/k$ks"
  [ "$(stat -c %s "$dir/k$ks")" -eq $((100 * (129 + ks))) ] && ok || fail "key_size $ks file size"
  expect_status 0 "verify key_size $ks" "$SV" verify --local --table ecdsa --key-size $ks --in "$dir/k$ks" --strict
done

# Malformed input: a clear error, exit 3, nothing written.
head -c 1000 "$dir/ecdsa-opaque.rows" > "$dir/short"
expect_status 3 "bad size" "$SV" verify --local --table ecdsa --in "$dir/short" --out "$dir/short.res"
grep -q "not a multiple of the ecdsa row stride 132" "$dir/err" && ok || fail "bad size message: $(cat "$dir/err")"
[ ! -e "$dir/short.res" ] && [ ! -e "$dir/short.res.tmp" ] && ok || fail "output written for a bad file"
expect_status 3 "wrong table" "$SV" inspect --table multisig "$dir/ecdsa-opaque.rows"

# Usage errors: exit 2 with a message.
expect_status 2 "unknown table" "$SV" gen --table rsa --count 1 --out "$dir/x"
expect_status 2 "missing --in" "$SV" verify --local --table ecdsa
expect_status 2 "collect without --out" "$SV" verify --local --collect --table ecdsa --in "$dir/ecdsa-opaque.rows"
expect_status 2 "key size too big" "$SV" gen --table ecdsa --count 1 --key-size 256 --out "$dir/x"
expect_status 2 "no subcommand" "$SV"
expect_status 0 "help" "$SV" verify --help
grep -q -- "--collect" "$dir/out" && ok || fail "verify --help lacks --collect"

# inspect shows decoded tails and verdicts.
expect_status 0 "inspect" "$SV" inspect --table multisig --rows 3 --verify "$dir/multisig-opaque.rows"
grep -q "signature 0, key 0" "$dir/out" && grep -qE "\[(valid|INVALID)\]" "$dir/out" && ok || fail "inspect output"

finish
