#!/usr/bin/env bash
# The package in Node and with LangGraph.js: installs the packed tarball into tests/langgraph
# (an app with LangGraph's packages), runs the Node tests there (imports on a server,
# runstore/core's init, a graph resumed after a cut-off run, examples/node-quickstart.mjs),
# the vitest example of docs/node.md and the README's quick start (an app's unit tests on RunStore
# in Node, also under vitest's jsdom and happy-dom environments), every code block of the README
# and the docs under strict TypeScript, and their links, LangGraph's checkpoint validation suite
# on RunStoreSaver (vitest prints its own count), and the page whose graph survives reloads and
# runs beside another tab's in headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
app=tests/langgraph
if [ ! -d "$app/node_modules/@langchain/langgraph" ] || [ "$app/package.json" -nt "$app/node_modules/.package-lock.json" ]; then
  echo "[langgraph] npm install in $app (builds better-sqlite3 for the benchmark's official saver)"
  (cd "$app" && npm install --no-audit --no-fund --loglevel=error)
fi
bash scripts/pack-into.sh "$app"
(cd "$app" && node --test --test-reporter=spec node.test.mjs)
echo "[node] the vitest example (docs/node.md) and the README's quick start: an app's unit tests on RunStore in Node, jsdom and happy-dom"
node tests/js/readme-example.mjs --vitest "$app/readme-example" 'docs/node.md#Unit tests on a real store' jsdom happy-dom
# An app's own vitest config, empty: without one vitest takes tests/langgraph's (the suites).
echo 'export default {};' > "$app/readme-example/vitest.config.mjs"
(cd "$app/readme-example" && NO_COLOR=1 ../node_modules/.bin/vitest run)
echo "[types] every code block of README.md and docs/ under strict TypeScript, the package's declarations checked too"
node tests/js/readme-types.mjs "$app/readme-types" README.md docs/*.md
tsc -p "$app/readme-types"
echo "[docs] every link of the README and docs/ leads to a file and heading that exist"
node --test tests/js/docs-links.test.mjs
echo "[langgraph] @langchain/langgraph-checkpoint-validation on RunStoreSaver (RunStore, memory, in Node's process)"
(cd "$app" && NO_COLOR=1 node_modules/.bin/vitest run)
(cd "$app" && node_modules/.bin/vite build --logLevel error --emptyOutDir)
echo "[langgraph] the saver benchmark, as a smoke test (its figures mean nothing at this size)"
(cd "$app" && node bench.mjs --checkpoints 20 --runs 1 --warmup 20 --rounds 1)
echo "[langgraph] the page in headless Chromium: a graph resumed after a reload, two tabs on one store"
node --test --test-reporter=spec tests/js/langgraph.test.mjs
