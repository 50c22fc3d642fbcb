#!/usr/bin/env bash
# Builds tests/app, the app the JS tests and benchmarks drive in Chromium: the packed package
# installed (scripts/pack-into.sh), the README's quick start and Workflows files extracted into it, its typed usage
# type-checked against the shipped .d.ts, bundled with Vite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/pack-into.sh tests/app
node tests/js/readme-example.mjs README.md tests/app/src/readme-example.js
node tests/js/readme-example.mjs --files README.md Workflows tests/app/src/readme-workflows
tsc -p tests/app/tsconfig.json
vite build tests/app --logLevel warn --emptyOutDir
