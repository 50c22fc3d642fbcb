#!/usr/bin/env bash
# The README's first command (`npm start`): sets everything up, builds the package and the demo
# app, and serves the demo on 127.0.0.1 until interrupted. Port: $PORT (default 5173).
#
# With `npm start -- --sync` (or RUNSTORE_SYNC=1) it also builds and starts the sync server
# (runstore-sync) on $SYNC_PORT (default 8787), on PostgreSQL when RUNSTORE_SYNC_POSTGRES names
# a database, else on a SQLite file in target/demo-sync/, with a demo token for the namespace
# `demo`; the page finds it in www/dist/sync.json (built from www/public/sync.json, which says
# "no server") and syncs live. Ctrl-C stops both.
set -euo pipefail
cd "$(dirname "$0")/.."

sync=${RUNSTORE_SYNC:-0}
for arg in "$@"; do
  case "$arg" in
    --sync) sync=1 ;;
    *) echo "usage: npm start [-- --sync]" >&2; exit 2 ;;
  esac
done

bash scripts/build-demo.sh
source scripts/env.sh

port=${PORT:-5173}
url="http://127.0.0.1:$port/"
sync_note="Open it in a second tab: both share the store, and the leader tab runs the workflows."
if [ "$sync" != 0 ]; then
  cargo build --quiet --features server --bin runstore-sync
  sync_port=${SYNC_PORT:-8787}
  token=demo-token
  if [ -n "${RUNSTORE_SYNC_POSTGRES:-}" ]; then
    backend="PostgreSQL ($RUNSTORE_SYNC_POSTGRES)"
  else
    mkdir -p target/demo-sync
    export RUNSTORE_SYNC_SQLITE="$PWD/target/demo-sync/server.db"
    backend="SQLite ($RUNSTORE_SYNC_SQLITE)"
  fi
  RUNSTORE_SYNC_TOKENS="{\"$token\": [\"demo\"]}" RUNSTORE_SYNC_LISTEN="127.0.0.1:$sync_port" \
    target/debug/runstore-sync &
  server=$!
  sync_json="$PWD/www/dist/sync.json"
  no_sync_json="$PWD/www/public/sync.json"
  stop_sync() {
    kill "$server" 2>/dev/null || true
    wait "$server" 2>/dev/null || true
    cp "$no_sync_json" "$sync_json"
  }
  trap stop_sync EXIT
  trap 'exit 130' INT TERM
  until (exec 3<>"/dev/tcp/127.0.0.1/$sync_port") 2>/dev/null; do
    kill -0 "$server" 2>/dev/null || { echo "runstore-sync did not start (port $sync_port taken? SYNC_PORT=... picks another)" >&2; exit 1; }
    sleep 0.2
  done
  sleep 0.3
  kill -0 "$server" 2>/dev/null || { echo "runstore-sync stopped (port $sync_port taken? SYNC_PORT=... picks another)" >&2; exit 1; }
  printf '{"url": "http://127.0.0.1:%s", "token": "%s", "namespace": "demo"}\n' "$sync_port" "$token" > "$sync_json"
  sync_note="Sync server on $backend: open the URL in a second browser profile
  (or another browser): workflows started in one show up in the other."
fi

cat <<MSG

  runstore demo: $url

  Start a workflow or two, then reload the tab while they run (or close it and come back):
  the runner resumes each one from its journal and no side effect happens twice.
  $sync_note
  Ctrl-C stops the server.

MSG
cd www
if [ "$sync" != 0 ]; then
  vite preview --host 127.0.0.1 --port "$port" --strictPort
else
  exec vite preview --host 127.0.0.1 --port "$port" --strictPort
fi
