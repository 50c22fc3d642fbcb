#!/usr/bin/env bash
# Encrypting a plain store that has data, in headless Chromium through the packed package
# (tests/app, built by scripts/build-test-app.sh): rekey in place next to a plain export
# imported into a new encrypted store, and next to rekey of an encrypted store. Figures only.
# Env: BENCH_WORKFLOWS (20000), BENCH_RUNS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/build-test-app.sh
node tests/js/bench-encrypt.mjs
