#!/usr/bin/env bash
# Sync at scale (tests/js/bench-sync-scale.mjs) on a throwaway PostgreSQL cluster: one namespace
# of 100,000 workflows and 2,000,000 events, the first sync of a new profile beside the same
# reads as plain SQL (examples/sync_scale_sql.rs), then 8 writers and 64 long-polling readers
# on 3 server processes, then the push rate of 32 clients on those 3. Not part of npm test.
# Arguments go to the script: --scale 0.1 for a tenth of the data, --seconds, --pause-ms,
# --push-seconds, --skip-store. Figures in BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
cargo build --quiet --release --features server --bin runstore-sync --example sync_scale_sql
[ -f pkg/runstore_bg.wasm ] || bash scripts/build.sh
export RUNSTORE_SYNC_BIN="$PWD/target/release/runstore-sync"
export SQL_BASELINE_BIN="$PWD/target/release/examples/sync_scale_sql"
# fsync off as in scripts/bench-sync.sh; the buffers hold the whole namespace (about 1 GB).
RUNSTORE_PG_SETTINGS="-c fsync=off -c full_page_writes=off -c shared_buffers=1GB -c max_wal_size=4GB" \
  source scripts/pg-cluster.sh
export PSQL="$pg_bin/psql"
node tests/js/bench-sync-scale.mjs "$@"
