# SPDX-License-Identifier: MIT
# Shared by scripts/run.sh and scripts/test.sh: install what the build needs
# from Debian, then configure and build.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${SIGVERIFY_BUILD_DIR:-$ROOT/build}

# Debian 12 packages the build and tests need (CUDA is optional and not from apt).
PACKAGES=(build-essential cmake pkg-config libsecp256k1-dev libboost-dev libspdlog-dev libcli11-dev
          nlohmann-json3-dev catch2 libssl-dev libsystemd-dev libbenchmark-dev systemd python3 ccache)
# ccache: scripts/package.sh's /usr build reuses the test build's objects.
# What only the tests and the packaging need (scripts/test.sh, package.sh):
# dpkg-dev (dpkg-shlibdeps), lintian: the Debian packages and their test.
# groff-base, man-db: the manual pages' test. init-system-helpers: deb-systemd-helper.
# prometheus: promtool, for tests/ops/test_monitoring.sh (its service is not started).
# python3-seccomp: tests/ops/test_sandbox.sh runs the daemon under the unit's system call filter.
# ninja-build: scripts/sanitize.sh's builds (see there).
# abigail-tools: abidw, abidiff for the ABI baseline test (ctest test_abi, scripts/abi-baseline.sh).
# golang-go: the Go client and its example (tests/go/test_go.sh; skipped without it).
TEST_PACKAGES=(dpkg-dev lintian groff-base man-db init-system-helpers prometheus python3-seccomp ninja-build
               abigail-tools golang-go)

# install_packages [--tests]: PACKAGES, plus TEST_PACKAGES with --tests.
install_packages() {
  local missing=() wanted=("${PACKAGES[@]}")
  [ "${1:-}" = --tests ] && wanted+=("${TEST_PACKAGES[@]}")
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "==> installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  # No service of an installed package (prometheus) may start here: a
  # policy-rc.d that refuses, for the length of the install, unless one exists.
  local policy=/usr/sbin/policy-rc.d own_policy=0
  if [ ! -e $policy ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee $policy >/dev/null && $sudo chmod 755 $policy && own_policy=1
  fi
  local rc=0
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" || rc=$?
  [ $own_policy -eq 1 ] && $sudo rm -f $policy
  return $rc
}

build() {
  echo "==> configuring $BUILD_DIR (Release)"
  local launcher=()
  if command -v ccache >/dev/null; then
    export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  # CUDA machine code for every GPU from sm_75 to sm_120 (docs/kernels.md "Architectures built"),
  # also in a build directory an older checkout configured for sm_90 alone;
  # SIGVERIFY_CUDA_ALL_ARCHITECTURES=OFF (CI) builds sm_90 + PTX only. The configure
  # step prints which it carries.
  local out
  out=$(cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
    -DSIGVERIFY_CUDA_ALL_ARCHITECTURES="${SIGVERIFY_CUDA_ALL_ARCHITECTURES:-ON}" "$@") || { echo "$out"; return 1; }
  echo "$out" | grep -E '^-- sigverify: CUDA' || true
  echo "==> building with $(nproc) jobs"
  cmake --build "$BUILD_DIR" -j "$(nproc)"
}
