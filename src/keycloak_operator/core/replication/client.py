"""The client kind: a KeycloakClient's representation in Keycloak, its scope (every client of one realm) and
the bodies of its writes. The Secret a confidential client's secret goes to: client_secret.py.

A client is identified in Keycloak by a generated id and named by its clientId, unique within its realm.
It depends on its realm (planned once the realm is settled) and is written with the login that acts for it.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Final

from keycloak_operator.core.replication import client_parts, saml_client
from keycloak_operator.core.replication.drift import as_set
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.marker import MARKER_ATTRIBUTES, marked
from keycloak_operator.core.replication.plan import Create, Update
from keycloak_operator.core.replication.sync import (
    NO_REVOCATION,
    Resource,
    Revocation,
    ScopePlan,
    plan_scope,
)
from keycloak_operator.kernel import names
from keycloak_operator.models.client import KeycloakClientSpec

KIND: Final = names.CLIENT_KIND
Obj = Mapping[str, Any]


def client_content(spec: KeycloakClientSpec) -> dict[str, Any]:
    """The client as declared; the optional settings only when declared (client_parts.py), so a client
    declaring none has the content, and the hash, it had before they existed. A saml client has its own
    (saml_client.py), and none of the OIDC flags, which Keycloak keeps but SAML never reads."""
    if spec.protocol == saml_client.PROTOCOL:
        return {
            "clientId": spec.client_id,
            "name": spec.name,
            "enabled": True,
            **saml_client.saml_content(spec),
            **client_parts.settings_content(spec),  # roles, mappers, scopes: no attributes on a saml client
        }
    return {
        "clientId": spec.client_id,
        "name": spec.name,
        "enabled": True,
        "protocol": "openid-connect",
        "publicClient": spec.public_client,
        "redirectUris": as_set(spec.redirect_uris),
        "webOrigins": as_set(spec.web_origins),
        "standardFlowEnabled": spec.standard_flow_enabled,
        "directAccessGrantsEnabled": spec.direct_access_grants_enabled,
        # Keycloak refuses service accounts on a public client; the flag is meaningless there.
        "serviceAccountsEnabled": spec.service_accounts_enabled and not spec.public_client,
        **client_parts.settings_content(spec),
    }


def plan_clients(
    clients: Sequence[Resource],
    observed: Iterable[Mapping[str, Any]],
    namespaces: Container[str] | None = None,
    *,
    declared_elsewhere: AbstractSet[ObjectKey] = frozenset(),
    revocation: Revocation = NO_REVOCATION,
) -> ScopePlan:
    return plan_scope(
        KIND,
        clients,
        observed,
        remote_id_of="id",
        natural_key_of="clientId",
        subresources=client_parts.SUBRESOURCES,
        compare_attributes=True,
        namespaces=namespaces,
        declared_elsewhere=declared_elsewhere,
        revocation=revocation,
        never_adopt=BUILT_IN_CLIENTS,
    )


# The clients Keycloak makes in a realm: the admin console and the realm's own administration depend on
# them (`admin-permissions` holds fine-grained admin permissions, 26.2+), so no resource adopts one
# (declaring one of their clientIds is a Conflict).
BUILT_IN_CLIENTS = frozenset(
    {
        "account",
        "account-console",
        "admin-cli",
        "admin-permissions",
        "broker",
        "realm-management",
        "security-admin-console",
    }
)


def upsert_body(op: Create | Update) -> dict[str, Any]:
    """A create's body; an update also names the id it replaces."""
    body = client_parts.client_write(marked(op.content, op.key), create=isinstance(op, Create))
    return body if isinstance(op, Create) else {**body, "id": op.remote_id}


def release_body(current: Obj) -> dict[str, Any]:
    """Preserve on delete: the client as read, its marker's attributes emptied (no longer the operator's)."""
    attributes = dict(current.get("attributes") or {})
    attributes.update(dict.fromkeys(MARKER_ATTRIBUTES, ""))
    return {**current, "attributes": attributes}


def disable_body(current: Obj) -> dict[str, Any]:
    """Revocation's first step: the client as read, switched off, less what a PUT could damage (the secret,
    masked for some logins, and the read-only access map)."""
    body = {k: v for k, v in current.items() if k not in ("secret", "access")}
    return {**body, "enabled": False}
