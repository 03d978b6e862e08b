#!/usr/bin/env bash
# Builds one command from its Go module into a cache outside the repository, keyed by version (DIR names the
# version). A second run with the same DIR returns at once.
# Usage: build-go-tool.sh DIR NAME PACKAGE VERSION [LDFLAGS...]
# (PACKAGE is the command's import path, LDFLAGS more -ldflags words such as -X for the version string.)
# Writes DIR/NAME and prints its path.
set -euo pipefail
dir=$1 name=$2 package=$3 version=$4
shift 4
if [ ! -x "$dir/$name" ]; then
  echo "building $name $version (first run on this machine: a few minutes)" >&2
  mkdir -p "$dir"
  work=$(mktemp -d "${TMPDIR:-/tmp}/kcop-$name.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local GOBIN="$work" \
    nice -n 19 go install -trimpath -ldflags "-s -w $*" "$package@$version"
  mv "$work/$(basename "$package")" "$dir/$name"
fi
echo "$dir/$name"
