"""Realm roles: what to create, update and delete inside one realm.

Roles are written through their own endpoints (a realm PUT ignores them). A role the realm resource created
carries an owner attribute (names.ROLE_OWNER_ATTRIBUTE); only such roles are updated or deleted. A declared
name held by a role the operator did not create (Keycloak's own `offline_access`, say) is a conflict: it is
reported and left alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from keycloak_operator.core import names


@dataclass(frozen=True)
class RolesPlan:
    creates: list[tuple[str, str]] = field(default_factory=list)  # (name, description)
    updates: list[tuple[str, str]] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # declared names held by roles we did not create

    def is_empty(self) -> bool:
        return not (self.creates or self.updates or self.deletes)


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
