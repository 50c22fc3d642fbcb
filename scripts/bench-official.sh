#!/usr/bin/env bash
# runstore beside the official SQLite wasm build (@sqlite.org/sqlite-wasm): W1-W5 through the
# package's public JS API (runstore/core in a worker, and the main-thread client) and the same
# SQL through the official build's oo1 API, in one headless Chromium page, on OPFS at both
# durability levels and on memory. Prints Markdown tables (see BENCHMARKS.md).
#
# The page is built the way an app consumes the package: the release build packed with
# `npm pack`, installed into benches/official and bundled with Vite.
#
# Usage: scripts/bench-official.sh [--workloads W1,W2,W3,W4,W4each,W5]
#          [--setups opfs-relaxed,opfs-full,memory] [--sides core,official,plain,client,exclusive]
#          [--runs 3] [--scale 1] [--json FILE]
# e.g.   npm run bench -- --workloads W1 --setups memory --runs 1
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/pack-into.sh benches/official
vite build benches/official --logLevel warn --emptyOutDir
node benches/official/run.mjs "$@"
