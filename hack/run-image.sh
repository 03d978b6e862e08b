#!/usr/bin/env bash
# Runs an image archive made by hack/build-*-image.sh with runc, with no container engine and no cluster:
# a quick proof that the image starts. umoci (an independent OCI reader) unpacks the archive into a runtime
# bundle whose config.json it derives from the image's own config (entrypoint, env, user, working dir); this
# script then only shares the host's network (so the ports answer on 127.0.0.1) and appends your arguments.
#
# Usage: run-image.sh ARCHIVE BUNDLE [-e NAME=VALUE]... [-- ARG...]
#   BUNDLE is a new directory (removed first if it exists). runc runs in the foreground and passes signals
#   on: stop the container with SIGTERM (or SIGINT) to this script's runc, by its pid. Needs root, umoci, runc.
set -euo pipefail
archive=${1:?usage: run-image.sh ARCHIVE BUNDLE [-e NAME=VALUE]... [-- ARG...]}
bundle=${2:?usage: run-image.sh ARCHIVE BUNDLE [-e NAME=VALUE]... [-- ARG...]}
shift 2
env=()
while [ $# -gt 0 ]; do
  case $1 in
    -e) env+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) echo "unexpected argument: $1" >&2; exit 2 ;;
  esac
done

rm -rf "$bundle"
mkdir -p "$bundle"
layout=$bundle.layout
rm -rf "$layout"
mkdir -p "$layout"
tar -xf "$archive" -C "$layout"
tag=$(jq -r '.manifests[0].annotations["org.opencontainers.image.ref.name"]' "$layout/index.json")
umoci unpack --image "$layout:$tag" "$bundle" >/dev/null
rm -rf "$layout"

# As a pod would run it: containerd's default capabilities (umoci grants only three, so an entrypoint that
# starts as root could not even chown) and the runtime's open-file limit (umoci caps it at 1024). Then the
# host's network (no network namespace), no terminal, and your env and arguments after the image's.
# (jq 1.6 reads a "-p" after --args as its own option, so the lists go in as JSON.)
caps='["CAP_CHOWN","CAP_DAC_OVERRIDE","CAP_FSETID","CAP_FOWNER","CAP_MKNOD","CAP_NET_RAW","CAP_SETGID",
  "CAP_SETUID","CAP_SETFCAP","CAP_SETPCAP","CAP_NET_BIND_SERVICE","CAP_SYS_CHROOT","CAP_KILL","CAP_AUDIT_WRITE"]'
json_list() { printf '%s\n' "$@" | jq -R . | jq -s 'map(select(. != ""))'; }
jq --argjson env "$(json_list "${env[@]+"${env[@]}"}")" --argjson args "$(json_list "$@")" --argjson caps "$caps" '
  .process.capabilities = {bounding: $caps, effective: $caps, permitted: $caps}
  | del(.process.rlimits)
  | .process.terminal = false
  | .linux.namespaces |= map(select(.type != "network"))
  | .process.env += $env
  | .process.args += $args
' < "$bundle/config.json" > "$bundle/config.json.new"
mv "$bundle/config.json.new" "$bundle/config.json"

# The host's resolver, so names resolve as they do on the host (no network namespace, no DNS of our own).
cp /etc/resolv.conf "$bundle/rootfs/etc/resolv.conf" 2>/dev/null || true
exec runc run --bundle "$bundle" "$(basename "$bundle")"
