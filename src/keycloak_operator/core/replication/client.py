"""The client kind: a KeycloakClient's representation in Keycloak, its scope (every client of one realm), the
bodies of its writes, and the Secret a confidential client's secret goes to.

A client is identified in Keycloak by a generated id and named by its clientId, unique within its realm.
It depends on its realm (planned once the realm is settled) and is written with the login that acts for it.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Final, Literal

from pydantic import ValidationError

from keycloak_operator.core import names
from keycloak_operator.core.reconcile import Event
from keycloak_operator.core.replication.drift import as_set
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.marker import MARKER_ATTRIBUTES, marked
from keycloak_operator.core.replication.plan import Create, Update
from keycloak_operator.core.replication.sync import (
    NO_REVOCATION,
    Resource,
    Revocation,
    ScopePlan,
    Verdict,
    plan_scope,
)
from keycloak_operator.models.realm import KeycloakClientSpec

KIND: Final = names.CLIENT_KIND
Obj = Mapping[str, Any]


def client_content(spec: KeycloakClientSpec) -> dict[str, Any]:
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
    }


def plan_clients(
    clients: Sequence[Resource],
    observed: Iterable[Mapping[str, Any]],
    namespaces: AbstractSet[str] | None = None,
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
        namespaces=namespaces,
        declared_elsewhere=declared_elsewhere,
        revocation=revocation,
    )


def upsert_body(op: Create | Update) -> dict[str, Any]:
    """A create's body; an update also names the id it replaces."""
    body = marked(op.content, op.key)
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


# --- the client's Secret ------------------------------------------------------------------------------------


def client_secret_name(obj: Obj) -> str | None:
    """The Secret a confidential client's secret goes to; None for a public client (or an invalid spec)."""
    try:
        spec = KeycloakClientSpec.model_validate(obj.get("spec") or {})
    except ValidationError:
        return None
    if spec.public_client:
        return None
    return spec.secret_name or names.client_secret(str(obj["metadata"]["name"]))


def secret_due(client: Resource, remote: str | None, verdict: Verdict | None) -> bool:
    """Whether the round looks at the client's Secret at all: only for a Ready client in Keycloak."""
    return remote is not None and not client.deleting and (verdict is None or verdict.phase == "Ready")


def secret_step(
    obj: Obj, secret_name: str, existing: Obj | None, remote: str, written: bool
) -> Literal["keep", "read"] | Verdict:
    """With the Secret as found: `keep` it (it holds this client's secret and the client was not just
    written), `read` the secret from Keycloak, or a verdict when the Secret is someone else's."""
    meta = (existing or {}).get("metadata") or {}
    owned = any(ref.get("uid") == obj["metadata"]["uid"] for ref in meta.get("ownerReferences") or [])
    if existing is not None and not owned:
        return Verdict(
            "Error", "SecretNotOwned", f"Secret {secret_name} exists and is not owned by this client"
        )
    annotations = meta.get("annotations") or {}
    if existing is not None and annotations.get(names.ANNOTATION_CLIENT_ID) == remote and not written:
        return "keep"
    return "read"


def secret_body(client: Obj, name: str, client_id: str, value: str, remote: str) -> dict[str, Any]:
    """The Secret holding a client's id and secret, owned by the client resource (so it goes with it)."""
    meta = client["metadata"]
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "labels": names.client_secret_labels(meta["name"]),
            "annotations": {names.ANNOTATION_CLIENT_ID: remote},
            "ownerReferences": [
                {
                    "apiVersion": names.API_VERSION,
                    "kind": names.CLIENT_KIND,
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "type": "Opaque",
        "data": {
            "clientId": base64.b64encode(client_id.encode()).decode(),
            "clientSecret": base64.b64encode(value.encode()).decode(),
        },
    }


def secret_written(secret_name: str) -> Event:
    return Event("Normal", "SecretWritten", f"client secret written to Secret {secret_name}")
