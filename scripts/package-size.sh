#!/usr/bin/env bash
# Prints what the package makes a browser download: the wasm, the wasm-bindgen glue and the
# client's JS, raw and gzipped (gzip -9), and their total. Run by scripts/build.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
size() { wc -c < "$1" | tr -d ' '; }
gzipped() { gzip -9 -c "$@" | wc -c | tr -d ' '; }
wasm=pkg/runstore_bg.wasm
# The glue, and the built-ins it takes at load (src/wasm/intrinsics.js, a wasm-bindgen snippet).
glue=(pkg/runstore.js pkg/snippets/*/src/wasm/*.js)
client=(js/*.js)
client_raw=$(cat "${client[@]}" | wc -c | tr -d ' ')
# Each file is fetched and compressed on its own: sum the files' gzipped sizes.
client_gz=0
for file in "${client[@]}"; do client_gz=$((client_gz + $(gzipped "$file"))); done
wasm_gz=$(gzipped "$wasm")
glue_raw=$(cat "${glue[@]}" | wc -c | tr -d ' ')
glue_gz=0
for file in "${glue[@]}"; do glue_gz=$((glue_gz + $(gzipped "$file"))); done
printf '[build] %-28s %9s B raw %9s B gzipped\n' "$wasm" "$(size "$wasm")" "$wasm_gz"
printf '[build] %-28s %9s B raw %9s B gzipped\n' "glue (${#glue[@]} files)" "$glue_raw" "$glue_gz"
printf '[build] %-28s %9s B raw %9s B gzipped\n' "js/*.js (${#client[@]} files)" "$client_raw" "$client_gz"
printf '[build] %-28s %9s B raw %9s B gzipped\n' "total" \
  "$(( $(size "$wasm") + glue_raw + client_raw ))" "$((wasm_gz + glue_gz + client_gz))"
