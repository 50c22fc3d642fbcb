#!/usr/bin/env bash
# Tests the sync server and `store.sync` on a throwaway PostgreSQL cluster
# (scripts/pg-cluster.sh): the server's Rust tests (tests/sync_server.rs, on SQLite and on
# PostgreSQL; tests/sync_processes.rs, two server processes on one database), then the package
# end to end (tests/js/sync.test.mjs: two Chromium profiles syncing through the runstore-sync
# binary on PostgreSQL; tests/js/sync-scale.test.mjs: the package's store in Node syncing
# 5,000 workflows whose sync state is over a megabyte; tests/js/sync-faults.test.mjs: three
# such stores syncing through a loopback proxy that cuts and delays connections, to two server
# processes on one database that are killed and restarted, one store rolled back by an import,
# closed workflows purged, outbox rows claimed and completed through the server, checked on the
# whole history at the end, SYNC_FAULT_ROUNDS and SYNC_FAULT_SEED make other runs;
# tests/js/sync-controls.test.mjs: the checker fails on clients with known defects put back and
# on a server that ignores claim tokens and the lease checker on one that ignores epochs;
# tests/js/workflow-leases.test.mjs: two devices' engines with leases, a run taken over once its
# device went away; tests/js/sync-leases-check.test.mjs: three device processes under leases
# through faults, paused, cut off and with skewed clocks, checked on the whole history;
# scripts/check-sync.sh runs the checker over many seeds). The sync at
# 100,000 workflows is a benchmark, scripts/bench-sync-scale.sh. The test app
# (scripts/build-test-app.sh, run by scripts/test-js.sh) is built here when missing or older
# than the package's JS.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

cargo build --quiet --features server --bin runstore-sync
if [ ! -f tests/app/dist/index.html ] || [ -n "$(find js -newer tests/app/dist/index.html -print -quit)" ]; then
  bash scripts/build-test-app.sh
fi
export RUNSTORE_SYNC_BIN="$PWD/target/debug/runstore-sync"
RUNSTORE_PG_SETTINGS="-c fsync=off -c full_page_writes=off" source scripts/pg-cluster.sh
cargo test --quiet --features server --test sync_server --test sync_processes
node --test --test-concurrency=1 tests/js/sync.test.mjs tests/js/sync-scale.test.mjs tests/js/sync-faults.test.mjs \
  tests/js/sync-controls.test.mjs tests/js/workflow-leases.test.mjs tests/js/sync-leases-check.test.mjs
