"""Kubeconfigs that authenticate as a ServiceAccount, for least-privilege RBAC tests."""

from __future__ import annotations

import re
from pathlib import Path

from localcluster import pki
from localcluster.cluster import Cluster
from localcluster.kubeconfig import write_token


def service_account_kubeconfig(cluster: Cluster, namespace: str, sa_name: str, duration: str = "24h") -> Path:
    """Requests a bound token (TokenRequest API) for an existing ServiceAccount and writes a kubeconfig
    that uses it, so a process acts exactly with that ServiceAccount's RBAC."""
    token = cluster.kubectl(
        "create", "token", sa_name, "-n", namespace, f"--duration={duration}"
    ).stdout.strip()
    safe = re.sub(r"[^a-z0-9.-]", "-", f"{namespace}.{sa_name}")
    path = cluster.layout.service_account_kubeconfigs / f"{safe}.kubeconfig"
    user = f"system:serviceaccount:{namespace}:{sa_name}"
    return write_token(path, cluster.server, pki.at(cluster.layout.pki).ca.cert, user, token, namespace)
