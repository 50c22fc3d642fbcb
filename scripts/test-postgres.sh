#!/usr/bin/env bash
# Runs the PostgreSQL store's tests (tests/postgres.rs: the conformance suite and the races
# between connections) on a throwaway cluster (scripts/pg-cluster.sh), removed afterwards.
# The cluster runs with fsync off: nothing in it must survive a crash of the machine.
#
# Usage: scripts/test-postgres.sh [extra cargo test args]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
RUNSTORE_PG_SETTINGS="-c fsync=off -c full_page_writes=off" source scripts/pg-cluster.sh
cargo test --features postgres --test postgres "$@"
