#!/usr/bin/env bash
# The demo end to end: builds it as scripts/demo.sh does, then runs tests/js/demo.test.mjs
# (node's test runner, playwright-core driving headless Chromium against the built app on a
# local server the test starts) and tests/js/demo-sync.test.mjs (two browser profiles syncing
# through the runstore-sync binary, here on a SQLite file), and `npm start` itself
# (tests/js/demo-start.test.mjs: the URL once served, a second start refused plainly).
# Screenshots go to tests/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-demo.sh
started=$(date +%s)
node --test --test-reporter=spec tests/js/demo.test.mjs tests/js/demo-start.test.mjs
source scripts/env.sh
cargo build --quiet --features server --bin runstore-sync
RUNSTORE_PG_URL= RUNSTORE_SYNC_BIN="$PWD/target/debug/runstore-sync" node --test --test-reporter=spec tests/js/demo-sync.test.mjs
echo "demo end-to-end test took $(( $(date +%s) - started )) s"
