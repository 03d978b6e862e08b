"""A real Keycloak on the real node, for the demo, the tests and the benchmark: the PostgreSQL it runs on,
the Keycloak resource that puts its pods there, and the few HTTP calls a client makes (a token, a user).

Everything here talks to the cluster's own addresses (ClusterIPs route from this machine through
kube-proxy), never through a proxy.
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from keycloak_operator.kernel import names
from localcluster import pki
from localcluster.node_config import LABEL_KEY, LABEL_VALUE
from localcluster.signins import Tls

ON_REAL_NODE: dict[str, Any] = {
    "nodeSelector": {LABEL_KEY: LABEL_VALUE},
    "tolerations": [{"key": LABEL_KEY, "operator": "Exists", "effect": "NoSchedule"}],
}
DB_USER, DB_PASSWORD, DB_NAME = "keycloak", "a-real-password-for-a-real-db", "keycloak"
DB_SECRET = "postgres-credentials"


# TLS for the PostgreSQL below: the server's certificate and key, and the CA that signed it, which clients
# are given as `POSTGRES_CA_SECRET` (key ca.crt).
POSTGRES_CA_SECRET = "postgres-ca"
_SERVER_TLS_SECRET = "postgres-tls"
# Only the local socket (the tests' psql through kubectl exec) and TLS over TCP: a client that does not speak
# TLS is refused ("no encryption"), so a Keycloak or copy Job that connects at all used TLS.
_HBA_TLS_ONLY = "local all all trust\nhostssl all all all scram-sha-256\n"


@dataclass(frozen=True)
class ServerTls:
    ca_pem: str
    cert_pem: str
    key_pem: str


def postgres_host(namespace: str) -> str:
    return f"postgres.{namespace}.svc.cluster.local"


def postgres_tls(namespace: str, directory: Path) -> ServerTls:
    """A CA of its own and a certificate it signed for the PostgreSQL's Service name."""
    ca, leaf = pki.serving(directory, (postgres_host(namespace),))
    return ServerTls(ca.cert.read_text(), leaf.cert.read_text(), leaf.key.read_text())


def _with_tls(namespace: str, tls: ServerTls, pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    """`pod_spec` serving TLS only; the Secrets and ConfigMap it reads. PostgreSQL refuses a key that its own
    user cannot read alone, so an init container copies it out of the Secret, owned by uid 999, mode 0600."""
    (container,) = pod_spec["containers"]
    container["args"] = [
        *("-c", "ssl=on", "-c", "ssl_cert_file=/tls/server.crt", "-c", "ssl_key_file=/tls/server.key"),
        *("-c", "hba_file=/hba/pg_hba.conf"),
    ]
    container["volumeMounts"] += [{"name": "tls", "mountPath": "/tls"}, {"name": "hba", "mountPath": "/hba"}]
    copy = "install -o 999 -g 999 -m 0600 /in/server.key /in/server.crt /tls/"
    pod_spec["initContainers"] = [
        {
            "name": "tls",
            "image": container["image"],
            "imagePullPolicy": "Never",
            "command": ["sh", "-c", copy],
            "volumeMounts": [{"name": "tls-in", "mountPath": "/in"}, {"name": "tls", "mountPath": "/tls"}],
        }
    ]
    pod_spec["volumes"] += [
        {"name": "tls-in", "secret": {"secretName": _SERVER_TLS_SECRET}},
        {"name": "tls", "emptyDir": {}},
        {"name": "hba", "configMap": {"name": "postgres-hba"}},
    ]

    def secret(name: str, data: dict[str, str]) -> dict[str, Any]:
        meta = {"name": name, "namespace": namespace}
        return {"apiVersion": "v1", "kind": "Secret", "metadata": meta, "stringData": data}

    return [
        secret(_SERVER_TLS_SECRET, {"server.crt": tls.cert_pem, "server.key": tls.key_pem}),
        secret(POSTGRES_CA_SECRET, {"ca.crt": tls.ca_pem}),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "postgres-hba", "namespace": namespace},
            "data": {"pg_hba.conf": _HBA_TLS_ONLY},
        },
    ]


