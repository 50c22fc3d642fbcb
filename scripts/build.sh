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
# The package's Rust is built for size (opt-level "z"; SQLite's C is at -Oz already, see
# .cargo/config.toml): 110 KB less gzipped than opt-level 3, at a half to three quarters of the
# speed on history reads and no cost resolved elsewhere on a loaded machine (BENCHMARKS.md,
# "Package size"). CARGO_PROFILE_RELEASE_OPT_LEVEL=3 gives the faster, larger build. Only this
# build: native builds and benchmarks keep the release profile's opt-level 3.
[ "$profile" = --release ] && export CARGO_PROFILE_RELEASE_OPT_LEVEL=${CARGO_PROFILE_RELEASE_OPT_LEVEL:-z}
wasm_env wasm-pack build "$profile" --target web --out-dir pkg --out-name runstore --no-pack --quiet
# pkg/ is part of the npm package: wasm-pack's own ignore file would hide it from `npm pack`.
rm -f pkg/.gitignore pkg/package.json pkg/README.md
bash scripts/package-size.sh
