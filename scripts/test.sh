#!/usr/bin/env bash
# Runs every test: set-up (skipped where done), lint, the native suite, the browser suite, the
# npm package as an app uses it and the demo end to end, each in Chromium, Firefox and WebKit,
# the package in Node with LangGraph.js and LangGraph's checkpoint validation suite, and sync
# (the server and `store.sync` on a throwaway PostgreSQL cluster).
# Usage: scripts/test.sh            (what `npm test` and CI run)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh

step() { printf '\n=== %s\n' "$*"; }
# WebKit's runs that failed once and were run again (scripts/webkit-once-more.sh), for the end.
FIRST_FAILURES=tests/artifacts/webkit-first-failures.txt
rm -rf "$FIRST_FAILURES" tests/artifacts/webkit-first-failures
list_first_failures() {
  [ -s "$FIRST_FAILURES" ] || return 0
  echo "WebKit runs that failed once and were run again:"
  cat "$FIRST_FAILURES"
}
trap list_first_failures EXIT

step "format and lint (native and wasm32)"
bash scripts/lint.sh

step "native tests"
cargo test --quiet

step "PostgreSQL store (throwaway cluster)"
bash scripts/test-postgres.sh --quiet

for stage in scripts/test-browser.sh scripts/test-js.sh scripts/test-langgraph.sh scripts/test-demo.sh scripts/test-sync.sh; do
  step "$stage"
  bash "$stage"
done

# A smoke run of `npm run bench` at 1 % of each workload: proves the benchmark page builds
# and every side runs every workload on every setup in every engine (its figures mean nothing
# at that size).
step "scripts/bench-official.sh (smoke)"
bash scripts/bench-official.sh --runs 1 --scale 0.01 \
  --setups opfs-relaxed,opfs-full,indexeddb,memory,opfs-relaxed-encrypted,indexeddb-encrypted
# And of `npm run bench:encrypt`, on a small store (the test app is built by then).
step "tests/js/bench-encrypt.mjs (smoke)"
BENCH_WORKFLOWS=500 BENCH_RUNS=1 node tests/js/bench-encrypt.mjs
echo
echo "all tests passed in $(( SECONDS / 60 )) min $(( SECONDS % 60 )) s"
