#!/usr/bin/env bash
# Builds the helm CLI from its Go module into a cache outside the repository, keyed by version, the way the
# control plane is built. A second run with the same version returns at once. Usage: build-helm.sh DIR VERSION
# Writes DIR/helm and prints its path.
set -euo pipefail
dir=$1 version=$2
if [ ! -x "$dir/helm" ]; then
  echo "building helm $version (first run on this machine: a few minutes)" >&2
  mkdir -p "$dir"
  work=$(mktemp -d "${TMPDIR:-/tmp}/kcop-helm.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local GOBIN="$work" \
    go install -trimpath -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$version" \
    "helm.sh/helm/v3/cmd/helm@$version"
  mv "$work/helm" "$dir/helm"
fi
echo "$dir/helm"
