#!/usr/bin/env bash
# The runstore/workflow benchmark: workflows of ten small steps through the engine beside the
# same steps as store commits written by hand, on the same store, in Node (memory) and in
# headless Chromium (OPFS, `full` and `relaxed`); beside them, in the same run, the same journal
# and ledger as hand-written SQL on better-sqlite3 and on the official SQLite wasm build, DBOS
# Transact on a throwaway PostgreSQL (fsync on) and durably on its SQLite file; then replays of
# runs of 1,000 and 10,000 steps after an engine restart. Prints Markdown tables (see
# BENCHMARKS.md, "Workflows").
#
# The page is built the way an app consumes the package: the release build packed with
# `npm pack`, installed into benches/workflow and bundled with Vite. DBOS, durably and
# better-sqlite3 are devDependencies of benches/workflow only.
#
# Usage: scripts/bench-workflow.sh [--runs 5] [--workflows 32] [--replay 1000,10000]
#          [--replay-runs 3] [--groups node,durable,chromium,replay] [--json FILE]
# e.g.   bash scripts/bench-workflow.sh --runs 1 --workflows 8 --replay 1000 --replay-runs 1
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bench=benches/workflow
if [ ! -d "$bench/node_modules/@dbos-inc" ] || [ "$bench/package.json" -nt "$bench/node_modules/.package-lock.json" ]; then
  (cd "$bench" && npm install --no-audit --no-fund --loglevel=error)
fi
bash scripts/pack-into.sh "$bench"
vite build "$bench" --logLevel warn --emptyOutDir
# DBOS's system database: a throwaway cluster with the server's defaults (fsync on,
# synchronous_commit on), stopped and removed when this script exits.
source scripts/pg-cluster.sh
node --expose-gc "$bench/run.mjs" "$@"
