"""An OIDC identity provider's client secret, from a Secret of the resource's own namespace: where it is, and
what the Secret gives the provider (the Secret's version in its content, the value for the writer only).
identity_provider.py says why the value is never in the content."""

from __future__ import annotations

import base64
import binascii
from dataclasses import replace

from pydantic import ValidationError

from keycloak_operator.core.replication.identity_provider import MASKED, SECRET_FIELD, SECRET_SOURCE, Obj
from keycloak_operator.core.replication.sync import Resource, Verdict
from keycloak_operator.models.identity_provider import KeycloakIdentityProviderSpec


def client_secret_ref(obj: Obj) -> tuple[str, str] | None:
    """(Secret name, key) of the client secret; None without one (or with an invalid spec). Always read
    from the resource's own namespace: the reference has no namespace to name another (ADR 0012)."""
    try:
        spec = KeycloakIdentityProviderSpec.model_validate(obj.get("spec") or {})
    except ValidationError:
        return None
    ref = spec.oidc.client_secret if spec.oidc is not None else None  # a saml provider has no secret
    return None if ref is None else (ref.name, ref.key)


def with_client_secret(r: Resource, ref: tuple[str, str], secret: Obj | None) -> tuple[Resource, str | None]:
    """The provider with what its Secret (`secret`, None when missing) gives it: the Secret's version in its
    content and the value for the writer; or why it waits, as its problem (the message names the field and
    the Secret, never a value; nothing is written for it, the others go on)."""
    name, key = ref
    where = f"{SECRET_FIELD}: Secret {r.key.namespace}/{name}"
    if secret is None:
        return replace(
            r, problem=Verdict("Pending", "SecretNotFound", f"{where} not found; nothing was written")
        ), None
    raw = (secret.get("data") or {}).get(key)
    if not isinstance(raw, str):
        message = f"{where} has no key {key!r}; nothing was written"
        return replace(r, problem=Verdict("Pending", "SecretKeyNotFound", message)), None
    try:
        value = base64.b64decode(raw, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        message = f"{where} key {key!r} is not UTF-8 text; nothing was written"
        return replace(r, problem=Verdict("Error", "SecretInvalid", message)), None
    if value == MASKED:  # Keycloak would read it as "keep the stored secret": it would never be applied
        message = (
            f"{where} key {key!r} is Keycloak's mask for a stored secret, not a secret; nothing was written"
        )
        return replace(r, problem=Verdict("Error", "SecretInvalid", message)), None
    meta = secret.get("metadata") or {}
    source = f"{meta.get('uid', '')}/{meta.get('resourceVersion', '')}"
    return replace(r, content={**r.content, SECRET_SOURCE: source}), value
