#!/usr/bin/env bash
# The JS-boundary property test (tests/js/hostile-input.test.mjs) run longer than the suite
# runs it: RUNSTORE_FUZZ_MS per entry point (default five minutes; random opens get a quarter
# of it); RUNSTORE_FUZZ_SEED replays a run whose seed a failure printed. Builds the package and
# the test app as test-js.sh does, then runs that test alone.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/build-test-app.sh
RUNSTORE_FUZZ_MS=${RUNSTORE_FUZZ_MS:-300000} exec node --test tests/js/hostile-input.test.mjs
