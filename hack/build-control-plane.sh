#!/usr/bin/env bash
# Builds the local control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok)
# from Go modules into a cache outside the repository, keyed by version. A second run with the same versions
# returns at once. Usage: build-control-plane.sh DIR K8S_VERSION ETCD_VERSION KWOK_VERSION
# Writes DIR/bin/<binaries> and DIR/kwok/*.yaml (kwok's Stage CRD and its default stages, taken from the
# kwok module itself, because kwok run with --enable-crds=Stage does not install or seed them). Prints DIR.
set -euo pipefail
dir=$1 k8s=$2 etcd=$3 kwok=$4
out=$dir/bin manifests=$dir/kwok
mkdir -p "$out"
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
work=$(mktemp -d "${TMPDIR:-/tmp}/kcop-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

have() { [ -x "$out/$1" ]; }

if ! have kube-apiserver || ! have kube-controller-manager || ! have kube-scheduler || ! have kubectl; then
  echo "building Kubernetes $k8s (first run on this machine: 10-20 minutes)" >&2
  mkdir "$work/k8s" && cd "$work/k8s"
  go mod init kcop.local/k8sbuild >/dev/null 2>&1
  # k8s.io/kubernetes pins its staging modules at v0.0.0 and replaces them with local folders; replace each
  # with its published v0.X.Y instead, generated from that version's own go.mod.
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
  for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    have "$c" && continue
    echo "  go build $c" >&2
    go build -trimpath -ldflags "$ldflags" -o "$out/$c.tmp" "k8s.io/kubernetes/cmd/$c"
    mv "$out/$c.tmp" "$out/$c"
  done
fi

if ! have etcd; then
  echo "building etcd $etcd" >&2
  mkdir "$work/etcd" && cd "$work/etcd"
  go mod init kcop.local/etcdbuild >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@$etcd" >/dev/null
  go build -trimpath -ldflags "-s -w" -o "$out/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$out/etcd.tmp" "$out/etcd"
fi

if ! have kwok; then
  echo "building kwok $kwok" >&2
  GOBIN="$work/bin" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$kwok"
  mv "$work/bin/kwok" "$out/kwok"
fi

stage_files=(
  kustomize/crd/bases/kwok.x-k8s.io_stages.yaml
  kustomize/stage/node/fast/node-initialize.yaml
  kustomize/stage/node/heartbeat-with-lease/node-heartbeat-with-lease.yaml
  kustomize/stage/pod/fast/pod-ready.yaml
  kustomize/stage/pod/fast/pod-complete.yaml
  kustomize/stage/pod/fast/pod-delete.yaml
)
if [ ! -f "$manifests/.complete" ]; then
  # The module is already in the module cache after the build above (or is fetched again if it was cleaned).
  src=$(cd "$work" && go mod download -json "sigs.k8s.io/kwok@$kwok" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src" ] || { echo "cannot find the sigs.k8s.io/kwok@$kwok module source" >&2; exit 1; }
  mkdir -p "$manifests"
  for f in "${stage_files[@]}"; do install -m 0644 "$src/$f" "$manifests/$(basename "$f")"; done
  touch "$manifests/.complete"
fi
echo "$dir"
