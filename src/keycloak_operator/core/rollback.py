"""What `keycloak-operator rollback` restores: pure, so every case is tested without an API server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from keycloak_operator.core import children, versions
from keycloak_operator.core.reconcile import stored_status
from keycloak_operator.kernel import names


@dataclass(frozen=True)
class RollbackPlan:
    target: str
    revision_name: str


class RollbackRefused(Exception):
    """Nothing to roll back to; the message says why."""


def plan(keycloak: dict[str, Any]) -> RollbackPlan:
    slots = stored_status(keycloak).versions
    target = versions.rollback_target(slots)
    if target is None:
        raise RollbackRefused("no earlier version is recorded in status.versions: nothing to roll back to")
    return RollbackPlan(
        target, names.controller_revision(keycloak["metadata"]["name"], versions.revision_key(target))
    )


def restored_spec(keycloak: dict[str, Any], revision: dict[str, Any]) -> dict[str, Any]:
    """The stored spec, with every field that is not part of a version (replicas, upgrade policy, backup
    settings, realmNamespaces) kept as it is today: a rollback restores what the pods run, nothing else.
    Only from a revision this Keycloak made: its name is predictable, and one made by someone else in the
    namespace would restore their spec (core/child_ownership.py)."""
    meta = keycloak.get("metadata") or {}
    owner = children.Owner(meta.get("name", ""), meta.get("namespace", ""), meta.get("uid", ""))
    if not owner.uid or not owner.owns(revision):
        name = (revision.get("metadata") or {}).get("name", "")
        raise RollbackRefused(
            f"ControllerRevision {name} is not this Keycloak's (no controller reference to it): "
            "not restored; delete it, and set the spec by hand"
        )
    try:
        return versions.carry_unversioned(revision["data"]["spec"], keycloak.get("spec") or {})
    except (KeyError, TypeError, ValidationError) as e:
        raise RollbackRefused(f"the stored spec cannot be restored: {e}") from e