def postgres(namespace: str, image: str, tls: ServerTls | None = None) -> list[dict[str, Any]]:
    """A one-pod PostgreSQL on the real node (data in an emptyDir), its Service and its credentials; with
    `tls`, serving TLS only."""
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
    extra = _with_tls(namespace, tls, pod_spec) if tls is not None else []
    return [
        *extra,
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


def keycloak(
    name: str,
    namespace: str,
    image: str,
    replicas: int = 2,
    database_tls: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """A Keycloak resource whose pods run on the real node, on the PostgreSQL above (`database_tls`: the
    external tier's `tls`)."""
    external: dict[str, Any] = {
        "host": postgres_host(namespace),
        "database": DB_NAME,
        "credentialsSecret": {"name": DB_SECRET},
    }
    if database_tls is not None:
        external["tls"] = database_tls
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.KEYCLOAK_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "image": image,
            "replicas": replicas,
            "database": {"external": external},
            "scheduling": ON_REAL_NODE,
            **extra,
        },
    }


def token(url: str, form: dict[str, str], tls: Tls | None = None) -> dict[str, Any] | None:
    """The token endpoint's answer, or None when it refused (or did not answer). An https URL needs `tls`."""
    status, body = post(url, urllib.parse.urlencode(form).encode(), {}, tls)
    try:
        return dict(json.loads(body)) if status == 200 else None
    except ValueError:
        return None


def post(
    url: str, body: bytes | None, headers: dict[str, str], tls: Tls | None = None, method: str = "POST"
) -> tuple[int, bytes]:
    """(status, body) of one request to a cluster address, over HTTPS checked by `tls` for an https URL; 0
    when nothing answered."""
    parts = urllib.parse.urlsplit(url)
    host, port = parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)
    if parts.scheme == "https":
        if tls is None:
            raise ValueError("an https URL needs tls")
        conn: http.client.HTTPConnection = _Named(host, port, tls, timeout=20)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=20)
    if body is not None:
        headers = {"Content-Type": "application/x-www-form-urlencoded", **headers}
    try:
        conn.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), body, headers)
        response = conn.getresponse()
        return response.status, response.read()
    except (OSError, http.client.HTTPException):
        return 0, b""
    finally:
        conn.close()


class _Named(http.client.HTTPSConnection):
    """HTTPS to an address whose certificate names something else (a ClusterIP; the Service's name)."""

    def __init__(self, host: str, port: int, tls: Tls, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout, context=tls.context)
        self._tls = tls

    def connect(self) -> None:
        http.client.HTTPConnection.connect(self)
        self.sock = self._tls.context.wrap_socket(self.sock, server_hostname=self._tls.server_name)


def admin(
    base_url: str, creds: dict[str, str], method: str, path: str, body: Any = None, tls: Tls | None = None
) -> tuple[int, Any]:
    """One admin API call as the bootstrap admin (`creds`: the operator's admin Secret, decoded: username
    and password): (status, the JSON answer or None)."""
    issued = token(
        f"{base_url}/realms/master/protocol/openid-connect/token",
        {"grant_type": "password", "client_id": "admin-cli", **creds},
        tls,
    )
    if issued is None:
        raise RuntimeError(f"the bootstrap admin could not sign in at {base_url}")
    headers = {"Authorization": f"Bearer {issued['access_token']}", "Content-Type": "application/json"}
    data = None if body is None else json.dumps(body).encode()
    status, answer = post(f"{base_url}{path}", data, headers, tls, method=method)
    try:
        return status, json.loads(answer) if answer else None
    except ValueError:
        return status, None


def create_user(
    base_url: str, creds: dict[str, str], realm: str, username: str, password: str, tls: Tls | None = None
) -> None:
    """A user with a password in `realm`, through the admin API as the bootstrap admin."""
    user = {
        "username": username,
        "enabled": True,
        "email": f"{username}@example.test",
        "emailVerified": True,
        "firstName": "Real",
        "lastName": "User",
        "credentials": [{"type": "password", "value": password, "temporary": False}],
    }
    status, _ = admin(base_url, creds, "POST", f"/admin/realms/{realm}/users", user, tls)
    if status != 201:
        raise RuntimeError(f"creating user {username} in {realm}: HTTP {status}")
