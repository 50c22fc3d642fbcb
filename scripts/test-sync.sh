#!/usr/bin/env bash
# Tests the sync server and `store.sync` on a throwaway PostgreSQL cluster
# (scripts/pg-cluster.sh): the server's Rust tests (tests/sync_server.rs, on SQLite and on
# PostgreSQL), then the package end to end (tests/js/sync.test.mjs: two Chromium profiles
# syncing through the runstore-sync binary on PostgreSQL). The test app is built by
# scripts/test-js.sh; it is built here when missing or older than the package's JS.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

cargo build --quiet --features server --bin runstore-sync
if [ ! -f tests/app/dist/index.html ] || [ -n "$(find js -newer tests/app/dist/index.html -print -quit)" ]; then
  bash scripts/build.sh --if-stale
  mkdir -p target/npm
  tarball=$(npm pack --silent --pack-destination target/npm)
  (cd tests/app && npm install --no-save --no-audit --no-fund --loglevel=error "../../target/npm/$tarball")
  node tests/js/readme-example.mjs README.md tests/app/src/readme-example.js
  tsc -p tests/app/tsconfig.json
  vite build tests/app --logLevel warn --emptyOutDir
fi
export RUNSTORE_SYNC_BIN="$PWD/target/debug/runstore-sync"
RUNSTORE_PG_SETTINGS="-c fsync=off -c full_page_writes=off" source scripts/pg-cluster.sh
cargo test --quiet --features server --test sync_server
node --test --test-concurrency=1 tests/js/sync.test.mjs
