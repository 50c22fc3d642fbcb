#!/usr/bin/env bash
# Runs one WebKit test command, and runs it once more if it fails: the stage fails only when the
# failure comes back. WebKit alone gets this, because WebKitGTK 2.50's WebAssembly engine now
# and then faults inside a store's wasm on inputs that pass in every rerun and in Chromium and
# Firefox (docs/browser.md, "WebKit's own faults"). A failure that comes back is the code's.
#
# The first run's output is shown as it runs, kept in tests/artifacts/webkit-first-failures/,
# and its failing lines are added to tests/artifacts/webkit-first-failures.txt, which
# scripts/test.sh prints at the end of a run, so that a pass on the second try is never silent.
# Usage: scripts/webkit-once-more.sh LABEL COMMAND...
set -uo pipefail
cd "$(dirname "$0")/.."
label=$1
shift
dir=tests/artifacts/webkit-first-failures
mkdir -p "$dir"
log="$dir/$(date +%Y%m%d-%H%M%S)-${label//[^A-Za-z0-9._-]/_}.log"

"$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -eq 0 ]; then
  rm -f "$log"
  exit 0
fi
{
  echo "$label: failed on the first run (exit $status; output in $log):"
  grep -E '^not ok|^# fail|^✖|Out of bounds|malformed|RuntimeError|panicked|FAILED' "$log" | head -20 | sed 's/^/  /'
} >> tests/artifacts/webkit-first-failures.txt
echo "=== $label failed (exit $status); running it once more (scripts/webkit-once-more.sh)" >&2
"$@"
status=$?
[ "$status" -eq 0 ] && echo "  ... and passed on the second run" >> tests/artifacts/webkit-first-failures.txt
exit "$status"
