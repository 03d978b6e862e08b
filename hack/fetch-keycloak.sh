#!/usr/bin/env bash
# Fetches the Keycloak server distribution (keycloak-quarkus-dist) from Maven Central into a cache outside the
# repository, verifies the .sha1 Maven publishes and unpacks it once. A second run returns at once.
# Usage: fetch-keycloak.sh VERSION [CACHE_DIR]
#   CACHE_DIR defaults to ${KCOP_CACHE_DIR:-~/.cache/keycloak-operator}/keycloak.
# Needs only curl, tar and sha1sum. The install dir (CACHE_DIR/keycloak-VERSION) is the last line printed.
set -euo pipefail
version=${1:?usage: fetch-keycloak.sh VERSION [CACHE_DIR]}
cache=${2:-${KCOP_CACHE_DIR:-$HOME/.cache/keycloak-operator}/keycloak}
repo=${KCOP_MAVEN_REPO:-https://repo1.maven.org/maven2}
name=keycloak-quarkus-dist-$version.tar.gz
url=$repo/org/keycloak/keycloak-quarkus-dist/$version/$name
install=$cache/keycloak-$version
mkdir -p "$cache"

# The rename below is the commit point: if kc.sh is there, the unpack finished.
if [ -x "$install/bin/kc.sh" ]; then
  echo "$install"
  exit 0
fi

# Keep the published checksum next to the tarball so a later unpack can verify offline.
if [ -f "$cache/$name.sha1" ]; then
  expected=$(awk '{print $1}' "$cache/$name.sha1")
elif ! expected=$(curl -fsSL --retry 3 "$url.sha1" | awk '{print $1}'); then
  echo "cannot fetch $url.sha1: is $version a published keycloak-quarkus-dist version?" >&2
  exit 1
fi
[[ $expected =~ ^[0-9a-f]{40}$ ]] || { echo "bad .sha1 from $url.sha1: '$expected'" >&2; exit 1; }

part= tmp=
trap 'rm -rf "$part" "$tmp"' EXIT
verify() { [ -f "$cache/$name" ] && [ "$(sha1sum "$cache/$name" | awk '{print $1}')" = "$expected" ]; }

if ! verify; then
  echo "downloading $url" >&2
  part=$(mktemp "$cache/$name.XXXXXX.part")
  curl -fsSL --retry 3 -o "$part" "$url"
  actual=$(sha1sum "$part" | awk '{print $1}')
  if [ "$actual" != "$expected" ]; then
    echo "sha1 mismatch for $name: got $actual, Maven Central says $expected" >&2
    exit 1
  fi
  chmod 644 "$part"
  mv -f "$part" "$cache/$name"
fi
echo "$expected" > "$cache/$name.sha1"

# Unpack into a temp dir on the same filesystem, then rename: a crash never leaves a half-unpacked install.
tmp=$(mktemp -d "$cache/.unpack-$version.XXXXXX")
tar -xzf "$cache/$name" -C "$tmp" --no-same-owner
top=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d | head -n 1)
[ -x "$top/bin/kc.sh" ] || { echo "$name has no bin/kc.sh at its top level" >&2; exit 1; }
# Another run may have won the race; keep its copy.
if ! mv -T "$top" "$install" 2>/dev/null && [ ! -x "$install/bin/kc.sh" ]; then
  echo "cannot move the unpacked distribution to $install (remove it and retry)" >&2
  exit 1
fi
echo "$install"
