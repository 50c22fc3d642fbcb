#!/usr/bin/env bash
# runstore/core on Node's file medium (`persistence: 'file'`) beside better-sqlite3 with
# hand-written SQL on W1-W5 (SPEC §5) at durability full and relaxed, the native crate's own
# benchmark on its file media (cargo bench, a separate process), and the LangGraph savers on
# files (RunStoreSaver beside SqliteSaver), in one run (tests/js/bench-node-file.mjs). Figures
# only. Arguments go to it:
#   bash scripts/bench-node-file.sh [--scale 1] [--rounds 3] [--durability full,relaxed]
#     [--workloads W1,...] [--parts workloads,native,langgraph] [--checkpoints 500]
#     [--graph-runs 5] [--warmup 1000] [--plain-exclusive]
#
# It runs the package from the repository (js/, pkg/) as it is: pkg/ is built only when it is
# missing, not when it is stale (scripts/build.sh --if-stale does that). better-sqlite3,
# SqliteSaver and LangGraph come from tests/langgraph, installed only when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
[ -f pkg/runstore_bg.wasm ] || bash scripts/build.sh
[ -d tests/langgraph/node_modules ] || npm ci --prefix tests/langgraph --no-audit --no-fund --loglevel=error
node tests/js/bench-node-file.mjs "$@"
