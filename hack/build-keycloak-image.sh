#!/usr/bin/env bash
# Assembles quay.io/keycloak/keycloak:VERSION as an OCI image archive, with no container engine and no registry
# (ADR 0013): a Debian root filesystem with Debian's JRE, made by mmdebstrap, and the server distribution from
# Maven Central (fetch-keycloak.sh), laid out as the official image lays it out, so the operator's Deployment
# runs it unchanged. src/localcluster/oci.py writes the layers and the archive.
#
# Usage: build-keycloak-image.sh VERSION [REF] [--optimized]
#   REF defaults to quay.io/keycloak/keycloak:VERSION, with --optimized to ...:VERSION-optimized.
#   --optimized: the same image with `kc.sh build` run in it (see optimize_keycloak below); start its pods with
#   `start --optimized`.
# The archive's path is the last line printed. Import it with: ctr -n k8s.io images import PATH
#
# Cached under ${KCOP_CACHE_DIR:-~/.cache/keycloak-operator}/images: the root filesystem layer once for every
# Keycloak version, the /opt/keycloak layer once per version, the archive once per reference. A second run
# returns at once; editing the recipe below (the mmdebstrap arguments, stage_keycloak or the config) makes the
# parts it changes again. Needs root (mmdebstrap writes files owned by many users), mmdebstrap and the project's Python.
set -euo pipefail
optimized=0
positional=()
for arg in "$@"; do
  case $arg in
    --optimized) optimized=1 ;;
    -*) echo "unknown option $arg; usage: build-keycloak-image.sh VERSION [REF] [--optimized]" >&2; exit 2 ;;
    *) positional+=("$arg") ;;
  esac
done
version=${positional[0]:?usage: build-keycloak-image.sh VERSION [REF] [--optimized]}
if [ "$optimized" = 1 ]; then
  ref=${positional[1]:-quay.io/keycloak/keycloak:$version-optimized}
else
  ref=${positional[1]:-quay.io/keycloak/keycloak:$version}
fi
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

# --optimized: what upstream's "optimized container image" guide does in a builder stage (`RUN kc.sh build`
# with the build-time options, then `COPY --from=builder /opt/keycloak/`), with the image's own root filesystem
# and JRE, entered with chroot. The options are the operator's: every KC_ variable with a literal value in the
# pod of a Deployment it renders (hack/operator_keycloak_env.py: KC_DB=postgres,
# KC_HEALTH_ENABLED, KC_METRICS_ENABLED, KC_FEATURES when set, the cache settings...). Keycloak persists the
# build-time ones and ignores the rest, so `start --optimized` with the same pod environment neither re-augments
# nor warns. /dev and /proc are the host's, mounted in a private mount namespace that ends with the build.
optimize_keycloak() {
  local root=$1
  shift
  # shellcheck disable=SC2016  # the inner shell expands its own arguments
  unshare --mount --propagation private -- sh -euc '
    root=$1; shift
    mount --rbind /dev "$root/dev"
    mount -t proc proc "$root/proc"
    exec chroot --userspec=1000:0 "$root" /usr/bin/env -i HOME=/opt/keycloak \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=en_US.UTF-8 \
      KC_RUN_IN_CONTAINER=true "$@" /opt/keycloak/bin/kc.sh build
  ' sh "$root" "$@"
}
# Then the builder's /opt/keycloak is the image's, with the owners and modes stage_keycloak gives it.
stage_optimized() {
  local root=$1 stage=$2
  rm -rf "$root/opt/keycloak/data/tmp"
  mkdir -p "$stage/opt"
  mv "$root/opt/keycloak" "$stage/opt/keycloak"
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
top_layer=$kc_layer
if [ "$optimized" = 1 ]; then
  # The operator's pod environment, rendered by its own code (needs the project's dependencies).
  env_text=$(PYTHONPATH=$here/../src "$python" "$here/operator_keycloak_env.py" "$version")
  [ -n "$env_text" ] || { echo "the operator's rendered Deployment gave no KC_ variables" >&2; exit 1; }
  mapfile -t build_env <<<"$env_text"
  opt_key=$({ printf '%s\n' "$layer_key" "${build_env[@]}"; declare -f optimize_keycloak stage_optimized; } | key)
  top_layer=$images/keycloak/$version/optimized-keycloak-$opt_key.tar
  config=${config/Assembled by/Optimised by kc.sh build; assembled by}
fi
archive=$images/$(printf '%s' "$ref" | tr '/:@' '___').tar
archive_key=$(printf '%s\n' "$base_key" "$layer_key" "$ref" "$config" | key)
if [ "$optimized" = 1 ]; then
  archive_key=$(printf '%s\n' "$archive_key" "$opt_key" | key)
fi

if [ -f "$archive" ] && [ "$(cat "$archive.key" 2>/dev/null)" = "$archive_key" ]; then
  echo "$archive"
  exit 0
fi

mkdir -p "$images/base" "$images/keycloak/$version"
# One build at a time: two runs would make the same files.
exec 9>"$images/.lock"
flock 9
work=$(mktemp -d "$images/.work.XXXXXX")
# --one-file-system: nothing is mounted under $work outside the build's own mount namespace, but if it ever
# were, this must not descend into it.
trap 'rm -rf --one-file-system "$work"' EXIT

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

if [ "$optimized" = 1 ] && [ ! -f "$top_layer" ]; then
  [ "$(id -u)" = 0 ] || { echo "--optimized unpacks the image and enters it with chroot; run as root" >&2; exit 1; }
  t=$SECONDS
  mkdir "$work/rootfs"
  tar -xf "$base_layer" -C "$work/rootfs" --numeric-owner
  tar -xf "$kc_layer" -C "$work/rootfs" --numeric-owner
  echo "kc.sh build in the image with the operator's options: ${build_env[*]}" >&2
  if ! optimize_keycloak "$work/rootfs" "${build_env[@]}" >"$work/build.log" 2>&1; then
    tail -n 30 "$work/build.log" >&2
    echo "kc.sh build failed (log above)" >&2
    exit 1
  fi
  stage_optimized "$work/rootfs" "$work/stage"
  # What Keycloak kept (its build-time options), read back from the augmentation it wrote.
  "$python" -c 'import sys, zipfile
props = zipfile.ZipFile(sys.argv[1]).read("META-INF/keycloak-persisted.properties").decode()
print("  persisted:", ", ".join(p for p in props.splitlines() if p.startswith("kc.")))' \
    "$work/stage/opt/keycloak/lib/quarkus/generated-bytecode.jar" >&2
  py layer "$work/stage" "$top_layer"
  find "$images/keycloak/$version" -name 'optimized-keycloak-*.tar' ! -path "$top_layer" -delete
  rm -rf --one-file-system "$work/rootfs" "$work/stage"
  elapsed "optimised /opt/keycloak layer" "$t"
fi

t=$SECONDS
printf '%s\n' "$config" > "$work/config.json"
py image "$archive" "$ref" "$work/config.json" "$base_layer" "$top_layer" >&2
echo "$archive_key" > "$archive.key"
elapsed "$ref" "$t"
echo "$archive"
