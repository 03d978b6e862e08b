"""Reads the SMTP password Secret of each realm of a round, by name, in the realm's own namespace (never a
namespace the realm names: ADR 0012), and hands the password to the realm writer only, in memory, for this
round. core/replication/realm.py decides what a missing Secret means; nothing here logs or reports a value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from keycloak_operator.core.replication import realm
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.realm_settings import PASSWORD_FIELD
from keycloak_operator.core.replication.sync import Resource, Verdict
from keycloak_operator.shell.kube import SECRETS, ApiError, Kube


async def with_smtp_passwords(
    kube: Kube, realms: list[Resource], objects: Mapping[ObjectKey, Mapping[str, Any]]
) -> tuple[list[Resource], dict[ObjectKey, str]]:
    """`realms` with their SMTP Secrets' versions in their content (or a problem naming the field), and the
    passwords by realm. One GET per realm that declares a password and may be written this round."""
    out: list[Resource] = []
    passwords: dict[ObjectKey, str] = {}
    for r in realms:
        ref = realm.smtp_password_ref(objects[r.key])
        if ref is None or r.problem is not None or r.deleting:
            out.append(r)
            continue
        try:
            secret = await kube.get(SECRETS, r.key.namespace, ref[0])
        except ApiError as e:  # refused or failing: this realm waits, the others go on
            where = f"{PASSWORD_FIELD}: Secret {r.key.namespace}/{ref[0]}"
            out.append(replace(r, problem=Verdict("Error", "SecretReadFailed", f"{where}: HTTP {e.status}")))
            continue
        found, password = realm.with_smtp_secret(r, ref, secret)
        out.append(found)
        if password is not None:
            passwords[r.key] = password
    return out, passwords
