#!/usr/bin/env bash
# The JS-boundary property test (tests/js/hostile-input.test.mjs) run longer than the suite
# runs it: RUNSTORE_FUZZ_MS per entry point (default five minutes); RUNSTORE_FUZZ_SEED replays
# a run whose seed a failure printed. Builds and runs the package tests as test-js.sh does.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNSTORE_FUZZ_MS=${RUNSTORE_FUZZ_MS:-300000} exec bash scripts/test-js.sh
