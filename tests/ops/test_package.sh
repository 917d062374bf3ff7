#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian packages as an operator gets them: scripts/package.sh builds them
# (a /usr build beside the test build; ccache reuses its objects), lintian finds
# no error or warning, each package holds exactly its files, the config is a
# conffile, and dpkg installs all three into a scratch root (the maintainer
# scripts run there through DPKG_ROOT: user, tmpfiles, unit enabled, not
# started). The installed daemon and CLI run; a C program built against the
# installed libsigverify-dev and run on libsigverify0 verifies rows through
# the installed daemon; the optional libbitcoin layer (libsigverify-libbitcoin-dev)
# builds libbitcoin's call site with only `pkg-config secp256k1-fast` and it runs
# through that daemon. A purge removes the config and the unit's enablement.
# The packaged binaries and library carry Debian's hardening (PIE, RELRO,
# BIND_NOW, stack protector, fortify).
# With --reproducible (ctest's test_package_reproducible, label long): the
# packages only, then a second build of the same commit from clean must give
# byte-identical .debs (or the differences are listed).
# usage: test_package.sh [--reproducible] SOURCE_DIR PACKAGE_BUILD_DIR [cmake arguments for the package build]
set -euo pipefail
REPRODUCIBLE=0
if [ "${1:-}" = --reproducible ]; then REPRODUCIBLE=1; shift; fi
SRC=$1 PKG_BUILD=$2
shift 2
source "$(dirname "${BASH_SOURCE[0]}")/../support/daemon_test.sh" package

SIGVERIFY_JOBS=${SIGVERIFY_JOBS:-2} "$SRC/scripts/package.sh" "$PKG_BUILD" "$@" >"$T/package.log" 2>&1 ||
  { tail -40 "$T/package.log"; fail "scripts/package.sh"; }
