#!/usr/bin/env bash
# Assembles the operator's own image as an OCI image archive, with no container engine and no registry
# (ADR 0013, ADR 0015): the image the root Dockerfile builds for users with an engine, made here so a chart
# test can run the operator as a pod on the real node. Three layers: a Debian root filesystem with Debian's
# python3, made by mmdebstrap; /opt/venv with the locked runtime dependencies (uv.lock, no dev group); the
# project itself, the keycloak_operator wheel built from this checkout. uv runs inside the image's root
# filesystem (chroot), so the virtualenv's interpreter and every script's shebang are the image's own paths.
# src/localcluster/oci.py writes the layers and the archive.
#
# Usage: build-operator-image.sh [REF]       REF defaults to ghcr.io/kcop-dev/keycloak-operator:<appVersion>,
#                                            the chart's default image (its Chart.yaml, values.yaml)
# The archive's path is the last line printed. Import it with: ctr -n k8s.io images import PATH
#
# Cached under ${KCOP_CACHE_DIR:-~/.cache/keycloak-operator}/images: the root filesystem layer once, the
# /opt/venv layer once per uv.lock, the project layer once per state of the source (pyproject.toml, README.md,
# src/keycloak_operator), the archive once per reference; the first two also unpacked (*.d), for the builds
# above them to mount. A second run with nothing changed returns at once; editing the source rebuilds the
# project layer alone. Needs root (mmdebstrap, chroot, mounts), mmdebstrap, unshare (util-linux), overlayfs,
# the project's Python, and uv (the Makefile's pinned copy, installed the same way if missing).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
project=$(cd "$here/.." && pwd)
chart=$project/deploy/helm/keycloak-operator/Chart.yaml
app_version=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$chart")
ref=${1:-ghcr.io/kcop-dev/keycloak-operator:${app_version:?no appVersion in Chart.yaml}}
cache=${KCOP_CACHE_DIR:-$HOME/.cache/keycloak-operator}
images=$cache/images
mirror=${KCOP_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security_mirror=${KCOP_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

# ---- The image. The root Dockerfile declares the same facts: tests/unit/harness/test_operator_image_recipe.py reads
# this block and the Dockerfile and fails, naming the difference, when one changes without the other. ------
suite=bookworm      # FROM debian:bookworm-slim
packages=python3    # apt-get install python3: Debian's python3, 3.11 in bookworm, /usr/bin/python3
uv_version=0.13.9   # pip install uv==0.13.9, the Makefile's UV_VERSION
passwd='nonroot:x:65532:65532:nonroot:/nonexistent:/usr/sbin/nologin'
group='nonroot:x:65532:'
# Byte-code compiled at build time with hashes, not source mtimes: layers carry every mtime at the epoch
# (which would make Debian's own .pyc files and uv's stale), a read-only root filesystem cannot take new
# ones, and without them every start compiles the stdlib and the dependencies again.
compile_stdlib='python3 -m compileall -q -f -j 0 --invalidation-mode checked-hash /usr/lib/python3.11'
build_env=(UV_PYTHON=/usr/bin/python3 UV_PYTHON_DOWNLOADS=never UV_PROJECT_ENVIRONMENT=/opt/venv
  UV_LINK_MODE=copy UV_COMPILE_BYTECODE=1 SOURCE_DATE_EPOCH=0)
# The two installs into /opt/venv with the image's python3: the locked dependencies, then the project as a
# wheel (non-editable: nothing points back at a source tree), from a copy of pyproject.toml, uv.lock,
# README.md and src/keycloak_operator.
sync_dependencies='uv sync --frozen --no-dev --no-install-project'
sync_project='uv sync --frozen --no-dev --no-editable'
config=$(cat <<'EOF'
{
  "Entrypoint": ["keycloak-operator"],
  "Cmd": ["run", "--all-namespaces"],
  "User": "65532:65532",
  "Env": [
    "PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "PYTHONUNBUFFERED=1",
    "PYTHONDONTWRITEBYTECODE=1"
  ],
  "Labels": {
    "org.opencontainers.image.title": "keycloak-operator",
    "org.opencontainers.image.description": "Assembled by hack/build-operator-image.sh (the Dockerfile's recipe)"
  }
}
EOF
)
# ---- end of the facts the Dockerfile shares ----------------------------------------------------------------

# The root filesystem: Debian's essential packages and python3 with what it depends on, from bookworm and its
# updates and security suites (what debian:bookworm-slim's apt sees). No apt, no pip, no docs, no man pages,
# no translations; usr-is-merged stands in for usrmerge (which would pull in perl). No ca-certificates: the
# operator checks TLS against the cluster's CA, a Secret's ca.crt, or certifi's bundle (httpx).
# mmdebstrap's shell expands "$1" in the hooks (the root being built); single quotes or \$ keep this one off it.
# shellcheck disable=SC2016,SC2054
base_recipe=(
  --variant=essential
  "--include=$packages,usr-is-merged"
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  "--customize-hook=chroot \"\$1\" $compile_stdlib >/dev/null"
  "--customize-hook=echo '$passwd' >> \"\$1/etc/passwd\""
  "--customize-hook=echo '$group' >> \"\$1/etc/group\""
  # mmdebstrap copies the build machine's name; the runtime mounts the pod's own.
  --customize-hook='rm -f "$1/etc/hostname"'
)
sources=(
  "deb $mirror $suite main"
  "deb $mirror $suite-updates main"
  "deb $security_mirror $suite-security main"
)

# The project's source as the wheel needs it, at DEST: src/keycloak_operator alone (the test harness,
# src/localcluster, is not part of the wheel or the image). The Dockerfile copies the same paths.
copy_source() {
  local dest=$1
  mkdir -p "$dest/src"
  cp "$project/pyproject.toml" "$project/uv.lock" "$project/README.md" "$project/.gitignore" "$dest/"
  (cd "$project/src" && find keycloak_operator -name __pycache__ -prune -o -name '*.pyc' -o -type f -print0 |
    xargs -0 cp --parents -t "$dest/src")
}

# ---- from here on: caching and plumbing --------------------------------------------------------------------
# The project's interpreter (the localcluster package needs its dependencies): KCOP_PYTHON, else the
# checkout's virtualenv, else python3.
python=${KCOP_PYTHON:-$project/.venv/bin/python}
[ -x "$python" ] || python=python3
py() { PYTHONPATH=$project/src "$python" -m localcluster.image_build "$@"; }
key() { sha256sum | cut -c1-16; }
elapsed() { echo "  $1 in $((SECONDS - $2)) s" >&2; }

# uv: the pinned copy the Makefile installs (KCOP_UV overrides), installed the Makefile's way if missing.
uv=${KCOP_UV:-$cache/uv-$uv_version/bin/uv}
ensure_uv() {
  if [ ! -x "$uv" ] && [ -z "${KCOP_UV:-}" ]; then
    python3 -m venv "$cache/uv-$uv_version"
    "$cache/uv-$uv_version/bin/pip" install --quiet "uv==$uv_version"
  fi
  [ "$("$uv" --version | cut -d' ' -f2)" = "$uv_version" ] || { echo "$uv is not uv $uv_version" >&2; exit 1; }
}

# Runs `uv ARGS` in the image: LOWER (overlayfs lowerdir: trees of the layers below, top first) stays as it
# is and UPPER receives everything the command writes, so UPPER holds the new layer's files. All of it in a
# mount namespace of its own, so the mounts (the overlay, /proc, /dev, uv, the host's uv cache, which keeps
# the wheels `make setup` downloaded) vanish with the command, whatever happens. A machine that reaches PyPI
# through a TLS proxy names its CA in SSL_CERT_FILE: uv inside reads a copy.
in_image() {
  local lower=$1 upper=$2 ca=()
  shift 2
  mkdir -p "$upper/tmp/uv-bin" "$upper/var/cache/uv" "$upper/etc" "$work/overlay" "$work/merged" "$uv_cache"
  cp /etc/resolv.conf "$upper/etc/resolv.conf"
  if [ -r "${SSL_CERT_FILE:-}" ]; then
    cp "$SSL_CERT_FILE" "$upper/tmp/ca.pem"
    ca=(SSL_CERT_FILE=/tmp/ca.pem)
  fi
  rm -rf "$work/overlay"/*
  # shellcheck disable=SC2016 # expanded by the inner shell
  unshare --mount --propagation private -- sh -euc '
    lower=$1 upper=$2 workdir=$3 root=$4 uv=$5 cache=$6
    shift 6
    mount -t overlay overlay -o "lowerdir=$lower,upperdir=$upper,workdir=$workdir" "$root"
    mount -t proc proc "$root/proc"
    mount --bind /dev "$root/dev"
    mount --bind "$(dirname "$uv")" "$root/tmp/uv-bin"
    mount --bind "$cache" "$root/var/cache/uv"
    exec chroot "$root" "$@"' \
    sh "$lower" "$upper" "$work/overlay" "$work/merged" "$uv" "$uv_cache" \
    /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root UV_CACHE_DIR=/var/cache/uv "${build_env[@]}" \
    "${ca[@]+"${ca[@]}"}" ${http_proxy:+"http_proxy=$http_proxy"} ${https_proxy:+"https_proxy=$https_proxy"} \
    ${no_proxy:+"no_proxy=$no_proxy"} /tmp/uv-bin/uv "$@"
}

# A layer's tree (LAYER.tar -> LAYER.d), unpacked once if a build has not left it: the builds above mount it.
tree_of() {
  local tree=${1%.tar}.d
  if [ ! -d "$tree" ]; then
    rm -rf "$tree.tmp"
    mkdir -p "$tree.tmp"
    tar -xf "$1" -C "$tree.tmp" --same-owner --same-permissions
    mv "$tree.tmp" "$tree"
  fi
  echo "$tree"
}

# Moves UPPER/opt/venv (what an install wrote there) to DEST/opt/venv, leaving out the files that are the same
# in the tree BELOW: uv byte-compiles the whole virtualenv on every sync, to the same bytes. An overlay marks a
# deleted file with a character device; a layer here cannot delete, so an install that deletes fails.
keep_changes() {
  local upper=$1 below=$2 dest=$3
  if [ -n "$(find "$upper/opt" -type c -print -quit)" ]; then
    echo "the install deleted files under /opt/venv; a layer here cannot express that" >&2
    exit 1
  fi
  mkdir -p "$dest/opt"
  mv "$upper/opt/venv" "$dest/opt/venv"
  if [ -d "$below/opt/venv" ]; then
    (cd "$dest" && find opt/venv -type f -print0 | xargs -0 -r sha256sum) |
      (cd "$below" && { sha256sum --check --quiet 2>/dev/null || true; }) | sed -n 's/: FAILED.*$//p' |
      LC_ALL=C sort >"$work/changed"
    (cd "$dest" && find opt/venv -type f | LC_ALL=C sort | LC_ALL=C comm -23 - "$work/changed" |
      tr '\n' '\0' | xargs -0 -r rm -f)
    find "$dest/opt/venv" -depth -mindepth 1 -type d -empty -delete
  fi
}

source_hash=$(cd "$project" && {
  find src/keycloak_operator -name __pycache__ -prune -o -name '*.pyc' -o -type f -print0 | sort -z |
    xargs -0 sha256sum
  sha256sum pyproject.toml uv.lock README.md .gitignore
} | key)
base_key=$(printf '%s\n' "$suite" "${base_recipe[@]}" "${sources[@]#deb * }" | key)
deps_key=$( (printf '%s\n' "$base_key" "$uv_version" "$sync_dependencies" "${build_env[@]}"
  cat "$project/uv.lock") | key)
project_key=$( (printf '%s\n' "$deps_key" "$source_hash" "$sync_project"
  declare -f copy_source keep_changes) | key)
base_layer=$images/base/operator-$suite-$base_key.tar
deps_layer=$images/operator/opt-venv-$deps_key.tar
project_layer=$images/operator/project-$project_key.tar
archive=$images/$(printf '%s' "$ref" | tr '/:@' '___').tar
archive_key=$(printf '%s\n' "$project_key" "$ref" "$config" | key)

if [ -f "$archive" ] && [ "$(cat "$archive.key" 2>/dev/null)" = "$archive_key" ]; then
  echo "$archive"
  exit 0
fi

[ "$(id -u)" = 0 ] || { echo "the image is built with mmdebstrap, mounts and chroot: run as root" >&2; exit 1; }
mkdir -p "$images/base" "$images/operator"
# One build at a time: two runs would make the same files.
exec 9>"$images/.lock"
flock 9
work=$(mktemp -d "$images/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [ ! -f "$base_layer" ]; then
  command -v mmdebstrap >/dev/null || { echo "needs mmdebstrap (apt-get install mmdebstrap)" >&2; exit 1; }
  echo "building the Debian $suite root filesystem with python3 (first run only: about a minute)" >&2
  t=$SECONDS
  mkdir "$work/rootfs"
  if ! mmdebstrap "${base_recipe[@]}" --format=directory "$suite" "$work/rootfs" "${sources[@]}" \
    >"$work/mmdebstrap.log" 2>&1; then
    tail -n 30 "$work/mmdebstrap.log" >&2
    echo "mmdebstrap failed (log above)" >&2
    exit 1
  fi
  py layer "$work/rootfs" "$base_layer"
  rm -rf "${base_layer%.tar}.d"
  mv "$work/rootfs" "${base_layer%.tar}.d"
  # Layers (and trees) of an older recipe are no longer used by anything this script writes.
  find "$images/base" -maxdepth 1 -name "operator-$suite-*" ! -name "$(basename "${base_layer%.tar}").*" \
    -exec rm -rf {} +
  elapsed "root filesystem layer" "$t"
fi

uv_cache=
if [ ! -f "$deps_layer" ] || [ ! -f "$project_layer" ]; then
  ensure_uv
  uv_cache=$("$uv" cache dir)
fi

if [ ! -f "$deps_layer" ]; then
  echo "installing the locked dependencies into /opt/venv" >&2
  t=$SECONDS
  mkdir -p "$work/upper/tmp/src"
  cp "$project/pyproject.toml" "$project/uv.lock" "$project/README.md" "$work/upper/tmp/src/"
  # shellcheck disable=SC2086 # the command is a list of words
  in_image "$(tree_of "$base_layer")" "$work/upper" --directory /tmp/src ${sync_dependencies#uv }
  keep_changes "$work/upper" /nonexistent "$work/deps"
  py layer "$work/deps" "$deps_layer"
  rm -rf "${deps_layer%.tar}.d"
  mv "$work/deps" "${deps_layer%.tar}.d"
  rm -rf "$work/upper"
  find "$images/operator" -maxdepth 1 -name 'opt-venv-*' ! -name "$(basename "${deps_layer%.tar}").*" \
    -exec rm -rf {} +
  elapsed "/opt/venv layer" "$t"
fi

if [ ! -f "$project_layer" ]; then
  t=$SECONDS
  deps_tree=$(tree_of "$deps_layer")
  copy_source "$work/upper/tmp/src"
  # shellcheck disable=SC2086
  in_image "$deps_tree:$(tree_of "$base_layer")" "$work/upper" --directory /tmp/src ${sync_project#uv }
  keep_changes "$work/upper" "$deps_tree" "$work/project"
  site=$work/project/opt/venv/lib/python3.11/site-packages
  if [ -e "$site/localcluster" ] || [ ! -d "$site/keycloak_operator" ]; then
    echo "the project layer must hold keycloak_operator and not localcluster" >&2
    exit 1
  fi
  py layer "$work/project" "$project_layer"
  rm -rf "$work/upper" "$work/project"
  find "$images/operator" -maxdepth 1 -name 'project-*.tar' ! -path "$project_layer" -delete
  elapsed "project layer" "$t"
fi

t=$SECONDS
printf '%s\n' "$config" > "$work/config.json"
py image "$archive" "$ref" "$work/config.json" "$base_layer" "$deps_layer" "$project_layer" >&2
echo "$archive_key" > "$archive.key"
elapsed "$ref" "$t"
echo "$archive"
