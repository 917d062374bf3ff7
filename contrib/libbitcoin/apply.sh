#!/bin/sh
# SPDX-License-Identifier: MIT
# Puts the sigverifyd branch into a libbitcoin-system source tree
# (contrib/libbitcoin/README.md): copies sigverifyd_branch.hpp beside
# src/crypto/secp256k1/batch/batch.hpp and applies the patch there.
# Usage: contrib/libbitcoin/apply.sh /path/to/libbitcoin-system
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tree=${1:?usage: apply.sh /path/to/libbitcoin-system}
target=$tree/src/crypto/secp256k1/batch
[ -f "$target/batch.hpp" ] || { echo "apply.sh: no $target/batch.hpp (not libbitcoin-system, or an older tree without batch/)" >&2; exit 1; }
patch -d "$tree" -p1 --forward < "$here/libbitcoin-system.patch"
cp "$here/sigverifyd_branch.hpp" "$target/sigverifyd_branch.hpp"
echo "apply.sh: done; build libbitcoin-system with -DWITH_SIGVERIFY and libsigverify (README.md)"
