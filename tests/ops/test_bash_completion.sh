#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The bash completion of sigverify, driven as bash drives it (COMP_WORDS,
# COMP_CWORD, then the function `complete -p` names), with the real binary
# answering its --help: subcommands, each subcommand's flags, flag values.
# usage: test_bash_completion.sh COMPLETION_FILE SIGVERIFY
set -euo pipefail
FILE=$1 CLI=$2
errors=0
fail() { echo "FAIL: $*" >&2; errors=$((errors + 1)); }

# shellcheck disable=SC1090
source "$FILE"
spec=$(complete -p sigverify) || { echo "FAIL: $FILE registers no completion for sigverify" >&2; exit 1; }
func=$(sed -nE 's/.*-F ([^ ]+) .*/\1/p' <<<"$spec")
[ -n "$func" ] || { echo "FAIL: no completion function in '$spec'" >&2; exit 1; }

# complete WORD...: the candidates for the last word, one per line, sorted.
complete_words() {
  COMP_WORDS=("$CLI" "$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMP_LINE="${COMP_WORDS[*]}"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  "$func" sigverify "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  printf '%s\n' "${COMPREPLY[@]}" | sed '/^$/d' | sort
}
expect() {  # expect "WORDS" "CANDIDATES (space separated)"
  local got want words
  read -ra words <<<"$1"
  [[ $1 == *" " ]] && words+=("")  # a trailing space: completing a new, empty word
  got=$(complete_words "${words[@]}" | tr '\n' ' ')
  want=$(tr ' ' '\n' <<<"$2" | sed '/^$/d' | sort | tr '\n' ' ')
  [ "$got" = "$want" ] || fail "'sigverify $1': got '$got', expected '$want'"
}

# Subcommands: all of them for an empty word, exactly one for a prefix.
subcommands=$("$CLI" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }' | sort | tr '\n' ' ')
[ "$(wc -w <<<"$subcommands")" -ge 8 ] || fail "read only '$subcommands' from sigverify --help"
[ "$(complete_words "" | tr '\n' ' ')" = "$subcommands" ] || fail "'sigverify <TAB>': $(complete_words "" | tr '\n' ' ')"
expect "ver" "verify"
expect "st" "stats"
expect "--ver" "--version"

# Flags: a prefix, and for every subcommand exactly the flags of its --help.
expect "verify --lo" "--local"
expect "ping --c" "--count"
expect "verify --table ecdsa --in rows --st" "--strict"
for sub in $subcommands; do
  want=$("$CLI" "$sub" --help | grep -oE '^ +(-[a-z],)?--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u |
    tr '\n' ' ')
  got=$(complete_words "$sub" "--" | tr '\n' ' ')
  [ "$got" = "$want" ] || fail "'sigverify $sub --<TAB>': got '$got', expected '$want'"
done

# Values of flags with a fixed set, and subcommand arguments.
expect "verify --table s" "schnorr"
expect "gen --table " "ecdsa multisig schnorr threshold"
expect "columns --sig-format c" "compact"
expect "stats c" "clients"

# Paths: a file for --in, directories only for --runtime-dir.
D=$(mktemp -d /tmp/sigverify-compl-XXXXXX)
trap 'rm -rf "$D"' EXIT
mkdir "$D/rundir" && touch "$D/rows.bin"
expect "verify --in $D/ro" "$D/rows.bin"
expect "ping --runtime-dir $D/r" "$D/rundir"

[ $errors -eq 0 ] || { echo "$errors failure(s)" >&2; exit 1; }
echo "PASS: completion of $(wc -w <<<"$subcommands") subcommands, their flags and values"
