"""Writes kubeconfig files for the local cluster: client-certificate ones and bearer-token ones."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from localcluster.pki import CertPair

CLUSTER_NAME = "kcop-local"


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def _write(path: Path, server: str, ca: Path, user_name: str, user: dict[str, Any], namespace: str) -> Path:
    # Certificates are embedded so a copied kubeconfig keeps working while the cluster runs.
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": CLUSTER_NAME, "cluster": {"server": server, "certificate-authority-data": _b64(ca)}}
        ],
        "users": [{"name": user_name, "user": user}],
        "contexts": [
            {
                "name": user_name,
                "context": {"cluster": CLUSTER_NAME, "user": user_name, "namespace": namespace},
            }
        ],
        "current-context": user_name,
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path.resolve()


def write_cert(path: Path, server: str, ca: Path, user_name: str, client: CertPair) -> Path:
    user = {"client-certificate-data": _b64(client.cert), "client-key-data": _b64(client.key)}
    return _write(path, server, ca, user_name, user, "default")


def write_token(path: Path, server: str, ca: Path, user_name: str, token: str, namespace: str) -> Path:
    return _write(path, server, ca, user_name, {"token": token}, namespace)
