#!/usr/bin/env bash
# Measures single-event appends per second on OPFS (sahpool) under each candidate journal
# setting and page size, with the time each commit spends in the sync access handle's write()
# and flush() (see docs/durability.md), in headless Chromium and headless Firefox. Release
# build; prints the figures.
# Usage: scripts/bench-durability.sh [chromium] [firefox]   (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
# The measurement prints only at its end: give it longer than the runner's 20 s default.
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-900}
engines=("$@")
[ ${#engines[@]} -gt 0 ] || engines=(chromium firefox)
for engine in "${engines[@]}"; do
  case "$engine" in
    chromium) browser=(--chrome) ;;
    firefox) browser=(--firefox --geckodriver "$(command -v geckodriver)") ;;
    *) echo "unknown engine $engine (chromium or firefox; WebKitGTK has no OPFS sync access handles)" >&2; exit 2 ;;
  esac
  echo "=== $engine"
  wasm_env wasm-pack test --release --headless "${browser[@]}" -- --test browser_durability \
    -- --include-ignored --nocapture 2>&1 | grep -E '^ *(single-event|WAL|TRUNCATE|memory)|test result'
done
