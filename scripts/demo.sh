#!/usr/bin/env bash
# The README's first command (`npm start`): sets everything up, builds the package and the demo
# app, and serves the demo on 127.0.0.1 until interrupted. Port: $PORT (default 5173).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build-demo.sh
source scripts/env.sh

port=${PORT:-5173}
url="http://127.0.0.1:$port/"
cat <<MSG

  runstore demo: $url

  Start a workflow or two, then reload the tab while they run (or close it and come back):
  the runner resumes each one from its journal and no side effect happens twice.
  Open it in a second tab to see BUSY. Ctrl-C stops the server.

MSG
cd www
exec vite preview --host 127.0.0.1 --port "$port" --strictPort
