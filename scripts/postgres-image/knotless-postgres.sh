#!/bin/sh
# Starts PostgreSQL as a CI service: a fresh cluster in $PGDATA, trust authentication, listening on every address.
# The container starts as root (it needs CHOWN, SETUID and SETGID, which the run's hardening keeps) and runs the
# server as the postgres user; extra arguments go to postgres (`-c fsync=off`).
set -eu
PGDATA=${PGDATA:-/var/lib/postgresql/data}
# shellcheck disable=SC2012 # version directories: plain names, and ls sorts them
BIN=$(ls -d /usr/lib/postgresql/*/bin | tail -n 1)
mkdir -p "$PGDATA" /run/postgresql
chown postgres:postgres "$PGDATA" /run/postgresql
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  runuser -u postgres -- "$BIN/initdb" -D "$PGDATA" --auth=trust --username="${POSTGRES_USER:-postgres}" >/dev/null
  [ -z "${POSTGRES_DB:-}" ] || runuser -u postgres -- "$BIN/postgres" --single -D "$PGDATA" postgres <<SQL >/dev/null
CREATE DATABASE "$POSTGRES_DB";
SQL
fi
exec runuser -u postgres -- "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/run/postgresql "$@"
