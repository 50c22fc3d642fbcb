#!/usr/bin/env bash
# The LangGraph saver benchmark: RunStoreSaver in Node (memory) and in headless Chromium (OPFS)
# beside LangGraph's official SqliteSaver (better-sqlite3 on a file) and its MemorySaver (nothing
# stored: LangGraph's own cost) in Node, in one run
# (tests/langgraph/bench.mjs; figures in BENCHMARKS.md). Arguments go to it:
#   bash scripts/bench-langgraph.sh [--checkpoints 500] [--runs 5] [--warmup 1000] [--rounds 3] [--json FILE]
# `npm test` runs it once at a tiny size (--checkpoints 20 --runs 1 --warmup 20 --rounds 1) as a smoke test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
app=tests/langgraph
if [ ! -d "$app/node_modules/@langchain/langgraph" ] || [ "$app/package.json" -nt "$app/node_modules/.package-lock.json" ]; then
  (cd "$app" && npm install --no-audit --no-fund --loglevel=error)
fi
bash scripts/pack-into.sh "$app" >/dev/null
(cd "$app" && node_modules/.bin/vite build --logLevel error --emptyOutDir)
cd "$app" && node bench.mjs "$@"
