#!/usr/bin/env bash
# Formatting and clippy, natively and for wasm32-unknown-unknown (which compiles the browser
# module and the browser tests).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
cargo fmt --check
# With the sync server (feature `server`), a superset of the default build.
cargo clippy --all-targets --features server -- -D warnings
# Benches are native programs; the browser benchmark is a test (tests/browser_bench.rs).
wasm_env cargo clippy --target wasm32-unknown-unknown --lib --tests -- -D warnings
