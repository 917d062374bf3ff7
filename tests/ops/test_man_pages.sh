#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The manual pages stay true to the binaries: every long flag that
# `sigverifyd --help` prints appears in sigverifyd(8) and (as a key) in
# sigverifyd.conf(5); every flag of `sigverify SUB --help` appears in SUB's
# section of sigverify(1), and every subcommand has one. sigverify.h(3) has an
# entry for every function client/include/sigverify/sigverify.h declares, names
# none it does not, and lists every error code. All four pages render with groff
# and man without a warning.
# usage: test_man_pages.sh SOURCE_DIR SIGVERIFYD SIGVERIFY
set -euo pipefail
SRC=$1 DAEMON=$2 CLI=$3
MAN=$SRC/packaging/man
T=$(mktemp -d /tmp/sigverify-man-XXXXXX)
trap 'rm -rf "$T"' EXIT
errors=0
fail() { echo "FAIL: $*" >&2; errors=$((errors + 1)); }

# Long flags in a --help text: the "--name" words of the option lines.
long_flags() { grep -oE '^ +(-[a-z],)?--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u; }
# A page's source as plain text: \- as -, font escapes dropped.
plain() { sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' "$1"; }
# The flags a page (or section) describes in an entry of its own: the tag line after .TP.
entries() { awk 'prev == ".TP" { print } { prev = $0 }' "$1" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u; }

# --- sigverifyd(8) and sigverifyd.conf(5) ----------------------------------------
"$DAEMON" --help | long_flags >"$T/daemon.flags"
[ "$(wc -l <"$T/daemon.flags")" -ge 20 ] || fail "read only $(wc -l <"$T/daemon.flags") flags from sigverifyd --help"
plain "$MAN/sigverifyd.8" >"$T/sigverifyd.8.txt"
plain "$MAN/sigverifyd.conf.5" >"$T/sigverifyd.conf.5.txt"
entries "$T/sigverifyd.8.txt" >"$T/sigverifyd.8.entries"
while read -r flag; do
  grep -qx -- "$flag" "$T/sigverifyd.8.entries" || fail "sigverifyd(8) has no entry for $flag"
  case $flag in --help|--version|--config) continue ;; esac
  grep -qE "^\.BI ${flag#--} \"" "$T/sigverifyd.conf.5.txt" || fail "sigverifyd.conf(5) lacks the key ${flag#--}"
done <"$T/daemon.flags"

# --- sigverify(1): each subcommand's section --------------------------------------
plain "$MAN/sigverify.1" >"$T/sigverify.1.txt"
"$CLI" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }' >"$T/subcommands"
[ "$(wc -l <"$T/subcommands")" -ge 8 ] || fail "read only $(wc -l <"$T/subcommands") subcommands from sigverify --help"
while read -r sub; do
  # The section: from '.SS "sigverify SUB"' to the next .SS or .SH.
  awk -v h=".SS \"sigverify $sub\"" '$0 == h { on = 1; next } /^\.S[SH] / { on = 0 } on' \
    "$T/sigverify.1.txt" >"$T/section"
  [ -s "$T/section" ] || { fail "sigverify(1) has no section for '$sub'"; continue; }
  "$CLI" "$sub" --help | long_flags >"$T/sub.flags"
  entries "$T/section" >"$T/section.entries"
  while read -r flag; do
    [ "$flag" = --help ] && continue
    grep -qx -- "$flag" "$T/section.entries" || fail "sigverify(1): section '$sub' has no entry for $flag"
  done <"$T/sub.flags"
done <"$T/subcommands"
grep -q -- '--version' "$T/sigverify.1.txt" || fail "sigverify(1) lacks --version"

# --- sigverify.h(3): the C ABI ------------------------------------------------------
HEADER=$SRC/client/include/sigverify/sigverify.h
# The functions the header declares: "SIGVERIFY_API type name(" (a declaration
# may span lines; the name is on the SIGVERIFY_API line).
grep -E 'SIGVERIFY_API' "$HEADER" | grep -oE '\bsigverify_[a-z0-9_]+\(' | tr -d '(' | sort -u >"$T/header.calls"
[ "$(wc -l <"$T/header.calls")" -ge 25 ] || fail "read only $(wc -l <"$T/header.calls") functions from sigverify.h"
plain "$MAN/sigverify.h.3" >"$T/sigverify.h.3.txt"
# The functions the page has an entry for: the tag lines after .TP and .TQ.
awk 'prev == ".TP" || prev == ".TQ" { print } { prev = $0 }' "$T/sigverify.h.3.txt" |
  grep -oE '\bsigverify_[a-z0-9_]+\(' | tr -d '(' | sort -u >"$T/page.calls"
while read -r call; do
  grep -qx "$call" "$T/page.calls" || fail "sigverify.h(3) has no entry for $call"
done <"$T/header.calls"
while read -r call; do
  grep -qx "$call" "$T/header.calls" || fail "sigverify.h(3) describes $call, which sigverify.h does not declare"
done <"$T/page.calls"
grep -oE '^#define (SIGVERIFY_E_[A-Z_]+)' "$HEADER" | awk '{ print $2 }' >"$T/header.errors"
[ "$(wc -l <"$T/header.errors")" -ge 20 ] || fail "read only $(wc -l <"$T/header.errors") error codes from sigverify.h"
while read -r code; do
  num=$(awk -v c="$code" '$1 == "#define" && $2 == c { print $3 }' "$HEADER")
  awk -v c="$code" 'prev == ".TP" && $0 == ".B " c { getline; print } { prev = $0 }' "$T/sigverify.h.3.txt" |
    grep -q "^$num:" || fail "sigverify.h(3) ERRORS has no entry '$code' with its number $num"
done <"$T/header.errors"

# --- rendering -----------------------------------------------------------------
for page in sigverifyd.8 sigverify.1 sigverifyd.conf.5 sigverify.h.3; do
  groff -man -Tutf8 -ww -z "$MAN/$page" 2>"$T/groff.err" || fail "groff failed on $page"
  [ ! -s "$T/groff.err" ] || fail "groff warns on $page: $(cat "$T/groff.err")"
  # man -l as an operator reads it: man's own preprocessing, formatted for 80 columns.
  MANWIDTH=80 man --warnings -l "$MAN/$page" >"$T/rendered" 2>"$T/man.err" ||
    fail "man -l failed on $page"
  [ ! -s "$T/man.err" ] || fail "man -l warns on $page: $(cat "$T/man.err")"
  grep -q "NAME" "$T/rendered" || fail "man -l $page rendered no NAME section"
done

[ $errors -eq 0 ] || { echo "$errors failure(s)" >&2; exit 1; }
echo "PASS: $(wc -l <"$T/daemon.flags") daemon flags, $(wc -l <"$T/subcommands") subcommands," \
  "$(wc -l <"$T/header.calls") C calls, 4 pages render cleanly"
