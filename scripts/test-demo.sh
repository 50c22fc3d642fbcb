#!/usr/bin/env bash
# The demo end to end: builds it as scripts/demo.sh does, then runs tests/js/demo.test.mjs
# (node's test runner driving the built app on a local server the test starts) in each engine:
# headless Chromium (playwright-core), headless Firefox (puppeteer-core) and WebKit on Xvfb
# (WebKitWebDriver; the store on IndexedDB there), tests/js/demo-sync.test.mjs (two Chromium
# profiles syncing through the runstore-sync binary, here on a SQLite file), and `npm start`
# itself (tests/js/demo-start.test.mjs: the URL once served, a second start refused plainly).
# Screenshots go to tests/artifacts/ (`-firefox`, `-webkit` in the names of those engines').
# Usage: scripts/test-demo.sh [chromium] [firefox] [webkit]   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-demo.sh
started=$(date +%s)
engines=("$@")
[ ${#engines[@]} -gt 0 ] || engines=(chromium firefox webkit)
for engine in "${engines[@]}"; do
  echo "=== the demo in $engine"
  command=(env RUNSTORE_ENGINE="$engine" timeout --kill-after=30 900)
  # WebKit on Xvfb, once more if it fails (scripts/webkit-once-more.sh says why).
  [ "$engine" = webkit ] && command=(bash scripts/webkit-once-more.sh "webkit demo" "${command[@]}" xvfb-run -a)
  if ! "${command[@]}" node --test --test-reporter=spec tests/js/demo.test.mjs; then
    echo "the demo's end-to-end test FAILED in $engine" >&2
    exit 1
  fi
done
node --test --test-reporter=spec tests/js/demo-start.test.mjs
source scripts/env.sh
cargo build --quiet --features server --bin runstore-sync
RUNSTORE_PG_URL= RUNSTORE_SYNC_BIN="$PWD/target/debug/runstore-sync" node --test --test-reporter=spec tests/js/demo-sync.test.mjs
echo "demo end-to-end test took $(( $(date +%s) - started )) s"
