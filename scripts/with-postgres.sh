#!/usr/bin/env bash
# Runs a command with a throwaway PostgreSQL cluster: initdb in a temporary directory, the
# server listening on a unix socket in that directory only (no TCP port, so runs never
# collide), RUNSTORE_PG_URL exported for the command, the cluster stopped and removed on exit
# whatever happens.
#
# initdb and postgres refuse to run as root (CI runs as root): the cluster then runs as the
# system user `runstore`, created here when absent, which owns the temporary directory.
#
# Usage: scripts/with-postgres.sh COMMAND [ARGS...]
#        RUNSTORE_PG_KEEP=1 keeps the cluster's directory (and log) for a look after a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pg_bin/initdb" ] || { echo "PostgreSQL server binaries not found (scripts/setup.sh installs them)" >&2; exit 1; }

as_owner=()
if [ "$(id -u)" -eq 0 ]; then
  id runstore >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin runstore
  as_owner=(runuser -u runstore --)
fi

dir=$(mktemp -d /tmp/runstore-pg.XXXXXX)
[ ${#as_owner[@]} -eq 0 ] || chown runstore: "$dir"
chmod 700 "$dir"

stop_cluster() {
  "${as_owner[@]}" "$pg_bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  if [ "${RUNSTORE_PG_KEEP:-0}" = 1 ]; then echo "cluster kept in $dir" >&2; else rm -rf "$dir"; fi
}
trap stop_cluster EXIT

"${as_owner[@]}" "$pg_bin/initdb" -D "$dir/data" -U runstore --auth=trust -E UTF8 --locale=C.UTF-8 \
  >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
# A throwaway cluster: fsync off (nothing here must survive a crash of the machine).
"${as_owner[@]}" "$pg_bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses='' -k $dir -c max_connections=300 -c fsync=off -c full_page_writes=off" \
  start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }

export RUNSTORE_PG_URL="host=$dir port=5432 user=runstore dbname=postgres"
echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on $dir" >&2
"$@"
