#!/usr/bin/env bash
# The main-thread client against runstore/core in a worker, and a follower tab, on the SPEC §5
# workloads in headless Chromium through the packed package (tests/app, built by
# scripts/build-test-app.sh).
# Figures only. Env: BENCH_SCALE (0.2), BENCH_ROUNDS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/build-test-app.sh
node tests/js/bench-client.mjs
