#!/usr/bin/env bash
# Kills a writer process with SIGKILL thousands of times while it commits steps, in release,
# and checks the database after each kill (tests/crash_consistency.rs). Runs one database per
# seed; prints each run's figures and the totals: cycles, acknowledged steps, steps found,
# failures.
# Usage: scripts/bench-crash.sh [cycles per run (1000)] [runs (4)]
#
# With --node it does the same to the package's store in a file in Node instead
# (tests/js/node-file-crash.test.mjs: a writer process killed mid-step, the file checked by the
# store and by stock SQLite's integrity_check), one temporary directory per seed:
# Usage: scripts/bench-crash.sh --node [cycles per run (500)] [runs (1)]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = --node ]; then
  cycles=${2:-500}
  runs=${3:-1}
  bash scripts/build.sh --if-stale
  total_cycles=0 total_acked=0 total_found=0 failures=0
  for seed in $(seq 1 "$runs"); do
    # Only the crash cycles, run as a plain script: its figures come out on stdout as printed.
    if out=$(NODE_CRASH_CYCLES=$cycles CRASH_SEED=$seed node --test-name-pattern='killed mid-step' \
        tests/js/node-file-crash.test.mjs 2>&1) && line=$(grep -m1 '^node file crash cycles:' <<<"$out"); then
      echo "[bench-crash] $line"
      read -r c a f < <(sed -E 's/^node file crash cycles: ([0-9]+), acknowledged steps: ([0-9]+), steps found: ([0-9]+).*/\1 \2 \3/' <<<"$line")
      total_cycles=$((total_cycles + c)) total_acked=$((total_acked + a)) total_found=$((total_found + f))
    else
      failures=$((failures + 1))
      echo "[bench-crash] node seed $seed FAILED:"
      grep -E -B2 -A12 'not ok|Error' <<<"$out" | head -40
    fi
  done
  echo "[bench-crash] node file cycles: $total_cycles, acknowledged steps: $total_acked, steps found: $total_found, failures: $failures"
  [ "$failures" -eq 0 ]
  exit
fi

cycles=${1:-1000}
runs=${2:-4}
test=acknowledged_steps_survive_sigkill_whole_and_nothing_else_does
cargo test --release --test crash_consistency --no-run 2>&1 | grep -E '^error' && exit 1

total_cycles=0 total_acked=0 total_found=0 failures=0
for seed in $(seq 1 "$runs"); do
  if out=$(CRASH_CYCLES=$cycles CRASH_SEED=$seed cargo test --release --test crash_consistency \
      -- --exact "$test" --nocapture 2>&1); then
    line=$(grep '^crash cycles:' <<<"$out")
    echo "[bench-crash] $line"
    read -r c a f < <(sed -E 's/^crash cycles: ([0-9]+), acknowledged steps: ([0-9]+), steps found: ([0-9]+).*/\1 \2 \3/' <<<"$line")
    total_cycles=$((total_cycles + c)) total_acked=$((total_acked + a)) total_found=$((total_found + f))
  else
    failures=$((failures + 1))
    echo "[bench-crash] seed $seed FAILED:"
    grep -E -A6 'panicked' <<<"$out" | head -20
  fi
done
echo "[bench-crash] cycles: $total_cycles, acknowledged steps: $total_acked, steps found: $total_found, failures: $failures"
[ "$failures" -eq 0 ]
