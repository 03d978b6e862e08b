#!/usr/bin/env bash
# Assembles quay.io/keycloak/keycloak:VERSION as an OCI image archive, with no container engine and no registry
# (ADR 0013): a Debian root filesystem with Debian's JRE, made by mmdebstrap, and the server distribution from
# Maven Central (fetch-keycloak.sh), laid out as the official image lays it out, so the operator's Deployment
# runs it unchanged. src/localcluster/oci.py writes the layers and the archive.
#
# Usage: build-keycloak-image.sh VERSION [REF]        REF defaults to quay.io/keycloak/keycloak:VERSION
# The archive's path is the last line printed. Import it with: ctr -n k8s.io images import PATH
#
# Cached under ${KCOP_CACHE_DIR:-~/.cache/keycloak-operator}/images: the root filesystem layer once for every
# Keycloak version, the /opt/keycloak layer once per version, the archive once per reference. A second run
# returns at once; editing the recipe below (the mmdebstrap arguments, stage_keycloak or the config) makes the
# parts it changes again. Needs root (mmdebstrap writes files owned by many users), mmdebstrap and the project's Python.
set -euo pipefail
version=${1:?usage: build-keycloak-image.sh VERSION [REF]}
ref=${2:-quay.io/keycloak/keycloak:$version}
here=$(cd "$(dirname "$0")" && pwd)
images=${KCOP_CACHE_DIR:-$HOME/.cache/keycloak-operator}/images
mirror=${KCOP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm

# The root filesystem: Debian's essential packages, a JRE Keycloak 26 supports (17; the official image has 21,
# which bookworm does not ship) and the en_US.UTF-8 locale the official image's LANG names. No apt, no docs,
# no translations; usr-is-merged stands in for usrmerge, which would pull in perl (50 MB) for nothing.
# The hooks are single-quoted on purpose: mmdebstrap's shell expands "$1" (the root being built).
# shellcheck disable=SC2016,SC2054
base_recipe=(
  --variant=essential
  --include=openjdk-17-jre-headless,locales,usr-is-merged
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  # The JRE's postinst registers its man page with update-alternatives, which fails if the directory is gone.
  --essential-hook='mkdir -p "$1/usr/share/man/man1"'
  --customize-hook='echo "en_US.UTF-8 UTF-8" > "$1/etc/locale.gen" && chroot "$1" locale-gen'
  # The official image's user: uid 1000 in group 0 (root), so an arbitrary uid in group 0 can write too.
  --customize-hook='echo "keycloak:x:0:root" >> "$1/etc/group"'
  --customize-hook='echo "keycloak:x:1000:0:keycloak user:/opt/keycloak:/sbin/nologin" >> "$1/etc/passwd"'
  # mmdebstrap copies the build machine's name; the runtime mounts the pod's own.
  --customize-hook='rm -f "$1/etc/hostname"'
)

# The /opt/keycloak layer: what the official Containerfile does with the distribution.
stage_keycloak() {
  local dist=$1 stage=$2
  mkdir -p "$stage/opt"
  tar -xzf "$dist" -C "$stage/opt" --no-same-owner
  mv "$stage"/opt/keycloak-* "$stage/opt/keycloak"
  mkdir -p "$stage/opt/keycloak/data"
  # Owned by 1000:0 and group-writable: kc.sh re-augments into lib/ and writes data/ at start.
  chown -R 1000:0 "$stage/opt/keycloak"
  chmod -R g+rwX "$stage/opt/keycloak"
}

# The runtime config, as the official image sets it (ENV, USER, EXPOSE, ENTRYPOINT). WorkingDir is our
# addition: the official image leaves it at /, and kc.sh finds its home from its own path either way.
config=$(cat <<EOF
{
  "Entrypoint": ["/opt/keycloak/bin/kc.sh"],
  "User": "1000",
  "WorkingDir": "/opt/keycloak",
  "Env": [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG=en_US.UTF-8",
    "KC_RUN_IN_CONTAINER=true"
  ],
  "ExposedPorts": {"8080/tcp": {}, "8443/tcp": {}, "9000/tcp": {}},
  "Labels": {
    "org.opencontainers.image.title": "Keycloak",
    "org.opencontainers.image.version": "$version",
    "org.opencontainers.image.description": "Assembled by hack/build-keycloak-image.sh from Debian $suite and keycloak-quarkus-dist $version"
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
elapsed() { echo "  $1 in $((SECONDS - $2)) s" >&2; }

base_key=$(printf '%s\n' "$suite" "${base_recipe[@]}" | key)
layer_key=$(declare -f stage_keycloak | key)
base_layer=$images/base/keycloak-$suite-$base_key.tar
kc_layer=$images/keycloak/$version/opt-keycloak-$layer_key.tar
archive=$images/$(printf '%s' "$ref" | tr '/:@' '___').tar
archive_key=$(printf '%s\n' "$base_key" "$layer_key" "$ref" "$config" | key)

if [ -f "$archive" ] && [ "$(cat "$archive.key" 2>/dev/null)" = "$archive_key" ]; then
  echo "$archive"
  exit 0
fi

mkdir -p "$images/base" "$images/keycloak/$version"
# One build at a time: two runs would make the same files.
exec 9>"$images/.lock"
flock 9
work=$(mktemp -d "$images/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ ! -f "$base_layer" ]; then
  [ "$(id -u)" = 0 ] || { echo "the root filesystem is built with mmdebstrap as root; run as root" >&2; exit 1; }
  command -v mmdebstrap >/dev/null || { echo "needs mmdebstrap (apt-get install mmdebstrap)" >&2; exit 1; }
  echo "building the Debian $suite root filesystem with a JRE (first run only: about a minute)" >&2
  t=$SECONDS
  mkdir "$work/rootfs"
  if ! mmdebstrap "${base_recipe[@]}" --format=directory "$suite" "$work/rootfs" "$mirror" \
    >"$work/mmdebstrap.log" 2>&1; then
    tail -n 30 "$work/mmdebstrap.log" >&2
    echo "mmdebstrap failed (log above)" >&2
    exit 1
  fi
  py layer "$work/rootfs" "$base_layer"
  # Layers of an older recipe are no longer used by anything this script writes.
  find "$images/base" -name "keycloak-$suite-*.tar" ! -path "$base_layer" -delete
  rm -rf "$work/rootfs"
  elapsed "root filesystem layer" "$t"
fi

if [ ! -f "$kc_layer" ]; then
  t=$SECONDS
  install=$(bash "$here/fetch-keycloak.sh" "$version" | tail -n 1)
  # The verified tarball, not the unpacked copy that tests may run from: the image gets pristine files.
  dist=$(dirname "$install")/keycloak-quarkus-dist-$version.tar.gz
  stage_keycloak "$dist" "$work/stage"
  py layer "$work/stage" "$kc_layer"
  find "$images/keycloak/$version" -name 'opt-keycloak-*.tar' ! -path "$kc_layer" -delete
  rm -rf "$work/stage"
  elapsed "/opt/keycloak layer" "$t"
fi

t=$SECONDS
printf '%s\n' "$config" > "$work/config.json"
py image "$archive" "$ref" "$work/config.json" "$base_layer" "$kc_layer" >&2
echo "$archive_key" > "$archive.key"
elapsed "$ref" "$t"
echo "$archive"
