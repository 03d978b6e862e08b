"""A real Keycloak on the real node, for the demo, the tests and the benchmark: the PostgreSQL it runs on,
the Keycloak resource that puts its pods there, and the few HTTP calls a client makes (a token, a user).

Everything here talks to the cluster's own addresses (ClusterIPs route from this machine through
kube-proxy), never through a proxy.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from keycloak_operator.core import names
from localcluster.node_config import LABEL_KEY, LABEL_VALUE

ON_REAL_NODE: dict[str, Any] = {
    "nodeSelector": {LABEL_KEY: LABEL_VALUE},
    "tolerations": [{"key": LABEL_KEY, "operator": "Exists", "effect": "NoSchedule"}],
}
DB_USER, DB_PASSWORD, DB_NAME = "keycloak", "a-real-password-for-a-real-db", "keycloak"
DB_SECRET = "postgres-credentials"
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def postgres(namespace: str, image: str) -> list[dict[str, Any]]:
    """A one-pod PostgreSQL on the real node (data in an emptyDir), its Service and its credentials."""
    labels = {"app": "postgres"}
    env = {"POSTGRES_USER": DB_USER, "POSTGRES_PASSWORD": DB_PASSWORD, "POSTGRES_DB": DB_NAME}
    container = {
        "name": "postgres",
        "image": image,
        "imagePullPolicy": "Never",
        "env": [{"name": k, "value": v} for k, v in env.items()] + [{"name": "PGDATA", "value": "/data/pg"}],
        "ports": [{"containerPort": 5432}],
        "readinessProbe": {"exec": {"command": ["pg_isready", "-h", "127.0.0.1"]}, "periodSeconds": 2},
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    }
    pod_spec = {"containers": [container], "volumes": [{"name": "data", "emptyDir": {}}], **ON_REAL_NODE}
    return [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "postgres", "namespace": namespace},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": pod_spec},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "postgres", "namespace": namespace},
            "spec": {"selector": labels, "ports": [{"port": 5432, "targetPort": 5432}]},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": DB_SECRET, "namespace": namespace},
            "stringData": {"username": DB_USER, "password": DB_PASSWORD},
        },
    ]


def keycloak(name: str, namespace: str, image: str, replicas: int = 2, **extra: Any) -> dict[str, Any]:
    """A Keycloak resource whose pods run on the real node, on the PostgreSQL above."""
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.KEYCLOAK_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "image": image,
            "replicas": replicas,
            "database": {
                "external": {
                    "host": f"postgres.{namespace}.svc.cluster.local",
                    "database": DB_NAME,
                    "credentialsSecret": {"name": DB_SECRET},
                }
            },
            "scheduling": ON_REAL_NODE,
            **extra,
        },
    }


def token(url: str, form: dict[str, str]) -> dict[str, Any] | None:
    """The token endpoint's answer, or None when it refused (or did not answer)."""
    request = urllib.request.Request(url, data=urllib.parse.urlencode(form).encode())
    try:
        with _OPENER.open(request, timeout=10) as r:
            return dict(json.loads(r.read()))
    except (urllib.error.URLError, OSError, ValueError):
        return None


def create_user(base_url: str, admin: dict[str, str], realm: str, username: str, password: str) -> None:
    """A user with a password in `realm`, through the admin API as the bootstrap admin (`admin`: the
    operator's admin Secret, decoded: username and password)."""
    issued = token(
        f"{base_url}/realms/master/protocol/openid-connect/token",
        {"grant_type": "password", "client_id": "admin-cli", **admin},
    )
    if issued is None:
        raise RuntimeError(f"the bootstrap admin could not sign in at {base_url}")
    user = {
        "username": username,
        "enabled": True,
        "email": f"{username}@example.test",
        "emailVerified": True,
        "firstName": "Real",
        "lastName": "User",
        "credentials": [{"type": "password", "value": password, "temporary": False}],
    }
    request = urllib.request.Request(
        f"{base_url}/admin/realms/{realm}/users",
        data=json.dumps(user).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {issued['access_token']}", "Content-Type": "application/json"},
    )
    with _OPENER.open(request, timeout=20) as r:
        if r.status != 201:
            raise RuntimeError(f"creating user {username} in {realm}: HTTP {r.status}")
