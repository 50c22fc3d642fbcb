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
    # Nothing to build when the wasm is newer than every input of the build; the package's
    # size is still held to its budget (the client's JS may have grown).
    if [ -f pkg/runstore_bg.wasm ] && [ -z "$(find src js/types.d.ts Cargo.toml Cargo.lock .cargo/config.toml -newer pkg/runstore_bg.wasm -print -quit)" ]; then
      exec bash scripts/package-size.sh --quiet
    fi ;;
esac
# `RUSTFLAGS= CARGO_PROFILE_RELEASE_OPT_LEVEL=z` builds the Rust for size (RUSTFLAGS set, even
# empty, replaces the inline threshold of .cargo/config.toml, which would apply at "z" too):
# 109 KB less gzipped, with batched appends and history reads a fifth to a quarter slower
# (BENCHMARKS.md, "Package size"), so not the default.
wasm_env wasm-pack build "$profile" --target web --out-dir pkg --out-name runstore --no-pack --quiet
# pkg/ is part of the npm package: wasm-pack's own ignore file would hide it from `npm pack`.
rm -f pkg/.gitignore pkg/package.json pkg/README.md
# wasm-bindgen declares `[Symbol.dispose]()` on RunStoreCore (for `using`), which TypeScript
# knows only with its lib esnext.disposable: with the reference the declarations check under an
# app's own `lib` (ES2022 and DOM, say) with skipLibCheck off.
sed -i '1i /// <reference lib="esnext.disposable" />' pkg/runstore.d.ts
# The budget is for the release build: a dev build's wasm is several times larger.
if [ "$profile" = --dev ]; then bash scripts/package-size.sh --no-budget; else bash scripts/package-size.sh; fi
