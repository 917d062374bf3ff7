#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what is missing, builds Release, then runs the main job: sigverifyd
# in the foreground (GPU backend when a usable GPU is there, else all CPU
# cores), with a runtime directory the current user can write.
# Extra arguments go to sigverifyd (e.g. --backend cpu --log-level debug).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
install_packages
build
: "${SIGVERIFY_RUNTIME_DIR:=${XDG_RUNTIME_DIR:-/tmp}/sigverifyd-$(id -u)}"
export SIGVERIFY_RUNTIME_DIR
mkdir -p "$SIGVERIFY_RUNTIME_DIR"
cat <<EOT
==> starting sigverifyd (Ctrl-C stops it). In a second terminal:
      export SIGVERIFY_RUNTIME_DIR=$SIGVERIFY_RUNTIME_DIR
      $BUILD_DIR/client/cli/sigverify ping
      $BUILD_DIR/client/cli/sigverify gen --table multisig --count 100000 --invalid-rate 0.05 --out /tmp/ms.rows
      $BUILD_DIR/client/cli/sigverify verify --table multisig --in /tmp/ms.rows --out /tmp/ms.results
EOT
exec "$BUILD_DIR/daemon/sigverifyd" --foreground --runtime-dir "$SIGVERIFY_RUNTIME_DIR" "$@"
