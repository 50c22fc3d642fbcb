#!/usr/bin/env bash
# Formatting and clippy, natively and for wasm32-unknown-unknown (which compiles the browser
# module and the browser tests).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
cargo fmt --check
cargo clippy --all-targets -- -D warnings
# The PostgreSQL store (src/postgres, tests/postgres.rs) and the sync server (src/server,
# tests/sync_server.rs) are behind features; `server` includes `postgres`.
cargo clippy --all-targets --features server -- -D warnings
# Benches are native programs; the browser benchmark is a test (tests/browser_bench.rs).
wasm_env cargo clippy --target wasm32-unknown-unknown --lib --tests -- -D warnings
