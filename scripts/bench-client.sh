#!/usr/bin/env bash
# The main-thread client against runstore/core in a worker, and a follower tab, on the SPEC §5
# workloads in headless Chromium through the packed package (as scripts/test-js.sh builds it).
# Figures only. Env: BENCH_SCALE (0.2), BENCH_ROUNDS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/build.sh --if-stale
mkdir -p target/npm
tarball=$(npm pack --silent --pack-destination target/npm)
(cd tests/app && npm install --no-save --no-audit --no-fund --loglevel=error "../../target/npm/$tarball")
node tests/js/readme-example.mjs README.md tests/app/src/readme-example.js
vite build tests/app --logLevel warn --emptyOutDir
node tests/js/bench-client.mjs
