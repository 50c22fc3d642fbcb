# Sourced by the build and test scripts: selects the toolchain that can build wasm32 and the
# C compiler for SQLite's C, and puts the project's tools on PATH.
runstore_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PATH="$runstore_root/node_modules/.bin:$HOME/.cargo/bin:$PATH"
wasm_libdir=$(rustc --print target-libdir --target wasm32-unknown-unknown 2>/dev/null || true)
if [ -z "$wasm_libdir" ] || ! compgen -G "$wasm_libdir/libstd-*.rlib" >/dev/null; then
  # No wasm32 std in the default toolchain: use Debian's rustc-web (see scripts/setup.sh).
  export WASM_RUSTUP_TOOLCHAIN=system-web
fi
for cc in clang-22 clang; do
  if command -v "$cc" >/dev/null; then export CC_wasm32_unknown_unknown=$cc; break; fi
done
for ar in llvm-ar-22 llvm-ar; do
  if command -v "$ar" >/dev/null; then export AR_wasm32_unknown_unknown=$ar; break; fi
done
export CHROMEDRIVER=${CHROMEDRIVER:-/usr/bin/chromedriver}
# Run a command with the wasm-capable toolchain.
wasm_env() { RUSTUP_TOOLCHAIN=${WASM_RUSTUP_TOOLCHAIN:-${RUSTUP_TOOLCHAIN:-}} "$@"; }
