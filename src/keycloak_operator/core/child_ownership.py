"""Whether a Keycloak may write a child under a name: the one rule every path that writes children asks.

Pure. The names of a Keycloak's children are derived from its own name (`<name>-service`, ...), so another
owner's object may already carry one: a `Keycloak` named `pay` beside a platform's `pay-service`. Such an
object is never applied over (server-side apply with force would take every field), created over, or
deleted; the Keycloak reports it instead (Degraded, ChildNotOwned, naming each object). An object is this
Keycloak's when it carries its controller reference (children.Owner.owns), which every child it makes has.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from keycloak_operator.core import children
from keycloak_operator.core.common import conditions

REASON = "ChildNotOwned"

Key = tuple[str, str]  # (kind, name): a child's identity within its namespace


def may_write(existing: dict[str, Any] | None, owner: children.Owner) -> bool:
    """Nothing stands under the name, or what stands there is this Keycloak's."""
    return existing is None or owner.owns(existing)


def ours(existing: dict[str, Any] | None, owner: children.Owner) -> dict[str, Any] | None:
    """The object when it is this Keycloak's, else None: another owner's object is not a fact about this
    Keycloak's children (its replicas, selector or version must not steer a decision)."""
    return existing if existing is not None and owner.owns(existing) else None


def key(obj: dict[str, Any]) -> Key:
    return str(obj["kind"]), str(obj["metadata"]["name"])


def foreign(existing: Mapping[Key, dict[str, Any] | None], owner: children.Owner) -> frozenset[Key]:
    """The observed names (kind, name -> the object there, or None) that this Keycloak may not write."""
    return frozenset(k for k, obj in existing.items() if not may_write(obj, owner))


def allowed(objects: Iterable[dict[str, Any]], refused: frozenset[Key]) -> list[dict[str, Any]]:
    """The writes (desired or stored forms) that touch none of the `refused` names."""
    return [o for o in objects if key(o) not in refused]


def condition(refused: Iterable[Key], namespace: str) -> conditions.Wanted | None:
    """Degraded, naming every object left alone; None when there is none."""
    named = sorted(refused)
    if not named:
        return None
    listed = ", ".join(f"{kind} {name}" for kind, name in named)
    return conditions.Wanted(
        conditions.DEGRADED,
        "True",
        REASON,
        f"{listed} in namespace {namespace} already exist and are not this Keycloak's (no controller "
        "reference to it): the operator leaves them alone; delete or rename them, or give the Keycloak "
        "another name",
    )
