#!/usr/bin/env bash
# Builds promtool (Prometheus' rule checker) from its Go module into a cache outside the repository, keyed by
# version, the way helm and the control plane are built. A second run with the same version returns at once.
# Usage: build-promtool.sh DIR VERSION. Writes DIR/promtool and prints its path.
set -euo pipefail
dir=$1 version=$2
if [ ! -x "$dir/promtool" ]; then
  echo "building promtool $version (first run on this machine: several minutes)" >&2
  mkdir -p "$dir"
  work=$(mktemp -d "${TMPDIR:-/tmp}/kcop-promtool.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local GOBIN="$work" \
    go install -trimpath -ldflags "-s -w -X github.com/prometheus/common/version.Version=${version#v}" \
    "github.com/prometheus/prometheus/cmd/promtool@$version"
  mv "$work/promtool" "$dir/promtool"
fi
echo "$dir/promtool"
