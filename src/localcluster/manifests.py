"""Keycloak manifests for tests: an external database tier with its credentials Secret by default."""

from __future__ import annotations

from typing import Any

from keycloak_operator.kernel import names

DB_SECRET = "db-credentials"


def db_secret(namespace: str, name: str = DB_SECRET) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "stringData": {"username": "keycloak", "password": "not-a-real-password"},
    }


def keycloak(
    name: str,
    namespace: str,
    *,
    image: str = "quay.io/keycloak/keycloak:26.0.0",
    replicas: int = 2,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "image": image,
        "replicas": replicas,
        "database": {"external": {"host": "db.example.internal", "credentialsSecret": {"name": DB_SECRET}}},
    }
    body.update(spec)
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.KEYCLOAK_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }
