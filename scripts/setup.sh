#!/usr/bin/env bash
# Installs everything the build and the tests need, skipping what is already there:
# a Rust toolchain that can target wasm32-unknown-unknown, a C compiler for SQLite's C on
# wasm32, wasm-bindgen-cli (the exact version in Cargo.lock), wasm-pack, the three browser
# engines the tests run in with their WebDriver servers (Chromium and chromedriver, Firefox ESR
# and geckodriver, WebKitGTK's MiniBrowser and WebKitWebDriver, with Xvfb for the display WebKit
# needs), PostgreSQL (for the PgStore tests), and the npm packages. Safe to run again: a second
# run takes seconds.
#
# Where `rustup target add wasm32-unknown-unknown` works, that is all the Rust side needs.
# Where it cannot download (a machine that reaches only package registries), Debian's
# rustc-web and its standard-library source are used to build a wasm32 std once.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
log() { printf '[setup] %s\n' "$*" >&2; }

apt_updated=0
apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || { log "missing packages: ${missing[*]} (no apt-get here)"; return 1; }
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if [ $apt_updated -eq 0 ]; then $sudo apt-get update -qq; apt_updated=1; fi
  log "apt-get install ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

has_wasm_std() { # $1: rustc binary
  local dir
  dir=$("$1" --print target-libdir --target wasm32-unknown-unknown 2>/dev/null) || return 1
  compgen -G "$dir/libstd-*.rlib" >/dev/null
}

# 1. A Rust toolchain with a wasm32 standard library.
# RUNSTORE_WASM_FALLBACK=1 takes the fallback even where rustup could add the target (to test it).
setup_rust_wasm() {
  if [ "${RUNSTORE_WASM_FALLBACK:-0}" != 1 ]; then
    if has_wasm_std rustc; then return 0; fi
    if command -v rustup >/dev/null && rustup target add wasm32-unknown-unknown >/dev/null 2>&1 \
       && has_wasm_std rustc; then
      log "wasm32 target added with rustup"; return 0
    fi
  fi
  log "rustup cannot add wasm32 here: using Debian's rustc-web with a wasm32 std built from source"
  apt_install rustc-web cargo-web rust-web-src lld-22 clang-22
  if ! has_wasm_std /usr/bin/rustc; then
    local tmp libdir
    tmp=$(mktemp -d)
    libdir="/usr/lib/rustlib/wasm32-unknown-unknown/lib"
    (cd "$tmp" && /usr/bin/cargo init --quiet --lib --name wasmstd)
    log "building the wasm32 standard library (a few minutes, once)"
    (cd "$tmp" && RUSTC_BOOTSTRAP=1 RUSTC=/usr/bin/rustc /usr/bin/cargo test --release --no-run \
       --target wasm32-unknown-unknown -Zbuild-std=std,panic_abort,test >/dev/null 2>"$tmp/log") \
      || { tail -30 "$tmp/log" >&2; return 1; }
    mkdir -p "$libdir"
    find "$tmp/target/wasm32-unknown-unknown/release/deps" -name '*.rlib' ! -name 'libwasmstd-*' \
      -exec cp {} "$libdir/" \;
    rm -rf "$tmp"
  fi
  if command -v rustup >/dev/null && ! rustup toolchain list | grep -q '^system-web'; then
    rustup toolchain link system-web /usr
  fi
}

# 2. Browsers, drivers and the C compiler for SQLite on wasm32. Debian's Firefox ESR has no
# geckodriver package: it is built from crates.io (setup_wasm_tools). webkit2gtk-driver brings
# WebKitGTK with its MiniBrowser; WebKit needs a display, which xvfb-run gives it.
setup_system_packages() {
  apt_install chromium chromium-driver firefox-esr webkit2gtk-driver xvfb
  # The PostgreSQL server for the PgStore tests (scripts/test-postgres.sh starts a cluster).
  apt_install postgresql
  # OpenSSL's libcrypto, which the native build's SQLCipher links (the `cipher` feature).
  apt_install libssl-dev pkg-config
  if ! command -v clang-22 >/dev/null && ! command -v clang >/dev/null; then apt_install clang-22 lld-22; fi
}

# 3. wasm-bindgen-cli at exactly the version Cargo.lock pins, and wasm-pack.
setup_wasm_tools() {
  local want have
  want=$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/version = |"/,""); print; exit}' Cargo.lock)
  have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
  if [ "$have" != "$want" ]; then
    log "cargo install wasm-bindgen-cli $want"
    cargo install -q wasm-bindgen-cli --version "$want" --force
  fi
  if ! command -v wasm-pack >/dev/null; then
    log "cargo install wasm-pack"
    cargo install -q wasm-pack
  fi
  # Firefox's WebDriver server, for `wasm-pack test --firefox` (without it wasm-pack would try
  # to download one).
  if ! command -v geckodriver >/dev/null; then
    log "cargo install geckodriver"
    cargo install -q geckodriver
  fi
}

# 4. npm packages (wasm-opt from binaryen, playwright-core for Chromium, puppeteer-core for
# Firefox over WebDriver BiDi, vite, typescript, pngjs and pixelmatch for the inspector's
# screenshots).
setup_npm() {
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    log "npm install"
    npm install --no-audit --no-fund --loglevel=error >/dev/null
  fi
}

setup_system_packages
setup_rust_wasm
setup_wasm_tools
setup_npm
log "ready"
