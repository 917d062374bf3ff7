#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# cmake --install into a temporary prefix, then a node-side project builds
# against the installed tree through find_package(sigverify) (shared, static,
# C ABI) and through pkg-config (shared C++ and C, static C++), and every one
# of them verifies the same rows through the installed sigverifyd. The daemon's
# stats must count exactly those rows.
# usage: test_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$1 SRC=$2
source "$(dirname "${BASH_SOURCE[0]}")/../support/daemon_test.sh" install

P=$T/prefix
cmake --install "$BUILD" --prefix "$P" > "$T/install.log" || { cat "$T/install.log"; fail "cmake --install"; }
for f in sbin/sigverifyd bin/sigverify lib/libsigverify.so lib/libsigverify.a \
         include/sigverify/client.hpp include/sigverify/sigverify.h include/sigverify/version.h \
         include/sigverify/shm_protocol/segment_layout.hpp include/sigverify/shm_protocol/wire_format.hpp \
         lib/pkgconfig/sigverify.pc lib/cmake/sigverify/sigverifyConfig.cmake \
         lib/cmake/sigverify/sigverifyConfigVersion.cmake lib/systemd/system/sigverifyd.service \
         lib/sysusers.d/sigverifyd.conf lib/tmpfiles.d/sigverifyd.conf etc/sigverifyd/sigverifyd.conf \
         share/doc/sigverify/operations.md share/man/man3/sigverify.h.3.gz; do
  [ -e "$P/$f" ] || fail "not installed: $f"
done
echo "install layout: ok"

# A live daemon from the installed tree.
RUN=$T/run
"$P/sbin/sigverifyd" --foreground --runtime-dir "$RUN" --log-file "$T/daemon.log" --cpu-threads 2 &
DPID=$!
wait_for_socket "$RUN/stats.sock"

"$P/bin/sigverify" gen --table ecdsa --count 400 --invalid-rate 0.25 --seed 11 --threads 2 --out "$T/e.rows" >/dev/null
local_line=$("$P/bin/sigverify" verify --local --threads 2 --table ecdsa --in "$T/e.rows")
V=$(sed -n 's/.* valid=\([0-9]*\) .*/\1/p' <<<"$local_line")
I=$(sed -n 's/.* invalid=\([0-9]*\) .*/\1/p' <<<"$local_line")
[ -n "$V" ] && [ -n "$I" ] && [ "$I" -gt 0 ] || fail "cannot read the reference counts: $local_line"
want="valid=$V invalid=$I"

# find_package(sigverify)
cmake -S "$SRC/tests/ops/consumer" -B "$T/cbuild" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$P" \
  > "$T/cmake.log" 2>&1 || { cat "$T/cmake.log"; fail "consumer: find_package(sigverify) configure"; }
cmake --build "$T/cbuild" -j2 > "$T/cbuild.log" 2>&1 || { cat "$T/cbuild.log"; fail "consumer: CMake build"; }
# ldd's output to files first: under pipefail, `ldd | grep -q` fails whenever
# grep exits before ldd has written everything (SIGPIPE), a flake under load.
ldd "$T/cbuild/consumer_shared" >"$T/ldd_shared.txt"
ldd "$T/cbuild/consumer_static" >"$T/ldd_static.txt" || true  # "not a dynamic executable" exits 1
grep -q "$P/lib/libsigverify.so" "$T/ldd_shared.txt" || fail "consumer_shared does not use the installed libsigverify.so"
! grep -q libsigverify "$T/ldd_static.txt" || fail "consumer_static links libsigverify dynamically"
runs=0
for exe in consumer_shared consumer_static consumer_c; do
  got=$("$T/cbuild/$exe" "$RUN" "$T/e.rows") || fail "$exe failed"
  [ "$got" = "$want" ] || fail "$exe: '$got', expected '$want'"
  runs=$((runs + 1))
done
echo "find_package consumers: ok"

