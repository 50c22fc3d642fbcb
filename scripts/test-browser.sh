#!/usr/bin/env bash
# Runs the browser tests in headless Chromium: the conformance suite on OPFS (sahpool) and on
# memory in a dedicated worker, the OPFS-only behaviour (reopen, BUSY, pool limits), and the
# main-thread tests (OPFS_UNAVAILABLE, memory). Needs what scripts/setup.sh installs.
# Headless Chrome as root reads its flags from webdriver.json next to Cargo.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
# wasm-bindgen-test gives up on a test that prints nothing for 20 s; a debug build on a loaded
# machine can take longer for the cases that write megabytes to OPFS.
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-120}
started=$(date +%s)
# The runner's default of 20 s per test is too short for the OPFS cases on a loaded 2-core machine.
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-600}
wasm_env wasm-pack test --headless --chrome
echo "browser tests took $(( $(date +%s) - started )) s"
