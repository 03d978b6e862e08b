"""Realm roles: what to create, update and delete inside one realm.

Roles are written through their own endpoints (a realm PUT ignores them). A role the realm resource created
carries an owner attribute (names.ROLE_OWNER_ATTRIBUTE); only such roles are updated or deleted. A declared
name held by a role the operator did not create (Keycloak's own `offline_access`, say) is a conflict: it is
reported and left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from keycloak_operator.kernel import names
from keycloak_operator.kernel.events import Event

KIND: Final = "RealmRole"  # the metrics' kind for realm roles, which have no resource of their own


@dataclass(frozen=True)
class RolesPlan:
    creates: list[tuple[str, str]] = field(default_factory=list)  # (name, description)
    updates: list[tuple[str, str]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # declared names held by roles we did not create

    def is_empty(self) -> bool:
        return not (self.creates or self.updates or self.deletes)


@dataclass(frozen=True)
class RoleWrite:
    operation: Literal["create", "update", "delete"]
    name: str
    body: dict[str, Any] | None  # None for a delete


def declared_roles(content: Mapping[str, Any]) -> dict[str, str]:
    """Role name -> description, from a realm content (realm.realm_content)."""
    return {r["name"]: r.get("description", "") for r in content.get("roles", {}).get("realm", [])}


def role_owner(realm_key_text: str) -> dict[str, list[str]]:
    """Attributes marking a realm role as declared by the realm resource `namespace/name`."""
    return {names.ROLE_OWNER_ATTRIBUTE: [realm_key_text]}


def role_body(name: str, description: str, owner: str) -> dict[str, Any]:
    return {"name": name, "description": description, "attributes": role_owner(owner)}


def owner_of(role: Mapping[str, Any]) -> str | None:
    values = (role.get("attributes") or {}).get(names.ROLE_OWNER_ATTRIBUTE)
    if isinstance(values, list) and len(values) == 1 and isinstance(values[0], str):
        return values[0]
    return None


def plan_roles(declared: Mapping[str, str], observed: Iterable[Mapping[str, Any]], owner: str) -> RolesPlan:
    """`declared`: name -> description; `observed`: the realm's roles with attributes; `owner`: the realm
    resource as `namespace/name`."""
    existing = {str(r["name"]): r for r in observed}
    plan = RolesPlan()
    for name in sorted(declared):
        role = existing.get(name)
        if role is None:
            plan.creates.append((name, declared[name]))
        elif owner_of(role) != owner:
            plan.conflicts.append(name)
        elif (role.get("description") or "") != declared[name]:
            plan.updates.append((name, declared[name]))
    plan.deletes.extend(
        sorted(name for name, role in existing.items() if owner_of(role) == owner and name not in declared)
    )
    return plan


def role_writes(plan: RolesPlan, owner: str) -> list[RoleWrite]:
    """The plan's writes in the order they are made: creates, updates, then deletes."""
    return [
        *(
            RoleWrite("create", name, role_body(name, description, owner))
            for name, description in plan.creates
        ),
        *(
            RoleWrite("update", name, role_body(name, description, owner))
            for name, description in plan.updates
        ),
        *(RoleWrite("delete", name, None) for name in plan.deletes),
    ]


def conflict_event(plan: RolesPlan) -> Event | None:
    """Declared roles held by roles the operator did not create: said on the realm, and left alone."""
    if not plan.conflicts:
        return None
    return Event("Warning", "RoleConflict", f"roles not created by the operator: {', '.join(plan.conflicts)}")


def synced_event(plan: RolesPlan) -> Event | None:
    """What the plan wrote, once every write went through."""
    if plan.is_empty():
        return None
    changed = [*(n for n, _ in plan.creates), *(n for n, _ in plan.updates), *plan.deletes]
    return Event("Normal", "RolesSynced", f"realm roles written: {', '.join(changed)}")
