#!/usr/bin/env bash
# Makes the release artefacts (`make release`), what a user installs on a cluster of their own:
#   keycloak-operator-image-VERSION.oci.tar   the operator's image, an OCI image layout tar (with Docker's
#                                             manifest.json): `ctr images import`, `skopeo copy oci-archive:`,
#                                             `crane push`, `docker load`; named IMAGE inside
#   keycloak-operator-VERSION.tgz             the Helm chart, with values.schema.json and kubeVersion
#   keycloak-operator-crds-VERSION.yaml       every CRD, one YAML (the chart installs the same from crds/)
#   keycloak_operator-VERSION-py3-none-any.whl  the `keycloak-operator` command (`uv tool install`, `pipx install`)
#   SHA256SUMS
# Usage: release.sh [OUT]     OUT defaults to dist/ (git-ignored). IMAGE overrides the image's name, by
# default the chart's, ghcr.io/kcop-dev/keycloak-operator:VERSION. The last lines printed are
# `KIND PATH` for each artefact. Needs what build-operator-image.sh needs (root, mmdebstrap) and Go for helm
# on its first run (src/localcluster/helm.py).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
project=$(cd "$here/.." && pwd)
chart=$project/deploy/helm/keycloak-operator
version=$(sed -n 's/^version: *"\{0,1\}\([^"]*\)"\{0,1\} *$/\1/p' "$chart/Chart.yaml")
out=${1:-$project/dist}
image=${IMAGE:-ghcr.io/kcop-dev/keycloak-operator:${version:?no version in Chart.yaml}}
python=${KCOP_PYTHON:-$project/.venv/bin/python}
[ -x "$python" ] || python=python3
# The Makefile's pinned uv (`make setup` installs it).
uv_version=$(sed -n 's/^UV_VERSION := *//p' "$project/Makefile")
uv=${KCOP_UV:-${KCOP_CACHE_DIR:-$HOME/.cache/keycloak-operator}/uv-$uv_version/bin/uv}
helm=${HELM:-$(PYTHONPATH=$project/src "$python" -c 'from localcluster.helm import ensure_helm; print(ensure_helm())')}

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/keycloak-operator-* "$out"/keycloak_operator-* "$out/SHA256SUMS"

# The image: built (or taken from the cache) by the Dockerfile's recipe without an engine (ADR 0015); a hard
# link when the cache is on the same file system (the cache replaces archives, never rewrites them).
archive=$(KCOP_PYTHON=$python "$here/build-operator-image.sh" "$image" | tail -n 1)
image_out=$out/keycloak-operator-image-$version.oci.tar
ln -f "$archive" "$image_out" 2>/dev/null || cp "$archive" "$image_out"

"$helm" lint --strict "$chart" >/dev/null
"$helm" package "$chart" --destination "$out" >/dev/null
cp "$project/deploy/crds/crds.yaml" "$out/keycloak-operator-crds-$version.yaml"
# The wheel holds keycloak_operator alone (pyproject.toml's wheel target), built from this checkout.
if ! built=$("$uv" build --quiet --wheel --out-dir "$out" "$project" 2>&1); then
  printf '%s\n' "$built" >&2
  echo "the wheel could not be built" >&2
  exit 1
fi

cd "$out"
wheel=$(ls keycloak_operator-"$version"-*.whl)
[ -f "keycloak-operator-$version.tgz" ] || { echo "helm package made no keycloak-operator-$version.tgz" >&2; exit 1; }
sha256sum "$(basename "$image_out")" "keycloak-operator-$version.tgz" "keycloak-operator-crds-$version.yaml" \
  "$wheel" >SHA256SUMS
echo "image $image_out"
echo "chart $out/keycloak-operator-$version.tgz"
echo "crds $out/keycloak-operator-crds-$version.yaml"
echo "wheel $out/$wheel"
echo "sums $out/SHA256SUMS"
