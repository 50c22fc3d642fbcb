# Sourced by scripts/test-postgres.sh and scripts/bench-postgres.sh: starts a throwaway
# PostgreSQL cluster and exports RUNSTORE_PG_URL for it; the cluster is stopped and removed
# when the sourcing script exits, whatever happens.
#
# initdb in a temporary directory, the server listening on a unix socket in that directory
# only (no TCP port, so runs never collide). initdb and postgres refuse to run as root (CI runs
# as root): the cluster then runs as the system user `runstore`, created here when absent,
# which owns the temporary directory. RUNSTORE_PG_KEEP=1 keeps the directory (and the server
# log) for a look after a failure. Extra server settings: RUNSTORE_PG_SETTINGS.

pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$pg_bin/initdb" ] || { echo "PostgreSQL server binaries not found (scripts/setup.sh installs them)" >&2; exit 1; }

pg_as_owner=()
if [ "$(id -u)" -eq 0 ]; then
  id runstore >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin runstore
  pg_as_owner=(runuser -u runstore --)
fi

pg_dir=$(mktemp -d /tmp/runstore-pg.XXXXXX)
[ ${#pg_as_owner[@]} -eq 0 ] || chown runstore: "$pg_dir"
chmod 700 "$pg_dir"

stop_pg_cluster() {
  "${pg_as_owner[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate stop >/dev/null 2>&1 || true
  if [ "${RUNSTORE_PG_KEEP:-0}" = 1 ]; then echo "cluster kept in $pg_dir" >&2; else rm -rf "$pg_dir"; fi
}
trap stop_pg_cluster EXIT

"${pg_as_owner[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -U runstore --auth=trust -E UTF8 \
  --locale=C.UTF-8 >"$pg_dir/initdb.log" 2>&1 || { cat "$pg_dir/initdb.log" >&2; exit 1; }
# Room for the connections of the racing tests and of the conformance cases' stores.
"${pg_as_owner[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 60 \
  -o "-c listen_addresses='' -k $pg_dir -c max_connections=300 ${RUNSTORE_PG_SETTINGS:-}" \
  start >/dev/null || { cat "$pg_dir/server.log" >&2; exit 1; }

export RUNSTORE_PG_URL="host=$pg_dir port=5432 user=runstore dbname=postgres"
echo "PostgreSQL $("$pg_bin/postgres" --version | awk '{print $3}') on $pg_dir" >&2
