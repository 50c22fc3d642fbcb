#!/usr/bin/env bash
# runstore beside the official SQLite wasm build (@sqlite.org/sqlite-wasm): W1-W5 through the
# package's public JS API (runstore/core in a worker, and the main-thread client) and the same
# SQL through the official build's oo1 API, in one page of each engine (headless Chromium,
# headless Firefox, WebKit on Xvfb), on OPFS at both durability levels (not in WebKit, which has
# no OPFS sync access handles), on IndexedDB (runstore only: the official build has no
# IndexedDB VFS) and on memory. Prints Markdown tables per engine and each engine beside
# Chromium (see BENCHMARKS.md).
#
# The page is built the way an app consumes the package: the release build packed with
# `npm pack`, installed into benches/official and bundled with Vite.
#
# Usage: scripts/bench-official.sh [--engines chromium,firefox,webkit]
#          [--workloads W1,W2,W3,W4,W4each,W5] [--setups opfs-relaxed,opfs-full,indexeddb,memory]
#          (and, named only, opfs-relaxed-encrypted, opfs-full-encrypted, indexeddb-encrypted)
#          [--sides core,official,plain,client,exclusive] [--runs 3] [--scale 1] [--json FILE]
#        scripts/bench-official.sh --startup [--engines chromium,firefox] [--runs 5]: time to
#          a usable store from a new worker (benches/official/startup.mjs)
# e.g.   npm run bench -- --workloads W1 --setups memory --runs 1
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/pack-into.sh benches/official
vite build benches/official --logLevel warn --emptyOutDir
# WebKit needs a display: xvfb-run gives it one (and costs the other engines nothing).
display=()
[ -z "${DISPLAY:-}" ] && command -v xvfb-run >/dev/null && display=(xvfb-run -a)
if [ "${1:-}" = --startup ]; then
  shift
  "${display[@]}" node benches/official/startup.mjs "$@"
else
  "${display[@]}" node benches/official/run.mjs "$@"
fi
