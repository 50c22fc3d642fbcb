#!/usr/bin/env bash
# Tests the npm package the way an app uses it: builds pkg/ if stale, packs the tarball,
# installs it into tests/app, type-checks a typed usage against the shipped .d.ts, builds the
# app with Vite, then runs the package's cases (tests/js/package.test.mjs) on each host, each
# with its own count: in headless Chromium, in Node (the store in the process; the cases that
# need a browser skipped, saying why), and in Chromium once more through a follower tab. Then
# the browser-only files (hostile input, a full disk, crashes, tabs, export and import) in
# Chromium, and in Node the tab protocol's unit tests (tabs-protocol, on a browser faked in
# Node) and the client's own modules' (wire, changes).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/build-test-app.sh
echo "[package] host: headless Chromium (tests/app built with Vite, the store in a worker)"
node --test tests/js/package.test.mjs
echo "[package] host: Node $(node --version) (tests/app's installed package, the store in the process)"
RUNSTORE_HOST=node node --test tests/js/package.test.mjs
echo "[package] host: headless Chromium, each store served by another tab: the calls come from a follower"
RUNSTORE_THROUGH=follower node --test tests/js/package.test.mjs
echo "[package] in Chromium: hostile input, a full disk, crashes, tabs, export and import; in Node: the tab protocol, wire, changes"
node --test --test-concurrency=1 tests/js/hostile-input.test.mjs \
  tests/js/storage-full.test.mjs tests/js/crash.test.mjs tests/js/tabs.test.mjs \
  tests/js/export-import.test.mjs tests/js/wire.test.mjs tests/js/changes.test.mjs \
  tests/js/tabs-protocol.test.mjs
