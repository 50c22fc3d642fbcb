#!/usr/bin/env bash
# Where the package's wasm spends its bytes: builds the release wasm if it is stale, then runs
# wasm-bindgen and wasm-opt on it as the release build does, but keeping function names
# (`wasm-opt -g`), and prints the parts and the largest functions, raw and gzipped
# (scripts/size-profile.mjs; the table in BENCHMARKS.md, "Package size").
#   bash scripts/size-profile.sh [--top N]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bash scripts/build.sh --if-stale >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
wasm-bindgen --target web --keep-debug --out-dir "$out" target/wasm32-unknown-unknown/release/runstore.wasm
# The release build's wasm-opt flags (Cargo.toml, package.metadata.wasm-pack), with -g.
flags=$(sed -n 's/^wasm-opt = \[\(.*\)\]$/\1/p' Cargo.toml | tr -d '",')
# shellcheck disable=SC2086
wasm-opt $flags -g "$out/runstore_bg.wasm" -o "$out/named.wasm"
node scripts/size-profile.mjs "$out/named.wasm" "$@"
