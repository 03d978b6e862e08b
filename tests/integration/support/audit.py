"""Reads the local API server's audit log (Secret requests only, see localcluster/components.py): the API
server's own record of who read which Secret, independent of anything the operator says."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import localcluster


@dataclass(frozen=True)
class SecretRequest:
    verb: str
    namespace: str
    name: str
    user_agent: str
    uri: str


def secret_requests(cluster: localcluster.Cluster) -> list[SecretRequest]:
    path: Path = cluster.layout.audit_log
    out = []
    for line in path.read_text().splitlines() if path.exists() else []:
        event = json.loads(line)
        ref = event.get("objectRef") or {}
        out.append(
            SecretRequest(
                verb=str(event.get("verb", "")),
                namespace=str(ref.get("namespace", "")),
                name=str(ref.get("name", "")),
                user_agent=str(event.get("userAgent", "")),
                uri=str(event.get("requestURI", "")),
            )
        )
    return out


def operator_reads(cluster: localcluster.Cluster, namespace: str) -> list[SecretRequest]:
    """GETs and LISTs of Secrets in `namespace` by anything but kubectl (the tests' own client)."""
    return [
        r
        for r in secret_requests(cluster)
        if r.namespace == namespace and r.verb in ("get", "list", "watch") and "kubectl" not in r.user_agent
    ]
