#!/usr/bin/env bash
# Runs the SPEC section 5 workloads (W1-W5) in headless Chromium, in a dedicated worker: through
# the store on OPFS (sahpool, durability full and relaxed) and on memory, each next to the same
# SQL through plain rusqlite. Release build; prints the Markdown tables (see BENCHMARKS.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
# The runner's default budget of 20 s covers the whole test binary; the workloads take minutes.
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-1800}
started=$(date +%s)
wasm_env wasm-pack test --release --headless --chrome -- --test browser_bench \
  -- --include-ignored --nocapture 2>&1 | grep -E '^ *(browser,|\||\(browser)|test result|panicked|error'
echo "browser benchmark took $(( $(date +%s) - started )) s"
