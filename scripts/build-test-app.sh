#!/usr/bin/env bash
# Builds tests/app, the app the JS tests and benchmarks drive in Chromium: the packed package
# installed (scripts/pack-into.sh), the README's quick start (with the tour of the store in
# docs/browser-apps.md), the example of docs/encryption.md and the first workflow's files (docs/workflows.md, whose shop.js the
# README shows too) extracted into it, its typed usage type-checked against the shipped .d.ts,
# bundled with Vite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/pack-into.sh tests/app
node tests/js/readme-example.mjs tests/app/src/readme-example.js
node tests/js/readme-example.mjs tests/app/src/encryption-example.js 'docs/encryption.md#Opening an encrypted store'
node tests/js/readme-example.mjs --files tests/app/src/readme-workflows 'README.md#A first workflow' 'docs/workflows.md#A first workflow'
tsc -p tests/app/tsconfig.json
vite build tests/app --logLevel warn --emptyOutDir