P=$PKG_BUILD/packages
V=$(sed -n 's/^project(sigverify VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
# The library's own numbers (libtool style, CMakeLists.txt): soname .so.(CURRENT - AGE),
# file .so.(CURRENT - AGE).AGE.REVISION.
lib_number() { sed -n "s/^set(SIGVERIFY_LIB_$1 \([0-9]*\))/\1/p" "$SRC/CMakeLists.txt"; }
SOV=$(( $(lib_number CURRENT) - $(lib_number AGE) ))
LIBV=$SOV.$(lib_number AGE).$(lib_number REVISION)
ARCH=$(dpkg --print-architecture)
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
D=$P/sigverifyd_${V}_$ARCH.deb L=$P/libsigverify0_${V}_$ARCH.deb DEV=$P/libsigverify-dev_${V}_$ARCH.deb
LBTC=$P/libsigverify-libbitcoin-dev_${V}_$ARCH.deb
for f in "$D" "$L" "$DEV" "$LBTC"; do [ -f "$f" ] || fail "not built: $f ($(ls "$P"))"; done

# --- reproducible: built again from scratch, the same bytes ---------------------------
# The same commit, build directory and SOURCE_DATE_EPOCH (package.sh: the last
# commit's time) after `clean`: every file is made anew (new mtimes), ccache
# may give the same objects again, the link, strip and CPack steps run again.
# Any .deb that differs is listed with what differs in it.
if [ $REPRODUCIBLE = 1 ]; then
  mkdir "$T/first"
  cp "$D" "$L" "$DEV" "$LBTC" "$T/first/"
  cmake --build "$PKG_BUILD" --target clean >/dev/null
  SIGVERIFY_JOBS=${SIGVERIFY_JOBS:-2} "$SRC/scripts/package.sh" "$PKG_BUILD" "$@" >"$T/package2.log" 2>&1 ||
    { tail -40 "$T/package2.log"; fail "scripts/package.sh (second build)"; }
  differ=0
  for f in "$T"/first/*.deb; do
    again=$P/$(basename "$f")
    cmp -s "$f" "$again" && continue
    differ=$((differ + 1))
    echo "not reproducible: $(basename "$f")" >&2
    for tarfile in --ctrl-tarfile --fsys-tarfile; do  # names, modes, owners, time stamps
      diff <(dpkg-deb "$tarfile" "$f" | tar -tv --full-time) <(dpkg-deb "$tarfile" "$again" | tar -tv --full-time) >&2 || true
    done
    rm -rf "$T/a" "$T/b"
    dpkg-deb -R "$f" "$T/a" && dpkg-deb -R "$again" "$T/b" && diff -rq "$T/a" "$T/b" >&2 || true  # contents
  done
  [ "$differ" = 0 ] || fail "$differ package(s) differ between two builds of one commit"
  echo "PASS: reproducible: two builds give byte-identical packages ($(cd "$P" && sha256sum ./*.deb | cut -c1-16 | tr '\n' ' '))"
  exit 0
fi

# --- lintian: no error, no warning (the expected ones are overridden) --------------
lintian --tag-display-limit 0 "$D" "$L" "$DEV" "$LBTC" >"$T/lintian.txt" 2>&1 || true
if grep -E '^[EW]: ' "$T/lintian.txt"; then fail "lintian reports the tags above"; fi
echo "lintian: clean"

# --- each package's file list ---------------------------------------------------------
files() { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { print $6 }' | sed 's|^\./|/|' | sort; }
expect_files() {  # expect_files DEB FILE...: the package holds exactly these files
  local deb=$1; shift
  files "$deb" >"$T/got"
  printf '%s\n' "$@" | sort >"$T/want"
  diff -u "$T/want" "$T/got" >"$T/diff" || { cat "$T/diff" >&2; fail "file list of $(basename "$deb")"; }
}
doc() { echo "/usr/share/doc/$1/copyright" "/usr/share/doc/$1/changelog.gz"; }
# shellcheck disable=SC2046
expect_files "$D" /usr/sbin/sigverifyd /usr/bin/sigverify /etc/sigverifyd/sigverifyd.conf \
  /usr/lib/systemd/system/sigverifyd.service /usr/lib/sysusers.d/sigverifyd.conf /usr/lib/tmpfiles.d/sigverifyd.conf \
  /usr/share/doc/sigverify/operations.md $(doc sigverifyd) /usr/share/lintian/overrides/sigverifyd \
  /usr/share/man/man8/sigverifyd.8.gz /usr/share/man/man1/sigverify.1.gz /usr/share/man/man5/sigverifyd.conf.5.gz \
  /usr/share/bash-completion/completions/sigverify
# shellcheck disable=SC2046
expect_files "$L" "/usr/lib/$MA/libsigverify.so.$SOV" "/usr/lib/$MA/libsigverify.so.$LIBV" $(doc libsigverify0) \
  /usr/share/lintian/overrides/libsigverify0
# shellcheck disable=SC2046
expect_files "$DEV" /usr/include/sigverify/client.hpp /usr/include/sigverify/sigverify.h \
  /usr/include/sigverify/groups.hpp /usr/include/sigverify/export.h /usr/include/sigverify/version.h \
  /usr/include/sigverify/lbtc.hpp \
  /usr/share/man/man3/sigverify.h.3.gz \
  /usr/include/sigverify/shm_protocol/segment_access.hpp /usr/include/sigverify/shm_protocol/segment_layout.hpp \
  /usr/include/sigverify/shm_protocol/wire_format.hpp /usr/include/sigverify/shm_protocol/group_fields.hpp \
  "/usr/lib/$MA/libsigverify.so" "/usr/lib/$MA/libsigverify.a" \
  "/usr/lib/$MA/libsigverify_reference.a" "/usr/lib/$MA/pkgconfig/sigverify.pc" \
  "/usr/lib/$MA/cmake/sigverify/sigverifyConfig.cmake" "/usr/lib/$MA/cmake/sigverify/sigverifyConfigVersion.cmake" \
  "/usr/lib/$MA/cmake/sigverify/sigverifyTargets.cmake" "/usr/lib/$MA/cmake/sigverify/sigverifyTargets-release.cmake" \
  $(doc libsigverify-dev)
# shellcheck disable=SC2046
expect_files "$LBTC" /usr/include/ufsecp/libbitcoin.hpp "/usr/lib/$MA/pkgconfig/secp256k1-fast.pc" \
  "/usr/lib/$MA/cmake/secp256k1-fast/secp256k1-fastConfig.cmake" \
  "/usr/lib/$MA/cmake/secp256k1-fast/secp256k1-fastConfigVersion.cmake" $(doc libsigverify-libbitcoin-dev)
echo "file lists: ok"

# --- control data ------------------------------------------------------------------
ctrl() { dpkg-deb --ctrl-tarfile "$1" | tar -xO "./$2" 2>/dev/null; }
[ "$(ctrl "$D" conffiles)" = /etc/sigverifyd/sigverifyd.conf ] || fail "conffiles of sigverifyd: '$(ctrl "$D" conffiles)'"
[ "$(ctrl "$L" shlibs)" = "libsigverify $SOV libsigverify0 (>= $V)" ] || fail "shlibs of libsigverify0: '$(ctrl "$L" shlibs)'"
# The symbols file: shipped as written, and every C call the library exports is in it
# at a version node of the map.
ctrl "$L" symbols >"$T/symbols" || fail "libsigverify0 has no symbols file"
cmp -s "$T/symbols" "$SRC/packaging/debian/libsigverify0/symbols" || fail "libsigverify0's symbols file is not packaging/debian/libsigverify0/symbols"
# nm prints name@@NODE; deb-symbols(5) writes name@NODE.
nm -D --defined-only "$PKG_BUILD/client/libsigverify.so.$LIBV" | awk '$3 ~ /^sigverify_/ { sub("@@", "@", $3); print $3 }' >"$T/exported"
[ "$(wc -l <"$T/exported")" -ge 25 ] || fail "read only $(wc -l <"$T/exported") C symbols from the packaged build's library"
while read -r sym; do
  grep -q "^ ${sym} " "$T/symbols" || fail "the symbols file lacks $sym (at that version node)"
done <"$T/exported"
grep -qx 'activate-noawait ldconfig' <(ctrl "$L" triggers) || fail "libsigverify0 lacks the ldconfig trigger"
[ "$(dpkg-deb -f "$L" Package)" = libsigverify0 ] || fail "package name of $L"
grep -q 'libsecp256k1-1' <<<"$(dpkg-deb -f "$D" Depends)" || fail "sigverifyd Depends lacks libsecp256k1: $(dpkg-deb -f "$D" Depends)"
grep -q 'libsecp256k1-1' <<<"$(dpkg-deb -f "$L" Depends)" || fail "libsigverify0 Depends lacks libsecp256k1"
grep -q "libsigverify0 (= $V)" <<<"$(dpkg-deb -f "$DEV" Depends)" || fail "libsigverify-dev does not depend on libsigverify0 (= $V)"
[ "$(dpkg-deb -f "$LBTC" Depends)" = "libsigverify-dev (= $V)" ] ||
  fail "libsigverify-libbitcoin-dev Depends: '$(dpkg-deb -f "$LBTC" Depends)', expected 'libsigverify-dev (= $V)'"
echo "control: ok"

# --- Debian's hardening flags, as the packaged ELF files show them --------------------
# (scripts/package.sh passes dpkg-buildflags' hardening=+all; what hardening-check
# of devscripts reports, read with readelf.) PIE: an executable of type DYN with
# the PIE flag; RELRO and BIND_NOW (-z relro -z now: the whole GOT read-only once
# loaded); the stack protector (__stack_chk_fail) and _FORTIFY_SOURCE (the
# checking __*_chk variants of libc calls) imported.
mkdir "$T/x"
dpkg-deb -x "$D" "$T/x"
dpkg-deb -x "$L" "$T/x"
hardened() {  # hardened ELF [exe|lib]
  local elf=$1 what=$2 dyn syms
  dyn=$(readelf -dW "$elf") syms=$(readelf --dyn-syms -W "$elf")
  if [ "$what" = exe ]; then
    readelf -hW "$elf" | grep -q 'Type: *DYN' || fail "$elf is not position-independent (ELF type not DYN)"
    grep -Eq 'FLAGS_1.*PIE' <<<"$dyn" || fail "$elf has no PIE flag"
  fi
  readelf -lW "$elf" | grep -q GNU_RELRO || fail "$elf has no RELRO segment"
  grep -Eq 'BIND_NOW|FLAGS_1.* NOW' <<<"$dyn" || fail "$elf is not linked with -z now"
  grep -q '__stack_chk_fail' <<<"$syms" || fail "$elf has no stack protector (__stack_chk_fail)"
  grep -Eq ' __[a-z_]+_chk(@|$)' <<<"$(grep -v __stack_chk_fail <<<"$syms")" ||
    fail "$elf calls no fortified libc function (_FORTIFY_SOURCE)"
}
hardened "$T/x/usr/sbin/sigverifyd" exe
hardened "$T/x/usr/bin/sigverify" exe
hardened "$T/x/usr/lib/$MA/libsigverify.so.$LIBV" lib
echo "hardening: PIE, RELRO, BIND_NOW, stack protector, fortify in sigverifyd, sigverify, libsigverify.so"

# --- dpkg into a scratch root --------------------------------------------------------
# The maintainer scripts run outside the root (--force-script-chrootless) and
# reach it through DPKG_ROOT, as in a bootstrap; no systemd runs there.
R=$T/root
mkdir -p "$R/var/lib/dpkg/info" "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/triggers" "$R/etc"
touch "$R/var/lib/dpkg/status"
DPKG=(dpkg --root="$R" --force-script-chrootless --force-depends --force-not-root --log=/dev/null)
"${DPKG[@]}" -i "$L" "$DEV" "$LBTC" "$D" >"$T/dpkg.log" 2>&1 || { cat "$T/dpkg.log"; fail "dpkg -i"; }
for p in sigverifyd libsigverify0 libsigverify-dev libsigverify-libbitcoin-dev; do
  [ "$(dpkg-query --root="$R" -W -f='${db:Status-Abbrev}' "$p")" = "ii " ] || fail "$p is not installed in the scratch root"
done
[ -f "$R/etc/sigverifyd/sigverifyd.conf" ] || fail "config not installed"
grep -q '^sigverify:' "$R/etc/passwd" || fail "postinst created no user sigverify"
grep -q '^sigverify:' "$R/etc/group" || fail "postinst created no group sigverify"
[ -L "$R/etc/systemd/system/multi-user.target.wants/sigverifyd.service" ] || fail "postinst did not enable the unit"
echo "dpkg install: ok (user, group, unit enabled)"

# The installed binaries; the shared library from the root.
export LD_LIBRARY_PATH=$R/usr/lib/$MA
"$R/usr/sbin/sigverifyd" --version | grep -q "^sigverifyd $V " || fail "installed sigverifyd --version"
[ "$("$R/usr/bin/sigverify" --version)" = "sigverify $V" ] || fail "installed sigverify --version"

# A node built against the installed dev package (pkg-config from the root's
# relocatable .pc) runs on libsigverify0 and verifies through the installed daemon.
PKG_CONFIG_PATH=$R/usr/lib/$MA/pkgconfig
export PKG_CONFIG_PATH
# shellcheck disable=SC2046
${CC:-cc} -O1 "$SRC/tests/ops/consumer/consumer_c.c" -o "$T/node" $(pkg-config --cflags --libs sigverify) ||
  fail "building against the installed libsigverify-dev"
ldd "$T/node" >"$T/ldd.txt"
grep -q "$R/usr/lib/$MA/libsigverify.so.0" "$T/ldd.txt" || fail "the node does not load libsigverify.so.0 from the root"
RUN=$T/run
"$R/usr/sbin/sigverifyd" --foreground --backend cpu --cpu-threads 2 --runtime-dir "$RUN" --log-file "$T/daemon.log" &
DPID=$!
wait_for_socket "$RUN/stats.sock"
"$R/usr/bin/sigverify" gen --table ecdsa --count 300 --invalid-rate 0.2 --seed 5 --threads 2 --out "$T/e.rows" >/dev/null
want=$("$R/usr/bin/sigverify" verify --local --threads 2 --table ecdsa --in "$T/e.rows" |
  sed -n 's/.* \(valid=[0-9]*\) \(invalid=[0-9]*\) .*/\1 \2/p')
got=$("$T/node" "$RUN" "$T/e.rows") || fail "the node failed against the installed daemon"
if [ -z "$want" ] || [ "$got" != "$want" ]; then fail "node: '$got', expected '$want'"; fi
# libbitcoin's call site (tests/lbtc/consumer), built as libbitcoin-system's
# autotools build finds its accelerator: only pkg-config secp256k1-fast >= 4.0.0.0
# and the flags it gives (WITH_ULTRAFAST among them: libbitcoin never defines it); run on tables of known
# verdicts (LBTC_WRITE_TABLES, the test build's writer) against the installed daemon.
pkg-config --atleast-version=4.0.0.0 secp256k1-fast || fail "installed secp256k1-fast.pc: >= 4.0.0.0 not satisfied"
# shellcheck disable=SC2046
${CXX:-c++} -std=c++20 -O1 -DLBTC_OUTSIDE_CONSUMER "$SRC/tests/lbtc/consumer/call_site_main.cpp" \
  -o "$T/lbtc_call_site" $(pkg-config --cflags --libs secp256k1-fast) ||
  fail "building libbitcoin's call site against the installed libsigverify-libbitcoin-dev"
mkdir "$T/tables"
"$LBTC_WRITE_TABLES" "$T/tables" 500 || fail "writing the tables"
SIGVERIFY_RUNTIME_DIR=$RUN "$T/lbtc_call_site" "$T/tables" 0 || fail "libbitcoin's call site on the installed packages"
echo "libsigverify-libbitcoin-dev: libbitcoin's call site builds and runs"
kill -TERM "$DPID"; wait "$DPID" || fail "installed sigverifyd exited with $?"
DPID=
echo "installed binaries: ok (node on libsigverify0: $got)"


# --- purge ---------------------------------------------------------------------------
"${DPKG[@]}" --purge sigverifyd libsigverify-libbitcoin-dev libsigverify-dev libsigverify0 >"$T/purge.log" 2>&1 || { cat "$T/purge.log"; fail "dpkg --purge"; }
[ ! -e "$R/etc/sigverifyd" ] || fail "purge left /etc/sigverifyd: $(ls -A "$R/etc/sigverifyd")"
[ ! -e "$R/etc/systemd/system/multi-user.target.wants/sigverifyd.service" ] || fail "purge left the unit enabled"
if [ -e "$R/usr/sbin/sigverifyd" ] || [ -e "$R/usr/lib/$MA/libsigverify.so.0" ]; then fail "purge left files"; fi

echo "PASS: 4 packages built, hardened, lint-clean, installed, run and purged (reproducibility: test_package_reproducible)"
