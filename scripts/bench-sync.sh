#!/usr/bin/env bash
# The sync server's throughput (benches/sync_server.rs) on a throwaway PostgreSQL cluster:
# pushes and outbox claims per second at 1, 8 and 32 clients over HTTP, next to the same store
# calls made directly in the same run. Figures in BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
source scripts/pg-cluster.sh
cargo bench --features server --bench sync_server
