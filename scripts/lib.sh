# Shared by scripts/run.sh and scripts/test.sh: install what the build needs
# from Debian, then configure and build.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${SIGVERIFY_BUILD_DIR:-$ROOT/build}

# Debian 12 packages the build and tests need (CUDA is optional and not from apt).
PACKAGES=(build-essential cmake pkg-config libsecp256k1-dev libboost-dev libspdlog-dev libcli11-dev
          nlohmann-json3-dev catch2 libssl-dev libsystemd-dev libbenchmark-dev systemd python3
          prometheus)  # promtool: tests/ops/test_monitoring.sh

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
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  echo "==> building with $(nproc) jobs"
  cmake --build "$BUILD_DIR" -j "$(nproc)"
}
