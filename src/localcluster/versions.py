"""Pinned component versions and where their build and the running cluster live on this machine."""

from __future__ import annotations

import os
from pathlib import Path

K8S_VERSION = "v1.34.4"
ETCD_VERSION = "v3.6.4"
KWOK_VERSION = "v0.7.0"
HELM_VERSION = "v3.22.0"
# promtool, which checks the chart's alert rules: the Go module's v0.x tag of a Prometheus 3.x release.
PROMETHEUS_VERSION = "v0.316.0"
# The real node: kubelet and kube-proxy are K8S_VERSION; CoreDNS v1.15 needs Go 1.26, which this machine has.
COREDNS_VERSION = "v1.15.0"
# The Gateway API's CRDs (standard channel), read from its Go module: the newest the Go module proxy served
# that this machine's Go accepts (v1.7 needs a newer Go).
GATEWAY_API_VERSION = "v1.6.3"


def cache_root() -> Path:
    # Shared with hack/fetch-keycloak.sh: one override moves every cached download and build.
    return Path(os.environ.get("KCOP_CACHE_DIR") or Path.home() / ".cache" / "keycloak-operator")


def build_dir() -> Path:
    """Keyed by every version, so bumping any one of them builds a fresh set instead of mixing."""
    return cache_root() / f"k8s-{K8S_VERSION}-etcd-{ETCD_VERSION}-kwok-{KWOK_VERSION}"


def bin_dir() -> Path:
    return build_dir() / "bin"


def kwok_manifest_dir() -> Path:
    """kwok's own Stage CRD and default stages, exported from its module by the build script."""
    return build_dir() / "kwok"


def node_build_dir() -> Path:
    """The real node's binaries, in a directory of their own so the control plane's cache key is unchanged."""
    return cache_root() / f"node-k8s-{K8S_VERSION}-coredns-{COREDNS_VERSION}"


def node_bin_dir() -> Path:
    return node_build_dir() / "bin"


def cluster_dir() -> Path:
    return Path(os.environ.get("KCOP_CLUSTER_DIR") or cache_root() / "cluster")
