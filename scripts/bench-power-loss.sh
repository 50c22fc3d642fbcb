#!/usr/bin/env bash
# Power loss, simulated, at scale: runs the property tests of tests/power_loss.rs over
# POWER_LOSS_SEEDS seeds per setting (default 2500; four settings, so 10,000 power cuts) in a
# release build and prints, per setting, the seeds run, power cuts (where they landed), commits
# checked, returned commits dropped and failures, then the negative controls' first failure.
# The figures go in docs/durability.md.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${POWER_LOSS_SEEDS:-2500}
# The figures are counts, not timings: the release profile's LTO would only slow the build.
export CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16
# Tests run in parallel, so a figure may follow another test's name on the same line.
POWER_LOSS_SEEDS=$seeds cargo test --release --quiet --test power_loss -- --nocapture 2>&1 |
  grep -oE 'power loss .*|(synchronous=OFF|relaxed checked as full) fails as expected.*|test result.*|panicked.*|seed [0-9]+: .*|broke its promise.*'
