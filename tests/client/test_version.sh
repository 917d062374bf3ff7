#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One version number everywhere, the CMake project's (CMakeLists.txt): the
# generated header and the library's sigverify_version() (as a C program sees
# them), sigverifyd --version, sigverify --version, the top entry of
# packaging/debian/changelog, a section of CHANGELOG.md, the man pages' title
# lines; and no other release number written into the sources.
# usage: test_version.sh SOURCE_DIR PROJECT_VERSION PRINT_LIBRARY_VERSION SIGVERIFYD SIGVERIFY
set -euo pipefail
SRC=$1 V=$2 PRINT=$3 DAEMON=$4 CLI=$5
errors=0
fail() { echo "FAIL: $*" >&2; errors=$((errors + 1)); }
IFS=. read -r major minor patch <<<"$V"
number=$(( (major << 16) | (minor << 8) | patch ))

out=$("$PRINT") || fail "print_library_version refused the library: $out"
grep -qx "headers $V $number" <<<"$out" || fail "headers: $(grep headers <<<"$out"), want $V $number"
grep -qx "library $V $number" <<<"$out" || fail "library: $(grep library <<<"$out"), want $V $number"
grep -q "^parts $V " <<<"$out" || fail "version macros: $(grep parts <<<"$out")"
soversion=$(sed -n 's/^parts .* soversion //p' <<<"$out")
so=$(ldd "$PRINT" | awk '/libsigverify\.so/ { print $1 }')
[ "$so" = "libsigverify.so.$soversion" ] || fail "linked against '$so', SIGVERIFY_SOVERSION is $soversion"

"$DAEMON" --version | grep -q "^sigverifyd $V " || fail "sigverifyd --version: $("$DAEMON" --version)"
[ "$("$CLI" --version)" = "sigverify $V" ] || fail "sigverify --version: $("$CLI" --version)"

top=$(head -1 "$SRC/packaging/debian/changelog")
[[ $top == "sigverify ($V) "* ]] || fail "packaging/debian/changelog's top entry is '$top', not $V"
grep -q "^## $V " "$SRC/CHANGELOG.md" || grep -qx "## $V" "$SRC/CHANGELOG.md" || fail "CHANGELOG.md has no section '## $V'"
for page in "$SRC"/packaging/man/*.[1-9]; do
  th=$(grep -m1 '^\.TH ' "$page")
  grep -q "\"sigverify $V\"" <<<"$th" || fail "$(basename "$page"): title line '$th' does not name sigverify $V"
done

# No release number written by hand into the code: an "x.y.z" inside a string literal in
# the C/C++ sources of the daemon, library, CLI and examples (the number comes
# from sigverify/version.h).
hits=$(grep -rnE '"[^"]*\b[0-9]+\.[0-9]+\.[0-9]+\b[^"]*"' --include='*.cpp' --include='*.hpp' --include='*.h' --include='*.c' \
  "$SRC/daemon" "$SRC/client" "$SRC/shm_protocol" "$SRC/reference" "$SRC/examples" || true)
[ -z "$hits" ] || fail "a version number written into the sources: $hits"

[ $errors -eq 0 ] || { echo "$errors failure(s)" >&2; exit 1; }
echo "PASS: version $V ($number), libsigverify.so.$soversion, everywhere"
