"""Resource specs -> the Keycloak representations the operator writes, and drift checks against what is read.

The content returned here is what gets hashed (core/replication/marker.py): list fields are sorted and
de-duplicated, because Keycloak stores them as sets, so a reordered list in a resource is no change.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keycloak_operator.core import names
from keycloak_operator.models.realm import KeycloakClientSpec, KeycloakRealmSpec, RealmRole

# Fields of a realm representation that are part of the realm's content but written by other calls.
REALM_SUBRESOURCES = ("roles",)


def _as_set(values: list[str]) -> list[str]:
    return sorted(set(values))


def realm_name(spec: KeycloakRealmSpec, resource_name: str) -> str:
    return spec.realm_name or resource_name


def realm_content(spec: KeycloakRealmSpec, resource_name: str) -> dict[str, Any]:
    """The realm as the resource declares it; `roles` is applied through the roles endpoints."""
    return {
        "realm": realm_name(spec, resource_name),
        "enabled": spec.enabled,
        "displayName": spec.display_name,
        "registrationAllowed": spec.login.registration_allowed,
        "resetPasswordAllowed": spec.login.reset_password_allowed,
        "rememberMe": spec.login.remember_me,
        "loginWithEmailAllowed": spec.login.login_with_email_allowed,
        "verifyEmail": spec.login.verify_email,
        "accessTokenLifespan": spec.tokens.access_token_lifespan_seconds,
        "ssoSessionIdleTimeout": spec.tokens.sso_session_idle_timeout_seconds,
        "ssoSessionMaxLifespan": spec.tokens.sso_session_max_lifespan_seconds,
        "roles": {"realm": [_role(r) for r in sorted(spec.roles, key=lambda r: r.name)]},
    }


def _role(role: RealmRole) -> dict[str, Any]:
    return {"name": role.name, "description": role.description}


def realm_write(content: Mapping[str, Any]) -> dict[str, Any]:
    """The body of a realm PUT: roles travel separately (Keycloak ignores them on update)."""
    return {k: v for k, v in content.items() if k not in REALM_SUBRESOURCES}


def declared_roles(content: Mapping[str, Any]) -> dict[str, str]:
    """Role name -> description, from a realm content."""
    return {r["name"]: r.get("description", "") for r in content.get("roles", {}).get("realm", [])}


def client_content(spec: KeycloakClientSpec) -> dict[str, Any]:
    return {
        "clientId": spec.client_id,
        "name": spec.name,
        "enabled": True,
        "protocol": "openid-connect",
        "publicClient": spec.public_client,
        "redirectUris": _as_set(spec.redirect_uris),
        "webOrigins": _as_set(spec.web_origins),
        "standardFlowEnabled": spec.standard_flow_enabled,
        "directAccessGrantsEnabled": spec.direct_access_grants_enabled,
        # Keycloak refuses service accounts on a public client; the flag is meaningless there.
        "serviceAccountsEnabled": spec.service_accounts_enabled and not spec.public_client,
    }


def drifted_fields(content: Mapping[str, Any], observed: Mapping[str, Any]) -> list[str]:
    """Fields of `content` whose observed value differs (lists compared as sets); marker and sub-resources
    are checked elsewhere. Sorted, for a stable event message."""
    changed = []
    for field, want in content.items():
        if field in ("attributes", *REALM_SUBRESOURCES):
            continue
        have = observed.get(field)
        if isinstance(want, list):
            if not isinstance(have, list) or sorted(set(map(str, have))) != sorted(set(map(str, want))):
                changed.append(field)
        elif have != want and not (want == "" and have is None):  # Keycloak omits empty strings
            changed.append(field)
    return sorted(changed)


def role_owner(realm_key_text: str) -> dict[str, list[str]]:
    """Attributes marking a realm role as declared by the realm resource `namespace/name`."""
    return {names.ROLE_OWNER_ATTRIBUTE: [realm_key_text]}
