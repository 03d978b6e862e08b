"""Helpers for the authentication flow tests (test_realm_settings.py): a KeycloakAuthenticationFlow, a flow's
executions as Keycloak lists them, and a password grant through a realm's direct-grant flow."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from keycloak_operator.kernel import names
from localcluster.keycloak import KeycloakProcess
from localcluster.keycloak_api import KeycloakApi

FLOW_RES = f"{names.AUTHENTICATION_FLOW_PLURAL}.{names.GROUP}"


def flow(namespace: str, name: str, realm_ref: dict[str, str], alias: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": names.API_VERSION,
        "kind": names.AUTHENTICATION_FLOW_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"realm": realm_ref, "alias": alias, **spec},
    }


def direct_grant(sub: str) -> list[dict[str, Any]]:
    """Keycloak's own direct-grant steps: username, password, then a conditional OTP subflow (its condition
    given a config of no effect, so that rebuilds rename a config alias too; named after the subflow, since
    config aliases are unique in a realm)."""
    return [
        {"authenticator": "direct-grant-validate-username", "requirement": "REQUIRED"},
        {"authenticator": "direct-grant-validate-password", "requirement": "REQUIRED"},
        {
            "requirement": "CONDITIONAL",
            "subflow": {
                "alias": sub,
                "executions": [
                    {
                        "authenticator": "conditional-user-configured",
                        "requirement": "REQUIRED",
                        "config": {"alias": f"{sub} condition", "config": {"note": "declared"}},
                    },
                    {"authenticator": "direct-grant-validate-otp", "requirement": "REQUIRED"},
                ],
            },
        },
    ]


def executions(api: KeycloakApi, rn: str, alias: str) -> list[tuple[int, str, str]] | None:
    """(level, provider or subflow alias, requirement) of each execution, in order; None without the flow."""
    found = api.call("GET", f"/{rn}/authentication/flows/{urllib.parse.quote(alias)}/executions")
    if found is None:
        return None
    return [(e["level"], e.get("providerId") or e["displayName"], e["requirement"]) for e in found]


def raw_executions(api: KeycloakApi, rn: str, alias: str) -> list[dict[str, Any]]:
    return api.call("GET", f"/{rn}/authentication/flows/{urllib.parse.quote(alias)}/executions") or []


def flow_by_alias(api: KeycloakApi, rn: str, alias: str) -> dict[str, Any] | None:
    return next(
        (f for f in api.call("GET", f"/{rn}/authentication/flows") or [] if f["alias"] == alias), None
    )


def add_user(api: KeycloakApi, rn: str, username: str, password: str) -> None:
    user = {
        "username": username,
        "enabled": True,
        "email": f"{username}@example.com",
        "emailVerified": True,
        "firstName": "A",
        "lastName": "User",
        "credentials": [{"type": "password", "value": password, "temporary": False}],
    }
    api.call("POST", f"/{rn}/users", user)


def password_grant(kc: KeycloakProcess, rn: str, client_id: str, username: str, password: str) -> int:
    """The HTTP status of a password grant (200: a token was issued)."""
    form = {"grant_type": "password", "client_id": client_id, "username": username, "password": password}
    url = f"{kc.url}/realms/{rn}/protocol/openid-connect/token"
    try:
        with urllib.request.urlopen(url, urllib.parse.urlencode(form).encode(), timeout=30) as r:
            return 200 if "access_token" in json.load(r) else 0
    except urllib.error.HTTPError as e:
        return e.code
