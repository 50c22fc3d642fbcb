#!/usr/bin/env bash
# A longer run of the sync checker (tests/js/sync-faults.test.mjs) than `npm test` makes: the
# checker over many seeds and more rounds (two clients in Node, one in a Chromium page), on a
# throwaway PostgreSQL cluster with two server processes, then its negative controls
# (tests/js/sync-controls.test.mjs). Prints one line per seed; a failing seed's log is kept and
# named, and the script exits non-zero.
# Usage: scripts/check-sync.sh [--seeds N] [--rounds R] [--first S]
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=50 rounds=60 first=1
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) seeds=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --first) first=$2; shift 2 ;;
    *) echo "usage: $0 [--seeds N] [--rounds R] [--first S]" >&2; exit 2 ;;
  esac
done
source scripts/env.sh
bash scripts/build.sh --if-stale
cargo build --quiet --features server --bin runstore-sync
# One of the checker's clients is the package in a Chromium page: the test app it loads.
if [ ! -f tests/app/dist/index.html ] || [ -n "$(find js pkg -newer tests/app/dist/index.html -print -quit)" ]; then
  bash scripts/build-test-app.sh
fi
export RUNSTORE_SYNC_BIN="$PWD/target/debug/runstore-sync"
RUNSTORE_PG_SETTINGS="-c fsync=off -c full_page_writes=off" source scripts/pg-cluster.sh
logs=$(mktemp -d /tmp/runstore-check-sync.XXXXXX)
failed=0
for seed in $(seq "$first" $((first + seeds - 1))); do
  log="$logs/seed-$seed.log"
  if SYNC_FAULT_SEED=$seed SYNC_FAULT_ROUNDS=$rounds node --test --test-name-pattern='sync through' \
      tests/js/sync-faults.test.mjs >"$log" 2>&1; then
    grep -h '^# .*seed' "$log" | sed 's/^# \\# //'
    rm -f "$log"
  else
    echo "seed $seed FAILED: $log"
    grep -m3 'error:' "$log" || true
    failed=$((failed + 1))
  fi
done
node --test tests/js/sync-controls.test.mjs
echo "$seeds seeds of $rounds rounds: $failed failed"
[ "$failed" -eq 0 ] && rmdir "$logs"
[ "$failed" -eq 0 ]
