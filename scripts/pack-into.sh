#!/usr/bin/env bash
# Installs the npm package into the app folder given (tests/app, benches/official) the way an
# app gets it: builds pkg/ if stale, packs the tarball into target/npm, installs it unsaved.
# The set-up runs first (it skips what is there): a benchmark started on its own also finds the
# toolchain and the root's npm packages (Vite, the official SQLite wasm build) current.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
bash scripts/build.sh --if-stale
mkdir -p target/npm
tarball=$(npm pack --silent --pack-destination target/npm)
echo "[pack] target/npm/$tarball ($(du -k "target/npm/$tarball" | cut -f1) KiB) into $1"
(cd "$1" && npm install --no-save --no-audit --no-fund --loglevel=error "$runstore_root/target/npm/$tarball")
