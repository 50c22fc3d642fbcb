#!/usr/bin/env bash
# Runs the browser tests (wasm-pack test) in each engine: the conformance suite on OPFS
# (sahpool), on IndexedDB and on memory in a dedicated worker, the OPFS-only behaviour (reopen,
# BUSY, pool limits), the IndexedDB medium's own tests, and the main-thread tests
# (OPFS_UNAVAILABLE, IndexedDB, memory).
# - chromium: headless Chromium through chromedriver; webdriver.json holds its flags (root).
# - firefox: headless Firefox ESR through geckodriver; everything Chromium runs.
# - webkit: WebKitGTK's MiniBrowser through WebKitWebDriver on an Xvfb display. It has no OPFS
#   sync access handles: it runs the IndexedDB and memory tests and the main-thread tests.
# Needs what scripts/setup.sh installs.
# Usage: scripts/test-browser.sh [chromium] [firefox] [webkit]   (default: all three)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
# wasm-bindgen-test gives up on a test that prints nothing for 20 s by default; a debug build
# on a loaded 2-core machine takes longer for the cases that write megabytes to OPFS.
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-600}
# The longest one engine's run may take before it counts as hung (WebKitWebDriver can hang
# without a display; a browser can wedge).
ENGINE_LIMIT_S=${ENGINE_LIMIT_S:-1500}

limited() { wasm_env timeout --kill-after=30 "$ENGINE_LIMIT_S" "$@"; }

run_engine() {
  case "$1" in
    chromium) limited wasm-pack test --headless --chrome ;;
    firefox) limited wasm-pack test --headless --firefox --geckodriver "$(command -v geckodriver)" ;;
    webkit)
      # xvfb-run gives WebKit the display it needs; -a picks a free display number. Once more
      # if it fails (scripts/webkit-once-more.sh says why).
      bash scripts/webkit-once-more.sh "webkit conformance" timeout --kill-after=30 "$ENGINE_LIMIT_S" xvfb-run -a bash -c 'set -e; source scripts/env.sh
        safari() { wasm_env wasm-pack test --headless --safari --safaridriver /usr/bin/WebKitWebDriver "$@"; }
        safari --test browser_indexeddb --test browser_main_thread
        safari --test browser -- on_memory' ;;
    *) echo "unknown engine $1 (chromium, firefox or webkit)" >&2; return 2 ;;
  esac
}

engines=("$@")
[ ${#engines[@]} -gt 0 ] || engines=(chromium firefox webkit)
for engine in "${engines[@]}"; do
  started=$(date +%s)
  echo "=== browser tests in $engine"
  if ! run_engine "$engine"; then
    echo "browser tests FAILED in $engine" >&2
    exit 1
  fi
  echo "browser tests in $engine took $(( $(date +%s) - started )) s"
done
