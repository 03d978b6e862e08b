"""The Secret a confidential client's secret goes to, in the client's namespace and owned by the client
resource: its name, when the round looks at it, when it reads the secret from Keycloak again, and its body.

Read from Keycloak only when the Secret is missing, names another client, or the client was just written: a
quiet round GETs each such Secret by name and writes nothing.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import ValidationError

from keycloak_operator.core.replication.sync import Resource, Verdict
from keycloak_operator.kernel import names
from keycloak_operator.kernel.events import Event
from keycloak_operator.models.client import KeycloakClientSpec

Obj = Mapping[str, Any]


def client_secret_name(obj: Obj) -> str | None:
    """The Secret a confidential client's secret goes to; None for a public client, a saml one (Keycloak
    gives it a secret too, which SAML never uses) or an invalid spec."""
    try:
        spec = KeycloakClientSpec.model_validate(obj.get("spec") or {})
    except ValidationError:
        return None
    if spec.public_client or spec.protocol == "saml":
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
