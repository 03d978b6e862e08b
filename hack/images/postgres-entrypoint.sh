#!/bin/sh
# Entrypoint of the PostgreSQL image that hack/build-postgres-image.sh assembles. It keeps the part of the
# official postgres image's interface that tests use: POSTGRES_USER (default postgres), POSTGRES_PASSWORD
# (needed to initialise), POSTGRES_DB (default POSTGRES_USER) and PGDATA. An empty data directory is
# initialised once; then postgres runs in the foreground as the postgres user (uid 999), arguments appended.
set -eu
export PGDATA="${PGDATA:-/var/lib/postgresql/data}"

if [ "$(id -u)" = 0 ]; then
  # Started as root (no runAsUser): a fresh volume is root's, so hand it to postgres and drop privileges.
  mkdir -p "$PGDATA"
  chown postgres:postgres "$PGDATA"
  chmod 700 "$PGDATA"
  # The image has the socket directory, but `ctr run` (not the kubelet) mounts an empty tmpfs on /run.
  install -d -m 3777 -o postgres -g postgres /var/run/postgresql
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  user="${POSTGRES_USER:-postgres}"
  db="${POSTGRES_DB:-$user}"
  : "${POSTGRES_PASSWORD:?is needed to initialise an empty data directory}"
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  # Trust on the local socket (only processes in the container reach it), passwords over TCP.
  initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 \
    --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    # Single-user mode creates the database without starting a server that something could reach early.
    quoted=$(printf '%s' "$db" | sed 's/"/""/g')
    echo "CREATE DATABASE \"$quoted\";" | postgres --single -D "$PGDATA" postgres >/dev/null 2>"$PGDATA/init.log" ||
      { cat "$PGDATA/init.log" >&2; exit 1; }
    rm -f "$PGDATA/init.log"
  fi
  echo "initialised $PGDATA: user $user, database $db"
fi

exec postgres -D "$PGDATA" -c listen_addresses='*' "$@"
