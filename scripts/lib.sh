# Shared by scripts/run.sh and scripts/test.sh: install what the build needs
# from Debian, then configure and build.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${SIGVERIFY_BUILD_DIR:-$ROOT/build}

# Debian 12 packages the build and tests need (CUDA is optional and not from apt).
PACKAGES=(build-essential cmake pkg-config libsecp256k1-dev libboost-dev libspdlog-dev libcli11-dev
          nlohmann-json3-dev catch2 libssl-dev libsystemd-dev libbenchmark-dev systemd python3
          ccache dpkg-dev lintian groff-base man-db init-system-helpers)
# ccache: scripts/package.sh's /usr build reuses the test build's objects.
# dpkg-dev (dpkg-shlibdeps), lintian: the Debian packages and their test.
# groff-base, man-db: the manual pages' test. init-system-helpers: deb-systemd-helper.

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "==> installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
  echo "==> configuring $BUILD_DIR (Release)"
  local launcher=()
  if command -v ccache >/dev/null; then
    export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$ROOT}
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
  echo "==> building with $(nproc) jobs"
  cmake --build "$BUILD_DIR" -j "$(nproc)"
}
