#!/usr/bin/env bash
# Builds the npm package's wasm and its JS glue into pkg/ (release, optimised with wasm-opt).
# Usage: scripts/build.sh [--dev | --if-stale]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
profile=--release
case "${1:-}" in
  --dev) profile=--dev ;;
  --if-stale)
    # Nothing to do when the wasm is newer than every input of the build.
    if [ -f pkg/runstore_bg.wasm ] && [ -z "$(find src js/types.d.ts Cargo.toml Cargo.lock -newer pkg/runstore_bg.wasm -print -quit)" ]; then
      exit 0
    fi ;;
esac
# CARGO_PROFILE_RELEASE_OPT_LEVEL=z builds the Rust for size: 109 KB less gzipped, with batched
# appends and history reads a fifth to a quarter slower (BENCHMARKS.md, "Package size"), so not
# the default. The default lowers LLVM's inline threshold instead (.cargo/config.toml).
wasm_env wasm-pack build "$profile" --target web --out-dir pkg --out-name runstore --no-pack --quiet
# pkg/ is part of the npm package: wasm-pack's own ignore file would hide it from `npm pack`.
rm -f pkg/.gitignore pkg/package.json pkg/README.md
# wasm-bindgen declares `[Symbol.dispose]()` on RunStoreCore (for `using`), which TypeScript
# knows only with its lib esnext.disposable: with the reference the declarations check under an
# app's own `lib` (ES2022 and DOM, say) with skipLibCheck off.
sed -i '1i /// <reference lib="esnext.disposable" />' pkg/runstore.d.ts
bash scripts/package-size.sh
