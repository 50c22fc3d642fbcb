#!/usr/bin/env bash
# Formatting and clippy, natively and for wasm32-unknown-unknown (which compiles the browser
# module and the browser tests).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
cargo fmt --check
cargo clippy --all-targets -- -D warnings
wasm_env cargo clippy --target wasm32-unknown-unknown --all-targets -- -D warnings
