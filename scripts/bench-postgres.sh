#!/usr/bin/env bash
# PgStore's appends and outbox claims per second with 1 and 8 concurrent clients, next to the
# same SQL run directly on the postgres client in the same run (benches/postgres.rs), on a
# throwaway cluster with PostgreSQL's default durability (fsync on, synchronous_commit on).
# Usage: scripts/bench-postgres.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
cargo bench --features postgres --bench postgres --no-run 2>&1 | grep -E '^error' && exit 1
source scripts/pg-cluster.sh
cargo bench --quiet --features postgres --bench postgres
