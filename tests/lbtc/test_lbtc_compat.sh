#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The libbitcoin compatibility layer as libbitcoin-system would use it: install
# into a temporary prefix (a plain install leaves the opt-in layer out; its
# component adds it), then build the call-site program as an outside consumer
# with only `pkg-config secp256k1-fast` and with find_package(secp256k1-fast
# 4.0.0.0), each with only the flags the package gives (WITH_ULTRAFAST among them), and run both against
# the installed sigverifyd on tables of known verdicts.
# usage: test_lbtc_compat.sh BUILD_DIR SOURCE_DIR WRITE_TABLES_EXE
set -euo pipefail
BUILD=$1 SRC=$2 WRITE_TABLES=$3
source "$(dirname "${BASH_SOURCE[0]}")/../support/daemon_test.sh" lbtc-compat

P=$T/prefix
cmake --install "$BUILD" --prefix "$P" > "$T/install.log" || { cat "$T/install.log"; fail "cmake --install"; }
if grep -q '^SIGVERIFY_LIBBITCOIN_COMPAT:BOOL=ON' "$BUILD/CMakeCache.txt"; then
  [ -e "$P/include/ufsecp/libbitcoin.hpp" ] || fail "SIGVERIFY_LIBBITCOIN_COMPAT=ON but the layer is not installed"
else
  [ ! -e "$P/include/ufsecp/libbitcoin.hpp" ] || fail "the opt-in layer was installed by a plain install"
  cmake --install "$BUILD" --prefix "$P" --component libsigverify-libbitcoin-dev >> "$T/install.log" ||
    { cat "$T/install.log"; fail "cmake --install --component libsigverify-libbitcoin-dev"; }
fi
for f in include/ufsecp/libbitcoin.hpp lib/pkgconfig/secp256k1-fast.pc \
         lib/cmake/secp256k1-fast/secp256k1-fastConfig.cmake lib/cmake/secp256k1-fast/secp256k1-fastConfigVersion.cmake; do
  [ -e "$P/$f" ] || fail "not installed: $f"
done
echo "compat layer installed: ok"

RUN=$T/run
"$P/sbin/sigverifyd" --foreground --runtime-dir "$RUN" --log-file "$T/daemon.log" --cpu-threads 2 &
DPID=$!
wait_for_socket "$RUN/sigverifyd.sock"
mkdir "$T/tables"
"$WRITE_TABLES" "$T/tables" 2000 || fail "writing the tables"
export SIGVERIFY_RUNTIME_DIR=$RUN

# pkg-config, as libbitcoin's autotools build: PKG_CHECK_MODULES(secp256k1-fast >= 4.0.0.0).
export PKG_CONFIG_PATH=$P/lib/pkgconfig
pkg-config --atleast-version=4.0.0.0 secp256k1-fast || fail "pkg-config: secp256k1-fast >= 4.0.0.0 not satisfied"
CXX=${CXX:-c++}
# shellcheck disable=SC2046
$CXX -std=c++20 -O1 -DLBTC_OUTSIDE_CONSUMER "$SRC/tests/lbtc/consumer/call_site_main.cpp" -o "$T/pc_call_site" \
  $(pkg-config --cflags --libs secp256k1-fast) || fail "pkg-config secp256k1-fast build"
LD_LIBRARY_PATH="$P/lib" "$T/pc_call_site" "$T/tables" 0 || fail "pkg-config consumer"
echo "pkg-config consumer: ok"

# CMake, as libbitcoin's with-ultrafast option: find_package(secp256k1-fast 4.0.0.0 REQUIRED).
cmake -S "$SRC/tests/lbtc/consumer" -B "$T/cbuild" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$P" \
  > "$T/cmake.log" 2>&1 || { cat "$T/cmake.log"; fail "find_package(secp256k1-fast 4.0.0.0) configure"; }
cmake --build "$T/cbuild" -j2 > "$T/cbuild.log" 2>&1 || { cat "$T/cbuild.log"; fail "find_package consumer build"; }
"$T/cbuild/lbtc_call_site" "$T/tables" 0 || fail "find_package consumer"
echo "find_package consumer: ok"

# A newer contract than the layer's must not be satisfied.
! pkg-config --atleast-version=4.1 secp256k1-fast || fail "pkg-config claims a contract newer than 4.0.0.0"
echo "PASS"
