#!/usr/bin/env bash
# Start a throw-away PostgreSQL server for the store contract tests, if this machine has
# one installed; print the URL to use (nothing when there is no server to start).
# Usage: eval "$(bash .ci/postgres.sh start)"   /   bash .ci/postgres.sh stop
set -euo pipefail
PGBIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)"
PGDIR="${TRACESTORE_PGDIR:-/tmp/tracestore-ci-pg}"
PORT="${TRACESTORE_PGPORT:-55432}"
# su runs from / : the postgres user may not be allowed into the (private) clone folder.
as_pg() { if [ "$(id -u)" = 0 ]; then (cd / && su postgres -s /bin/sh -c "$*"); else sh -c "$*"; fi; }

case "${1:-start}" in
  start)
    if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
      echo "# no PostgreSQL server on this machine; PostgreSQL contract tests will skip" >&2
      exit 0
    fi
    rm -rf "$PGDIR"; mkdir -p "$PGDIR"
    [ "$(id -u)" = 0 ] && chown postgres "$PGDIR"
    as_pg "$PGBIN/initdb -D $PGDIR/data -U postgres --auth=trust -E UTF8 >$PGDIR/initdb.log 2>&1"
    as_pg "$PGBIN/pg_ctl -D $PGDIR/data -l $PGDIR/server.log -o '-p $PORT -k $PGDIR -c listen_addresses=127.0.0.1 -c fsync=off' -w start >/dev/null"
    echo "export TRACESTORE_TEST_PG_URL=postgresql+psycopg://postgres@127.0.0.1:$PORT/postgres"
    ;;
  stop)
    [ -n "$PGBIN" ] && [ -d "$PGDIR/data" ] && as_pg "$PGBIN/pg_ctl -D $PGDIR/data -m fast -w stop >/dev/null" || true
    ;;
esac
