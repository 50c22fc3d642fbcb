#!/usr/bin/env bash
# Kills a writer process with SIGKILL thousands of times while it commits steps, in release,
# and checks the database after each kill (tests/crash_consistency.rs). Runs one database per
# seed; prints each run's figures and the totals: cycles, acknowledged steps, steps found,
# failures.
# Usage: scripts/bench-crash.sh [cycles per run (1000)] [runs (4)]
set -euo pipefail
cd "$(dirname "$0")/.."
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
