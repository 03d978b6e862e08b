"""A realm's default groups (spec.defaultGroups): which KeycloakGroups of the realm's own namespace every new
user joins, judged by the token authority for what they hand out, and the adds and removes that make
Keycloak's default groups exactly those. Pure; shell/replication/realm_defaults.py reads and writes
(GET default-groups lists {id, name, path}; PUT and DELETE default-groups/{id} add and remove one, each
idempotent)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from keycloak_operator.core.replication import group_tree as group_kind
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.realm_defaults import waiting
from keycloak_operator.core.replication.sync import Resource, Verdict
from keycloak_operator.core.replication.token_authority import Authority
from keycloak_operator.kernel import names


@dataclass(frozen=True)
class GroupPlan:
    add: list[str] = field(default_factory=list)  # group ids
    remove: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    problem: Verdict | None = None


@dataclass(frozen=True)
class NamespaceGroups:
    """The realm namespace's KeycloakGroups in this realm, by resource name -> id in Keycloak: `ready`
    those Ready this round, `known` every one whose id is known (Ready or not); `refused`: those whose
    members would hold a role the token authority refuses every user (the realm's refusal)."""

    ready: Mapping[str, str] = field(default_factory=dict)
    known: Mapping[str, str] = field(default_factory=dict)
    refused: Mapping[str, Verdict] = field(default_factory=dict)


def own_groups(
    authority: Authority, children: Iterable[Resource], *, deleting: bool = False
) -> dict[str, Resource]:
    """The KeycloakGroups a realm may make default: its own namespace's (the authority's: a namespace hands
    out only its own groups), by resource name; a group of the same name in another namespace never.
    `deleting`: those being deleted too: a parent whose deletion waits on a child still holds its roles in
    Keycloak, and the child's members inherit them, so the chain of roles goes through it."""
    return {
        c.key.name: c
        for c in children
        if c.key.kind == names.GROUP_KIND
        and c.key.namespace == authority.namespace
        and (deleting or not c.deleting)
    }


def maps_roles(declared: Iterable[str], groups: Mapping[str, Resource]) -> bool:
    """Whether a declared default group, or a group above it, maps a role: then the realm's roles and
    clients are read to judge them."""
    return any(_chain(name, groups) for name in declared)


def _chain(name: str, groups: Mapping[str, Resource]) -> list[tuple[str | None, str]]:
    """The roles a member of group `name` holds through it: its own mappings and those of every group
    above it (Keycloak's members inherit their parents' roles), as (clientId or None, role)."""
    out: list[tuple[str | None, str]] = []
    seen: set[str] = set()
    current = name
    while current and current not in seen and current in groups:
        seen.add(current)
        content = groups[current].content
        out += [(None, r) for r in content.get(group_kind.REALM_ROLES) or ()]
        clients = content.get(group_kind.CLIENT_ROLES) or {}
        out += [(str(c), r) for c, rs in clients.items() for r in rs]
        current = str(content.get(group_kind.PARENT) or "")
    return out


def namespace_groups(
    authority: Authority,
    children: Iterable[Resource],
    verdicts: Mapping[ObjectKey, Verdict],
    remote_ids: Mapping[ObjectKey, str],
    declared: Sequence[str] = (),
) -> NamespaceGroups:
    """Only the realm's own namespace's groups count (own_groups), each by the id its marker was found
    under, never by path. A declared one whose members would hold, through it or a group above it, a role
    the authority refuses every user (may_give_every_user: realm-management's, say, even granted) is
    refused, naming the field and the role."""
    groups = own_groups(authority, children)
    chains = own_groups(authority, children, deleting=True)
    ready: dict[str, str] = {}
    known: dict[str, str] = {}
    for name, c in groups.items():
        remote = remote_ids.get(c.key)
        if remote is None:
            continue
        known[name] = remote
        verdict = verdicts.get(c.key)
        if verdict is not None and verdict.phase == "Ready":
            ready[name] = remote
    refused: dict[str, Verdict] = {}
    for name in declared:
        for client_id, role in _chain(name, chains):
            found = authority.judge_every_user(client_id, role, f"spec.defaultGroups[{name}]")
            if found is not None:
                refused[name] = waiting(found)
                break
    return NamespaceGroups(ready, known, refused)


def plan_default_groups(
    declared: Sequence[str], groups: NamespaceGroups | Mapping[str, str], observed: Iterable[Any]
) -> GroupPlan:
    """`groups`: the namespace's groups (namespace_groups; a plain mapping: all of them Ready). Until each
    declared one is Ready, the realm waits and no group is added; the removals are still made (they only
    shrink what every user gets), except of a declared group whose id is known: one not Ready for a round
    is not taken away from new users meanwhile. A refused group holds the adds too, and is removed."""
    if not isinstance(groups, NamespaceGroups):
        groups = NamespaceGroups(groups, groups)
    waiting = [n for n in declared if n not in groups.ready and n not in groups.refused]
    problem = next((groups.refused[n] for n in declared if n in groups.refused), None)
    if waiting and problem is None:
        message = (
            f"spec.defaultGroups: KeycloakGroup not Ready in this realm (or not in the realm's namespace): "
            f"{', '.join(waiting)}; no default group was added"
        )
        problem = Verdict("Pending", "GroupNotReady", message)
    allowed = [n for n in declared if n not in groups.refused]
    keep = {groups.known[n] for n in allowed if n in groups.known}
    want = {groups.ready[n]: n for n in allowed if n in groups.ready}
    have = {
        str(g["id"]): str(g.get("path") or g.get("name") or g["id"])
        for g in observed
        if isinstance(g, Mapping) and isinstance(g.get("id"), str)
    }
    add = [] if problem is not None else sorted(set(want) - set(have))
    remove = sorted(set(have) - set(want) - keep)
    labels = [f"+{want[i]}" for i in add] + [f"-{have[i]}" for i in remove]
    return GroupPlan(add, remove, labels, problem)
