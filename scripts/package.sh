#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds the Debian packages sigverifyd, libsigverify0, libsigverify-dev and
# libsigverify-libbitcoin-dev (the optional libbitcoin compatibility layer)
# with CPack (cmake/SigverifyPackage.cmake) into BUILD_DIR/packages.
# usage: scripts/package.sh [--no-deb] [BUILD_DIR [extra cmake arguments]]
#   --no-deb: only configure and build the /usr tree (tests/ops/test_install_layout.sh).
#   BUILD_DIR defaults to build-package (beside build/, so that ccache, when
#   installed, reuses the objects of the test build: same depth, same flags).
# The build is configured for /usr without the tests; CUDA is built when nvcc
# is found (SIGVERIFY_CUDA=AUTO; pass -DSIGVERIFY_CUDA=OFF for a CPU-only package),
# with machine code for every GPU generation CUDA 13 builds from Turing up
# (SIGVERIFY_CUDA_ALL_ARCHITECTURES=ON: node operators mostly have consumer
# cards; ~4x the CUDA compile time). Extra cmake arguments come last and win,
# e.g. -DSIGVERIFY_CUDA_ALL_ARCHITECTURES=OFF (sm_90 only: the package tests).
# Debian's hardening flags, as debhelper passes them (dpkg-buildflags with
# DEB_BUILD_MAINT_OPTIONS=hardening=+all unless the caller sets it):
# _FORTIFY_SOURCE=2, -fstack-protector-strong, -Werror=format-security,
# -Wl,-z,relro -Wl,-z,now; PIE is Debian gcc's default (and
# CMAKE_POSITION_INDEPENDENT_CODE). Release's -O3 comes after their -O2 and
# wins; nvcc's device code is not C, it gets none of them (its host objects
# link with the LDFLAGS). tests/ops/test_package.sh checks the binaries.
# SOURCE_DATE_EPOCH (the time stamps CPack writes into the .debs) is the last
# commit's time unless set: two builds of one commit give the same bytes
# (test_package builds twice and compares).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
make_debs=1
if [ "${1:-}" = --no-deb ]; then make_debs=0; shift; fi
PKG_BUILD=${1:-$ROOT/build-package}
[ $# -gt 0 ] && shift
install_packages --tests

launcher=()
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
# From the source root: dpkg-buildflags maps the current directory away (-ffile-prefix-map=ROOT=.).
flags=$(cd "$ROOT" && DEB_BUILD_MAINT_OPTIONS=${DEB_BUILD_MAINT_OPTIONS:-hardening=+all} dpkg-buildflags --export=sh)
eval "$flags"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || echo 0)}
echo "==> configuring $PKG_BUILD (Release, prefix /usr, Debian hardening flags, SOURCE_DATE_EPOCH $SOURCE_DATE_EPOCH)"
cmake -S "$ROOT" -B "$PKG_BUILD" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DSIGVERIFY_BUILD_TESTS=OFF -DSIGVERIFY_CUDA=AUTO -DSIGVERIFY_CUDA_ALL_ARCHITECTURES=ON \
  -DCMAKE_C_FLAGS="$CPPFLAGS $CFLAGS" -DCMAKE_CXX_FLAGS="$CPPFLAGS $CXXFLAGS" \
  -DCMAKE_EXE_LINKER_FLAGS="$LDFLAGS" -DCMAKE_SHARED_LINKER_FLAGS="$LDFLAGS" -DCMAKE_MODULE_LINKER_FLAGS="$LDFLAGS" \
  "${launcher[@]}" "$@" >/dev/null
echo "==> building with ${SIGVERIFY_JOBS:-$(nproc)} jobs"
cmake --build "$PKG_BUILD" -j "${SIGVERIFY_JOBS:-$(nproc)}"
[ $make_debs = 1 ] || exit 0
echo "==> cpack -G DEB"
rm -f "$PKG_BUILD"/packages/*.deb
(cd "$PKG_BUILD" && cpack -G DEB -C Release >/dev/null)
ls "$PKG_BUILD"/packages/*.deb
