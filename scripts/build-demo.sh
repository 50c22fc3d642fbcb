#!/usr/bin/env bash
# Builds the demo app: set-up (skipped where done), the npm package's wasm (skipped when pkg/
# is newer than its sources), the demo's dependencies (the package itself, linked from
# the checkout) and `vite build` into www/dist. Used by scripts/demo.sh and scripts/test-demo.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
log() { printf '[demo] %s\n' "$*" >&2; }

bash scripts/setup.sh
source scripts/env.sh

bash scripts/build.sh --if-stale

if [ ! -e www/node_modules/runstore ] || [ www/package.json -nt www/node_modules/.package-lock.json ]; then
  log "npm install in www/"
  (cd www && npm install --no-audit --no-fund --loglevel=error >/dev/null)
fi

log "vite build www/ -> www/dist"
(cd www && vite build --logLevel warn)
