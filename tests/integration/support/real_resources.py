"""The realm and confidential client that tests on the real node replicate into a real Keycloak `sso`, through
the operator's own KeycloakRealm and KeycloakClient resources."""

from __future__ import annotations

import base64
from typing import Any

from keycloak_operator.core import names
from tests.integration.support.kubectl import Kubectl, wait_for


def phase(kubectl: Kubectl, resource: str, namespace: str, name: str) -> str:
    return str(((kubectl.get(resource, name, namespace) or {}).get("status") or {}).get("phase", ""))


def replicate(kubectl: Kubectl, namespace: str, **client_spec: Any) -> str:
    """A KeycloakRealm `team` and a confidential KeycloakClient `backend`, Ready; returns its secret."""
    realm = {
        "apiVersion": names.API_VERSION,
        "kind": names.REALM_KIND,
        "metadata": {"name": "team", "namespace": namespace},
        "spec": {"server": {"keycloak": {"name": "sso"}}, "realmName": "team"},
    }
    client = {
        "apiVersion": names.API_VERSION,
        "kind": names.CLIENT_KIND,
        "metadata": {"name": "backend", "namespace": namespace},
        "spec": {
            "realm": {"name": "team"},
            "clientId": "backend",
            "standardFlowEnabled": False,
            "serviceAccountsEnabled": True,
            **client_spec,
        },
    }
    kubectl.apply(realm)
    kubectl.apply(client)
    realms, clients = f"{names.REALM_PLURAL}.{names.GROUP}", f"{names.CLIENT_PLURAL}.{names.GROUP}"
    wait_for("realm replicated", lambda: phase(kubectl, realms, namespace, "team") == "Ready", timeout=120)
    wait_for(
        "client replicated", lambda: phase(kubectl, clients, namespace, "backend") == "Ready", timeout=120
    )
    secret = kubectl.get("secret", names.client_secret("backend"), namespace)
    assert secret is not None
    return base64.b64decode(secret["data"]["clientSecret"]).decode()
