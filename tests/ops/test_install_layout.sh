#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The /usr layout the way a package installs it: a build configured for the
# prefix /usr (scripts/package.sh --no-deb), `DESTDIR=scratch cmake --install
# --prefix /usr`. The config must land in scratch/etc (where the unit reads it,
# not scratch/usr/etc), next to the unit, sysusers, tmpfiles, binaries, libraries,
# headers, pkg-config file, CMake package, man pages and completion. Then the
# daemon starts from the installed unit's own ExecStart line (its paths moved
# into the scratch root, a private socket directory, the CPU backend) and the
# installed sigverify pings it.
# usage: test_install_layout.sh SOURCE_DIR USR_BUILD_DIR [cmake arguments]
set -euo pipefail
SRC=$1 B=$2
shift 2
source "$(dirname "${BASH_SOURCE[0]}")/../support/daemon_test.sh" layout

SIGVERIFY_JOBS=${SIGVERIFY_JOBS:-2} "$SRC/scripts/package.sh" --no-deb "$B" "$@" >"$T/build.log" 2>&1 ||
  { tail -40 "$T/build.log"; fail "scripts/package.sh --no-deb"; }
S=$T/scratch
DESTDIR=$S cmake --install "$B" --prefix /usr >"$T/install.log" || { cat "$T/install.log"; fail "cmake --install"; }

MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
for f in etc/sigverifyd/sigverifyd.conf usr/lib/systemd/system/sigverifyd.service usr/lib/sysusers.d/sigverifyd.conf \
         usr/lib/tmpfiles.d/sigverifyd.conf usr/sbin/sigverifyd usr/bin/sigverify \
         "usr/lib/$MA/libsigverify.so.0" "usr/lib/$MA/libsigverify.so" "usr/lib/$MA/libsigverify.a" \
         usr/include/sigverify/client.hpp usr/include/sigverify/sigverify.h usr/include/sigverify/version.h \
         usr/include/sigverify/shm_protocol/wire_format.hpp "usr/lib/$MA/pkgconfig/sigverify.pc" \
         "usr/lib/$MA/cmake/sigverify/sigverifyConfig.cmake" usr/share/man/man8/sigverifyd.8.gz \
         usr/share/man/man1/sigverify.1.gz usr/share/man/man5/sigverifyd.conf.5.gz usr/share/man/man3/sigverify.h.3.gz \
         usr/share/bash-completion/completions/sigverify usr/share/doc/sigverify/operations.md; do
  [ -e "$S/$f" ] || fail "not installed: /$f"
done
[ ! -e "$S/usr/etc" ] || fail "something went to /usr/etc: $(find "$S/usr/etc")"
echo "layout: ok"

# The unit's ExecStart, its absolute paths moved into the scratch root. Every
# path it names must be there; $SIGVERIFYD_OPTS (/etc/default/sigverifyd) gets
# what a test needs: a private socket directory, the CPU backend, and this
# user's group in place of "sigverify" (which this host need not have).
unit=$S/usr/lib/systemd/system/sigverifyd.service
exec_start=$(sed -n 's/^ExecStart=//p' "$unit")
[ -n "$exec_start" ] || fail "the installed unit has no ExecStart"
doc=$(sed -n 's/^Documentation=file://p' "$unit")
[ -z "$doc" ] || [ -e "$S$doc" ] || fail "the unit's Documentation= names $doc, not installed"
RUN=$T/run
opts=(--runtime-dir "$RUN" --backend cpu --cpu-threads 2 --group "$(id -gn)" --log-file "$T/daemon.log")
cmd=()
read -ra words <<<"$exec_start"
for w in "${words[@]}"; do
  # shellcheck disable=SC2016  # '$SIGVERIFYD_OPTS' is the unit's literal word
  case $w in
    '$SIGVERIFYD_OPTS') cmd+=("${opts[@]}") ;;
    /*) [ -e "$S$w" ] || fail "ExecStart names $w, not installed"; cmd+=("$S$w") ;;
    *) cmd+=("$w") ;;
  esac
done
[ "${cmd[0]}" = "$S/usr/sbin/sigverifyd" ] || fail "ExecStart does not start the installed daemon: $exec_start"
grep -q -- "--config $S/etc/sigverifyd/sigverifyd.conf" <<<"${cmd[*]}" || fail "ExecStart does not read the installed config"

# (sigverifyd refuses to start when --config names a file it cannot read.)
LD_LIBRARY_PATH=$S/usr/lib/$MA "${cmd[@]}" &
DPID=$!
wait_for_socket "$RUN/sigverifyd.sock"
"$S/usr/bin/sigverify" ping --runtime-dir "$RUN" --count 3 >"$T/ping.txt" || fail "sigverify ping: $(cat "$T/ping.txt")"
kill -TERM "$DPID"
wait "$DPID" || fail "sigverifyd exited with $?"
DPID=
echo "PASS: /usr layout installed; the unit's ExecStart serves pings ($(tail -1 "$T/ping.txt"))"
