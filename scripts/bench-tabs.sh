#!/usr/bin/env bash
# Multi-tab benchmark in headless Chromium through the packed package (as scripts/test-js.sh
# builds it): a second tab's time to first result, follower vs leader per-call cost, and a
# chaos run of 10,000+ writes over 100 leader hand-offs with p50/p95/max hand-off times.
# Figures only; exits non-zero if the chaos run lost, doubled or tore a write.
# Env: BENCH_CALLS (2000), BENCH_WRITES (10000), BENCH_HANDOFFS (100), BENCH_VERBOSE.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/build.sh --if-stale
mkdir -p target/npm
tarball=$(npm pack --silent --pack-destination target/npm)
(cd tests/app && npm install --no-save --no-audit --no-fund --loglevel=error "../../target/npm/$tarball")
node tests/js/readme-example.mjs README.md tests/app/src/readme-example.js
vite build tests/app --logLevel warn --emptyOutDir
node tests/js/bench-tabs.mjs
