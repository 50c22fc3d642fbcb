#!/usr/bin/env bash
# Builds tests/app, the app the JS tests and benchmarks drive in Chromium: the packed package
# installed (scripts/pack-into.sh), the README's quick start extracted into it, its typed usage
# type-checked against the shipped .d.ts, bundled with Vite.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/pack-into.sh tests/app
node tests/js/readme-example.mjs README.md tests/app/src/readme-example.js
tsc -p tests/app/tsconfig.json
vite build tests/app --logLevel warn --emptyOutDir
