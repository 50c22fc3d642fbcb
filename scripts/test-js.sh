#!/usr/bin/env bash
# Tests the npm package the way an app uses it: builds pkg/ if stale, packs the tarball,
# installs it into tests/app, type-checks a typed usage against the shipped .d.ts, builds the
# app with Vite, then drives it in each browser engine (node --test tests/js/package.test.mjs
# tests/js/crash.test.mjs ..., tests/js/browser.mjs picks the engine from RUNSTORE_ENGINE and
# the medium from RUNSTORE_MEDIUM), each run with its own count:
# - chromium: every file on OPFS, the package's cases again through a follower tab, the
#   package's cases and crash tests on IndexedDB, and the workflow chaos run with its negative
#   controls (short; scripts/chaos-workflow.sh --long runs it longer);
# - firefox: every file on OPFS (the export's download and the import's file input are the
#   engine's own), and the package's cases and crash tests on IndexedDB;
# - webkit (on Xvfb): everything but the full-origin test (WebKit cannot lower a quota) on
#   IndexedDB, the medium `persistence: 'auto'` takes where OPFS sync access handles are missing:
#   tabs and export on IndexedDB run there. Each file on its own, and once more if it fails
#   (scripts/webkit-once-more.sh).
# runstore/inspector's element (tests/js/inspector.test.mjs) runs in all three, with the others,
# and so does the element on a sync server's namespace (tests/js/inspector-sync.test.mjs, against
# the runstore-sync binary built here).
# Its screenshots (tests/js/inspector-screens.test.mjs: each view of a seeded store against a
# stored screenshot of that engine, and at 200% zoom) run in all three too.
# (What runs where is chosen to keep the three engines within some 20 minutes of a 2-core CI
# machine: each engine's own ways (workers, locks, channels, cloning, quota, OPFS or IndexedDB)
# meet the files that exercise them, and code that is the same wasm everywhere runs once per medium.)
# Then, once: the package's cases in Node (the store in the process; the cases that need a
# browser skipped, saying why), on memory and on the file medium; the file medium's own tests
# (tests/js/node-file*.test.mjs: the native crate on its files, SIGKILLed writers and workflow
# runners), and under Bun (tests/bun/file.mjs); the tab protocol's unit tests (tabs-protocol,
# on a browser faked in Node), the client's own modules' (wire, changes), bytes from another
# realm (as under vitest's jsdom environment) and what `npm pack` puts in the tarball; and
# runstore/core's `commit`, which sends a step as the client's text (core-commit).
# Usage: scripts/test-js.sh [chromium] [firefox] [webkit]   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/build-test-app.sh
cargo build --quiet --features server --bin runstore-sync
export RUNSTORE_SYNC_BIN="$PWD/target/debug/runstore-sync"

# The longest one engine's run of one medium may take (a wedged browser or driver); in WebKit,
# one file's run.
LIMIT_S=${JS_ENGINE_LIMIT_S:-1200}
ALL=(tests/js/package.test.mjs tests/js/hostile-input.test.mjs tests/js/storage-full.test.mjs
  tests/js/crash.test.mjs tests/js/tabs.test.mjs tests/js/export-import.test.mjs tests/js/workflow.test.mjs
  tests/js/inspector.test.mjs tests/js/inspector-screens.test.mjs tests/js/inspector-sync.test.mjs
  tests/js/cipher.test.mjs)

# run ENGINE MEDIUM FILE...: the files in one engine on one medium, named in the log.
run() {
  local engine=$1 medium=$2 started
  shift 2
  started=$(date +%s)
  echo "=== package tests in $engine on $medium: $*"
  local command=(env RUNSTORE_ENGINE="$engine" RUNSTORE_MEDIUM="$medium" timeout --kill-after=30 "$LIMIT_S")
  if [ "$engine" = webkit ]; then
    # Each file on its own, once more if it fails (scripts/webkit-once-more.sh says why).
    local file
    for file in "$@"; do
      if ! bash scripts/webkit-once-more.sh "webkit $medium $file" "${command[@]}" xvfb-run -a node --test "$file"; then
        echo "package tests FAILED in $engine on $medium" >&2
        exit 1
      fi
    done
  elif ! "${command[@]}" node --test --test-concurrency=1 "$@"; then
    echo "package tests FAILED in $engine on $medium" >&2
    exit 1
  fi
  echo "package tests in $engine on $medium took $(( $(date +%s) - started )) s"
}

engines=("$@")
[ ${#engines[@]} -gt 0 ] || engines=(chromium firefox webkit)
for engine in "${engines[@]}"; do
  case "$engine" in
    chromium)
      run chromium opfs "${ALL[@]}"
      # The package's cases again, each store served by another tab: the calls come from a follower.
      RUNSTORE_THROUGH=follower run chromium opfs tests/js/package.test.mjs
      run chromium indexeddb tests/js/package.test.mjs tests/js/crash.test.mjs
      run chromium opfs tests/js/workflow-chaos.test.mjs ;;
    firefox)
      run firefox opfs "${ALL[@]}"
      run firefox indexeddb tests/js/package.test.mjs tests/js/crash.test.mjs ;;
    webkit)
      run webkit indexeddb tests/js/package.test.mjs tests/js/hostile-input.test.mjs tests/js/crash.test.mjs \
        tests/js/tabs.test.mjs tests/js/export-import.test.mjs tests/js/workflow.test.mjs tests/js/inspector.test.mjs \
        tests/js/inspector-screens.test.mjs tests/js/inspector-sync.test.mjs tests/js/cipher.test.mjs ;;
    *) echo "unknown engine $engine (chromium, firefox or webkit)" >&2; exit 2 ;;
  esac
done

echo "=== the package's cases in Node $(node --version) (tests/app's installed package, the store in the process)"
RUNSTORE_HOST=node node --test tests/js/package.test.mjs tests/js/workflow.test.mjs tests/js/cipher.test.mjs
echo "=== the same on the file medium, the file medium's own cases, and processes killed while they write to it"
RUNSTORE_HOST=node RUNSTORE_MEDIUM=file node --test tests/js/package.test.mjs tests/js/workflow.test.mjs
# The crash test checks each killed writer's file with stock SQLite too: better-sqlite3, from tests/langgraph.
if [ ! -d tests/langgraph/node_modules/better-sqlite3 ] || [ tests/langgraph/package.json -nt tests/langgraph/node_modules/.package-lock.json ]; then
  (cd tests/langgraph && npm install --no-audit --no-fund --loglevel=error)
fi
node --test --test-concurrency=1 tests/js/node-file.test.mjs tests/js/node-file-crash.test.mjs tests/js/node-file-workflow.test.mjs
echo "=== the package under Bun, on the file medium"
[ -x tests/bun/node_modules/.bin/bun ] || npm ci --prefix tests/bun --no-audit --no-fund --loglevel=error
tests/bun/node_modules/.bin/bun tests/bun/file.mjs
echo "=== the client's modules, runstore/core's steps as text and the tab protocol, in Node"
node --test --test-concurrency=1 tests/js/wire.test.mjs tests/js/core-commit.test.mjs tests/js/core-reads.test.mjs tests/js/changes.test.mjs tests/js/tabs-protocol.test.mjs
echo "=== the package in Node under another realm's globals, and what npm packs"
node --test tests/js/bytes-any-realm.test.mjs tests/js/pack.test.mjs
