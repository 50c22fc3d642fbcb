#!/usr/bin/env bash
# Measures single-event appends per second on OPFS (sahpool) in headless Chromium under each
# candidate journal setting (see docs/durability.md). Release build; prints the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
wasm_env wasm-pack test --release --headless --chrome -- --test browser_durability \
  -- --include-ignored --nocapture 2>&1 | grep -E '^ *(single-event|WAL|TRUNCATE|memory)|test result'
