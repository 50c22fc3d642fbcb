#!/usr/bin/env bash
# Multi-tab benchmark in headless Chromium through the packed package (tests/app, built by
# scripts/build-test-app.sh): a second tab's time to first result, follower vs leader per-call cost, and a
# chaos run of 10,000+ writes over 100 leader hand-offs with p50/p95/max hand-off times.
# Figures only; exits non-zero if the chaos run lost, doubled or tore a write.
# Env: BENCH_CALLS (2000), BENCH_WRITES (10000), BENCH_HANDOFFS (100), BENCH_VERBOSE.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/build-test-app.sh
node tests/js/bench-tabs.mjs
