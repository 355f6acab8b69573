#!/usr/bin/env bash
# Recompiles the live-mode tests' ERC-20 fixtures with the pinned solc from npm:
#   crates/app/tests/fixtures/TestToken.sol -> TestToken.bin (creation bytecode), TestToken.abi
#   crates/app/tests/fixtures/TestUsdc.sol  -> TestUsdc.bin, TestUsdc.abi (EIP-3009, EIP-5267)
set -euo pipefail
cd "$(dirname "$0")"
[ -d node_modules ] || npm ci --no-audit --no-fund
out=$(mktemp -d)
for token in TestToken TestUsdc; do
  npx solcjs --bin --abi --optimize -o "$out" "../../crates/app/tests/fixtures/$token.sol"
  cp "$out"/*"$token".bin "../../crates/app/tests/fixtures/$token.bin"
  cp "$out"/*"$token".abi "../../crates/app/tests/fixtures/$token.abi"
done
rm -rf "$out"
