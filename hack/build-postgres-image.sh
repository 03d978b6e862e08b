#!/usr/bin/env bash
# Assembles a PostgreSQL image from Debian's postgresql package as an OCI image archive, with no container
# engine and no registry (ADR 0013), for a real database on the local cluster's real node. It is not the
# official image, but it keeps the part of its interface tests use (POSTGRES_USER, POSTGRES_PASSWORD,
# POSTGRES_DB, PGDATA, port 5432, uid 999); see hack/images/postgres-entrypoint.sh.
#
# Usage: build-postgres-image.sh [REF]                 REF defaults to docker.io/library/postgres:15
# The archive's path is the last line printed. Import it with: ctr -n k8s.io images import PATH
#
# Cached under ${KCOP_CACHE_DIR:-~/.cache/keycloak-operator}/images, keyed by the recipe below and the
# entrypoint; a second run returns at once. Needs root, mmdebstrap and the project's Python.
set -euo pipefail
major=15 # what Debian bookworm ships
ref=${1:-docker.io/library/postgres:$major}
here=$(cd "$(dirname "$0")" && pwd)
images=${KCOP_CACHE_DIR:-$HOME/.cache/keycloak-operator}/images
mirror=${KCOP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
entrypoint=$here/images/postgres-entrypoint.sh

# The hooks are single-quoted on purpose: mmdebstrap's shell expands "$1" (the root being built).
# shellcheck disable=SC2016,SC2054
recipe=(
  --variant=essential
  "--include=postgresql-$major,usr-is-merged"
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --essential-hook='mkdir -p "$1/usr/share/man/man1"'
  # The official image's postgres user (999), made before the package's postinst would pick a free uid.
  --essential-hook='echo "postgres:x:999:999::/var/lib/postgresql:/bin/sh" >> "$1/etc/passwd"'
  --essential-hook='echo "postgres:x:999:" >> "$1/etc/group"'
  # The package's postinst makes a "main" cluster and a snakeoil TLS key: neither belongs in an image (the
  # entrypoint initialises its own data directory; a private key must not be shared by every container).
  --customize-hook='rm -rf "$1"/etc/postgresql/*/main "$1"/var/lib/postgresql/*/main'
  --customize-hook='rm -f "$1/etc/ssl/private/ssl-cert-snakeoil.key" "$1/etc/ssl/certs/ssl-cert-snakeoil.pem"'
  --customize-hook='rm -f "$1/etc/hostname"'
  --customize-hook='install -d -m 0700 -o 999 -g 999 "$1/var/lib/postgresql/data"'
)

# After mmdebstrap (which empties /run when it finishes): the socket directory, writable by any uid as in the
# official image.
finish_rootfs() {
  install -d -m 3777 -o 999 -g 999 "$1/run/postgresql"
}

# No User: the entrypoint starts as root only to hand a fresh volume to postgres, then drops to uid 999.
config=$(cat <<EOF
{
  "Entrypoint": ["/usr/local/bin/postgres-entrypoint"],
  "Env": [
    "PATH=/usr/lib/postgresql/$major/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG=C.UTF-8",
    "PGDATA=/var/lib/postgresql/data"
  ],
  "ExposedPorts": {"5432/tcp": {}},
  "StopSignal": "SIGINT",
  "Labels": {
    "org.opencontainers.image.title": "PostgreSQL $major",
    "org.opencontainers.image.description": "Assembled by hack/build-postgres-image.sh from Debian $suite's postgresql-$major"
  }
}
EOF
)

# ---- from here on: caching and plumbing --------------------------------------------------------------------
# The project's interpreter (the localcluster package needs its dependencies): KCOP_PYTHON, else the
# checkout's virtualenv, else python3.
python=${KCOP_PYTHON:-$here/../.venv/bin/python}
[ -x "$python" ] || python=python3
py() { PYTHONPATH=$here/../src "$python" -m localcluster.image_build "$@"; }
key() { sha256sum | cut -c1-16; }

layer_key=$( (printf '%s\n' "$suite" "${recipe[@]}"; declare -f finish_rootfs) | key)
layer=$images/base/postgres-$suite-$major-$layer_key.tar
archive=$images/$(printf '%s' "$ref" | tr '/:@' '___').tar
archive_key=$( (printf '%s\n' "$layer_key" "$ref" "$config"; cat "$entrypoint") | key)

if [ -f "$archive" ] && [ "$(cat "$archive.key" 2>/dev/null)" = "$archive_key" ]; then
  echo "$archive"
  exit 0
fi

mkdir -p "$images/base"
exec 9>"$images/.lock"
flock 9
work=$(mktemp -d "$images/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ ! -f "$layer" ]; then
  [ "$(id -u)" = 0 ] || { echo "the root filesystem is built with mmdebstrap as root; run as root" >&2; exit 1; }
  command -v mmdebstrap >/dev/null || { echo "needs mmdebstrap (apt-get install mmdebstrap)" >&2; exit 1; }
  echo "building the Debian $suite root filesystem with postgresql-$major (first run only: about a minute)" >&2
  t=$SECONDS
  mkdir "$work/rootfs"
  if ! mmdebstrap "${recipe[@]}" --format=directory "$suite" "$work/rootfs" "$mirror" \
    >"$work/mmdebstrap.log" 2>&1; then
    tail -n 30 "$work/mmdebstrap.log" >&2
    echo "mmdebstrap failed (log above)" >&2
    exit 1
  fi
  finish_rootfs "$work/rootfs"
  py layer "$work/rootfs" "$layer"
  # Layers of an older recipe are no longer used by anything this script writes.
  find "$images/base" -name "postgres-$suite-$major-*.tar" ! -path "$layer" -delete
  echo "  root filesystem layer in $((SECONDS - t)) s" >&2
fi

# The entrypoint in a layer of its own: editing it does not rebuild the root filesystem.
install -D -m 0755 "$entrypoint" "$work/top/usr/local/bin/postgres-entrypoint"
py layer "$work/top" "$work/entrypoint.tar"
printf '%s\n' "$config" > "$work/config.json"
py image "$archive" "$ref" "$work/config.json" "$layer" "$work/entrypoint.tar" >&2
echo "$archive_key" > "$archive.key"
echo "$archive"
