#!/usr/bin/env bash
# Tests the npm package the way an app uses it: builds pkg/ if stale, packs the tarball,
# installs it into tests/app, type-checks a typed usage against the shipped .d.ts, builds the
# app with Vite, then drives it in headless Chromium (node --test tests/js/package.test.mjs
# tests/js/crash.test.mjs ...), and runs the package's cases once more through a follower tab.
# The tab protocol's unit tests (tabs-protocol, on a browser faked in Node) and the client's
# own modules' (wire, changes) run in Node.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/build-test-app.sh
node --test --test-concurrency=1 tests/js/package.test.mjs tests/js/hostile-input.test.mjs \
  tests/js/storage-full.test.mjs tests/js/crash.test.mjs tests/js/tabs.test.mjs \
  tests/js/export-import.test.mjs tests/js/wire.test.mjs tests/js/changes.test.mjs \
  tests/js/tabs-protocol.test.mjs
# The package's cases again, each store served by another tab: the calls come from a follower.
RUNSTORE_THROUGH=follower node --test tests/js/package.test.mjs