# The CMake package's version rule while 0.x: the same minor version only.
version_file=$P/lib/cmake/sigverify/sigverifyConfigVersion.cmake
pkg_version=$(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")/\1/p' "$version_file")
IFS=. read -r pmaj pmin _ <<<"$pkg_version"
accepts() {  # accepts VERSION: does find_package(sigverify VERSION) take the installed package?
  local want=$1 out
  IFS=. read -r wmaj wmin wpat <<<"$want"
  out=$(cmake -DPACKAGE_FIND_VERSION="$want" -DPACKAGE_FIND_VERSION_MAJOR="$wmaj" \
    -DPACKAGE_FIND_VERSION_MINOR="$wmin" -DPACKAGE_FIND_VERSION_PATCH="$wpat" -DPACKAGE_FIND_VERSION_COUNT=3 \
    -DF="$version_file" -P "$SRC/tests/ops/consumer/version_compatible.cmake")
  [ "$out" = TRUE ]
}
accepts "$pmaj.$pmin.0" || fail "find_package(sigverify $pmaj.$pmin.0) refuses $pkg_version"
! accepts "$pmaj.$((pmin + 1)).0" || fail "find_package(sigverify $pmaj.$((pmin + 1)).0) accepts $pkg_version"
if [ "$pmin" -gt 0 ]; then
  ! accepts "$pmaj.$((pmin - 1)).0" || fail "find_package(sigverify $pmaj.$((pmin - 1)).0) accepts $pkg_version (0.x: same minor only)"
fi
echo "CMake package version rule: ok ($pkg_version)"

# pkg-config
export PKG_CONFIG_PATH=$P/lib/pkgconfig
[ "$(pkg-config --modversion sigverify)" = "$(sed -n 's/^Version: //p' "$P/lib/pkgconfig/sigverify.pc")" ] || fail "pkg-config"
CXX=${CXX:-c++} CC=${CC:-cc}
# shellcheck disable=SC2046
$CXX -std=c++20 -O1 "$SRC/tests/ops/consumer/consumer.cpp" -o "$T/pc_cpp" $(pkg-config --cflags --libs sigverify) ||
  fail "pkg-config C++ build"
# shellcheck disable=SC2046
$CC -O1 "$SRC/tests/ops/consumer/consumer_c.c" -o "$T/pc_c" $(pkg-config --cflags --libs sigverify) || fail "pkg-config C build"
static_libs=$(pkg-config --static --libs sigverify)
static_libs=${static_libs/-lsigverify /-l:libsigverify.a }
# shellcheck disable=SC2046,SC2086
$CXX -std=c++20 -O1 "$SRC/tests/ops/consumer/consumer.cpp" -o "$T/pc_static" $(pkg-config --cflags sigverify) $static_libs ||
  fail "pkg-config static C++ build"
# A C node linked statically with the C compiler driver, which adds no C++
# runtime of its own: Libs.private must name all libsigverify.a needs.
# shellcheck disable=SC2046,SC2086
$CC -O1 "$SRC/tests/ops/consumer/consumer_c.c" -o "$T/pc_static_c" $(pkg-config --cflags sigverify) $static_libs \
  2>"$T/pc_static_c.log" || { tail -5 "$T/pc_static_c.log"; fail "pkg-config static C build (cc, Libs.private: $static_libs)"; }
for exe in pc_cpp pc_c pc_static pc_static_c; do
  got=$(LD_LIBRARY_PATH="$P/lib" "$T/$exe" "$RUN" "$T/e.rows") || fail "$exe failed"
  [ "$got" = "$want" ] || fail "$exe: '$got', expected '$want'"
  runs=$((runs + 1))
done
echo "pkg-config consumers: ok"

# The installed CLI reads the installed daemon's stats: exactly these rows.
stats=$("$P/bin/sigverify" stats --runtime-dir "$RUN")
grep -qx "sigverifyd_rows_verified_total{table=\"unspecified\",verdict=\"valid\"} $((runs * V))" <<<"$stats" ||
  fail "stats: valid rows $(grep 'unspecified",verdict="valid"' <<<"$stats"), expected $((runs * V))"
grep -qx "sigverifyd_rows_verified_total{table=\"unspecified\",verdict=\"invalid\"} $((runs * I))" <<<"$stats" ||
  fail "stats: invalid rows, expected $((runs * I))"
grep -qx "sigverifyd_connections_accepted_total $runs" <<<"$stats" || fail "stats: connections, expected $runs"

kill -TERM "$DPID"
wait "$DPID" || fail "sigverifyd exited with $?"
DPID=
echo "PASS ($runs consumers, $V valid + $I invalid rows each)"
