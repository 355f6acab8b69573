#!/usr/bin/env bash
# Recompiles the live-mode tests' ERC-20 fixture with the pinned solc from npm:
#   crates/app/tests/fixtures/TestToken.sol -> TestToken.bin (creation bytecode), TestToken.abi
set -euo pipefail
cd "$(dirname "$0")"
[ -d node_modules ] || npm ci --no-audit --no-fund
out=$(mktemp -d)
npx solcjs --bin --abi --optimize -o "$out" ../../crates/app/tests/fixtures/TestToken.sol
cp "$out"/*TestToken.bin ../../crates/app/tests/fixtures/TestToken.bin
cp "$out"/*TestToken.abi ../../crates/app/tests/fixtures/TestToken.abi
rm -rf "$out"
