#!/usr/bin/env bash
# Builds what a real node of the local cluster runs beside Debian's containerd, runc and CNI plugins:
# kubelet and kube-proxy from the same Kubernetes module and version as the control plane, CoreDNS from its
# Go module, and the static binaries of the images assembled here (pause, netcheck; sources in hack/node/).
# Cached outside the repository, keyed by version; a second run returns at once.
# Usage: build-node.sh DIR K8S_VERSION COREDNS_VERSION. Writes DIR/bin/<binaries>. Prints DIR.
# Separate from build-control-plane.sh so that the control plane's cache key and cached build stay valid.
set -euo pipefail
dir=$1 k8s=$2 coredns=$3
out=$dir/bin
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
work=$(mktemp -d "${TMPDIR:-/tmp}/kcop-node-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

have() { [ -x "$out/$1" ]; }

if ! have kubelet || ! have kube-proxy; then
  echo "building kubelet and kube-proxy $k8s (a few minutes with a warm module cache)" >&2
  mkdir "$work/k8s" && cd "$work/k8s"
  go mod init kcop.local/k8snodebuild >/dev/null 2>&1
  # The same module setup as build-control-plane.sh: k8s.io/kubernetes pins its staging modules at v0.0.0,
  # so each is replaced with its published v0.X.Y.
  staging=v0.${k8s#v1.}
  curl -fsS "$(go env GOPROXY | cut -d, -f1)/k8s.io/kubernetes/@v/$k8s.mod" \
    | awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' | sort -u > staging.txt
  {
    echo "require k8s.io/kubernetes $k8s"
    while read -r m; do echo "replace $m => $m $staging"; done < staging.txt
  } >> go.mod
  echo 'package main' > tools.go
  go mod tidy >/dev/null 2>&1 || true
  go get "k8s.io/kubernetes@$k8s" >/dev/null
  major=${k8s#v}; major=${major%%.*}; minor=${k8s#v*.}; minor=${minor%%.*}
  ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s -X k8s.io/component-base/version.gitMajor=$major -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$k8s"
  for c in kubelet kube-proxy; do
    have "$c" && continue
    echo "  go build $c" >&2
    go build -trimpath -ldflags "$ldflags" -o "$out/$c.tmp" "k8s.io/kubernetes/cmd/$c"
    mv "$out/$c.tmp" "$out/$c"
  done
fi

if ! have coredns; then
  echo "building CoreDNS $coredns" >&2
  mkdir "$work/coredns" && cd "$work/coredns"
  go mod init kcop.local/corednsbuild >/dev/null 2>&1
  go get "github.com/coredns/coredns@$coredns" >/dev/null
  # CoreDNS's main package is its module root; its version string comes from the module itself.
  go build -trimpath -ldflags "-s -w" -o "$out/coredns.tmp" github.com/coredns/coredns
  mv "$out/coredns.tmp" "$out/coredns"
fi

# Standard library only, so they build in seconds; rebuilt whenever their source changes.
for prog in pause netcheck; do
  src=$here/node/$prog.go
  sum=$(sha256sum "$src" | cut -d' ' -f1)
  if have "$prog" && [ "$(cat "$out/$prog.sha256" 2>/dev/null)" = "$sum" ]; then continue; fi
  echo "  go build $prog" >&2
  (cd "$work" && GOFLAGS= GO111MODULE=off go build -trimpath -ldflags "-s -w" -o "$out/$prog.tmp" "$src")
  mv "$out/$prog.tmp" "$out/$prog"
  echo "$sum" > "$out/$prog.sha256"
done
echo "$dir"
