#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what is missing, builds, and runs the whole test suite through ctest.
# Extra arguments go to ctest (e.g. -L vectors, or -L long for the long runs).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
install_packages --tests
build
cd "$BUILD_DIR"
echo "==> running tests"
if [ $# -eq 0 ]; then set -- -LE long; fi
ctest --output-on-failure -j "$(nproc)" "$@"
