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

port=${PORT:-5173}
url="http://127.0.0.1:$port/"

# Say why the demo cannot start before building anything (a build would also replace the files
# a running demo serves): Vite serves one preview per project, and the port must be free.
running=$(node scripts/demo-running.mjs www) || true
if [ -n "$running" ]; then
  cat >&2 <<MSG
Cannot start the demo: another \`npm start\` of this checkout is serving it already, $running.
Open that URL, or stop that server first (Ctrl-C in its terminal, or kill the PID) and run
\`npm start\` again. (Vite serves one preview per project, whatever the PORT.)
MSG
  exit 1
fi
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  echo "Cannot start the demo: port $port is in use by another program. Stop it, or pick another port: PORT=8080 npm start" >&2
  exit 1
fi

bash scripts/build-demo.sh
source scripts/env.sh
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

# The URL is printed once the page is served: until then a newcomer would open a dead link.
log=$(mktemp)
(cd www && exec vite preview --host 127.0.0.1 --port "$port" --strictPort) >"$log" 2>&1 &
vite=$!
stop_vite() { kill "$vite" 2>/dev/null || true; wait "$vite" 2>/dev/null || true; rm -f "$log"; }
trap 'stop_vite; [ "$sync" = 0 ] || stop_sync' EXIT
trap 'exit 130' INT TERM
until node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "$url"; do
  if ! kill -0 "$vite" 2>/dev/null; then
    cat "$log" >&2
    if grep -q "Found another Vite preview process" "$log"; then
      echo "Cannot start the demo: another \`npm start\` of this checkout serves it already (above: where, and its PID). Open that URL, or stop it and run \`npm start\` again." >&2
    elif grep -q "is already in use" "$log"; then
      echo "Cannot start the demo: port $port is in use. Stop what uses it, or pick another port: PORT=8080 npm start" >&2
    else
      echo "Cannot start the demo: vite preview stopped (its output is above)." >&2
    fi
    exit 1
  fi
  sleep 0.2
done

cat <<MSG

  runstore demo: $url

  Start a workflow or two, then reload the tab while they run (or close it and come back):
  the engine resumes each one from its journal and no side effect happens twice.
  $sync_note
  Ctrl-C stops the server.

MSG
wait "$vite"
