#!/usr/bin/env bash
# Tests the npm package the way an app uses it: builds pkg/ if stale, packs the tarball,
# installs it into tests/app, type-checks a typed usage against the shipped .d.ts, builds the
# app with Vite, then drives it in headless Chromium (node --test tests/js/package.test.mjs
# tests/js/crash.test.mjs ...), and runs the package's cases once more through a follower tab.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/build.sh --if-stale

mkdir -p target/npm
tarball=$(npm pack --silent --pack-destination target/npm)
echo "[test-js] packed target/npm/$tarball ($(du -k "target/npm/$tarball" | cut -f1) KiB)"
(cd tests/app && npm install --no-save --no-audit --no-fund --loglevel=error "../../target/npm/$tarball")

node tests/js/readme-example.mjs README.md tests/app/src/readme-example.js
tsc -p tests/app/tsconfig.json
vite build tests/app --logLevel warn --emptyOutDir
node --test --test-concurrency=1 tests/js/package.test.mjs tests/js/hostile-input.test.mjs \
  tests/js/storage-full.test.mjs tests/js/crash.test.mjs tests/js/tabs.test.mjs \
  tests/js/export-import.test.mjs
# The package's cases again, each store served by another tab: the calls come from a follower.
RUNSTORE_THROUGH=follower node --test tests/js/package.test.mjs
