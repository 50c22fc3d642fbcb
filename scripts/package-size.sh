#!/usr/bin/env bash
# Prints what the package makes a browser download: the wasm, the wasm-bindgen glue and the
# client's JS, raw and gzipped (gzip -9), and their total; then what each optional entry
# (runstore/workflow, runstore/langgraph, runstore/inspector) adds for an app that imports it,
# and what `store.sync()` loads on its first call. Fails when the main entry is above its
# budget (below): a size does not drift with the machine's load, so a test can hold it.
# Run by scripts/build.sh.
#   bash scripts/package-size.sh [--quiet (only a size above the budget is said) | --no-budget]
set -euo pipefail
cd "$(dirname "$0")/.."
size() { wc -c < "$1" | tr -d ' '; }
gzipped() { gzip -9 -c "$@" | wc -c | tr -d ' '; }
wasm=pkg/runstore_bg.wasm
# The glue, and the built-ins it takes at load (src/wasm/intrinsics.js, a wasm-bindgen snippet).
glue=(pkg/runstore.js pkg/snippets/*/src/wasm/*.js)
# The main entry, gzipped: the wasm, the glue and the client's JS. BENCHMARKS.md, "Package
# size", has what each part weighs and what each lever saved. About 0.4 % above the size with
# the write methods and most reads of `runstore/core` running through one way in each
# (js/core.js).
budget=${RUNSTORE_PACKAGE_BUDGET:-953000}
mode=${1:-}
# The main entry's JS: every file but the optional entries' own and the sync code, which
# `store.sync()` imports on its first call.
client=()
for file in js/*.js; do
  case "$file" in js/workflow*.js | js/langgraph*.js | js/inspector*.js | js/sync.js) ;; *) client+=("$file") ;; esac
done
client_raw=$(cat "${client[@]}" | wc -c | tr -d ' ')
# Each file is fetched and compressed on its own: sum the files' gzipped sizes.
sum_gzipped() {
  local total=0 file
  for file in "$@"; do total=$((total + $(gzipped "$file"))); done
  echo "$total"
}
client_gz=$(sum_gzipped "${client[@]}")
wasm_gz=$(gzipped "$wasm")
glue_raw=$(cat "${glue[@]}" | wc -c | tr -d ' ')
glue_gz=$(sum_gzipped "${glue[@]}")
total_gz=$((wasm_gz + glue_gz + client_gz))
report() {
  printf '[build] %-28s %9s B raw %9s B gzipped\n' "$wasm" "$(size "$wasm")" "$wasm_gz"
  printf '[build] %-28s %9s B raw %9s B gzipped\n' "glue (${#glue[@]} files)" "$glue_raw" "$glue_gz"
  printf '[build] %-28s %9s B raw %9s B gzipped\n' "js/ (main entry, ${#client[@]} files)" "$client_raw" "$client_gz"
  printf '[build] %-28s %9s B raw %9s B gzipped\n' "total" \
    "$(( $(size "$wasm") + glue_raw + client_raw ))" "$total_gz"
  printf '[build] %-28s %9s B raw %9s B gzipped\n' "+ store.sync() (js/sync.js)" \
    "$(size js/sync.js)" "$(gzipped js/sync.js)"
  for entry in workflow langgraph inspector; do
    files=(js/"$entry"*.js)
    printf '[build] %-28s %9s B raw %9s B gzipped\n' "+ runstore/$entry (${#files[@]} files)" \
      "$(cat "${files[@]}" | wc -c | tr -d ' ')" "$(sum_gzipped "${files[@]}")"
  done
}
[ "$mode" = --quiet ] || report
if [ "$mode" != --no-budget ] && [ "$total_gz" -gt "$budget" ]; then
  echo "[build] the main entry is $total_gz B gzipped, above its budget of $budget B" \
    "(scripts/package-size.sh; BENCHMARKS.md, \"Package size\")" >&2
  exit 1
fi
