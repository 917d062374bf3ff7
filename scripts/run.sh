#!/usr/bin/env bash
# Installs what is missing, builds Release, then runs the main job: generates a
# demo batch of each table and verifies it in-process with libsecp256k1.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
install_packages
build
SV=$BUILD_DIR/client/cli/sigverify
demo=$(mktemp -d)
trap 'rm -rf "$demo"' EXIT
for table in ecdsa multisig schnorr threshold; do
  "$SV" gen --table "$table" --count 20000 --invalid-rate 0.05 --high-s-rate 0.1 --out "$demo/$table.rows"
  "$SV" verify --local --table "$table" --in "$demo/$table.rows" --out "$demo/$table.results"
done
