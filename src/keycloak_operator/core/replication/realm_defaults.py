"""What a realm gives every user (models/realm_defaults.py): its required actions, default roles and default
groups (and its user profile, user_profile.py), planned against what Keycloak holds. Pure;
shell/replication/realm_defaults.py reads and writes.

They are part of the realm's content (a change is a change to the realm, so its hash) but not of its PUT nor
of its drift check: each has endpoints of its own, read every round while declared, written only when they
differ. Seen on Keycloak 26.7.3:
- GET authentication/required-actions lists the registered ones; a PUT of one by alias replaces it whole (a
  body without `priority` sets it to 0, without `name` empties it), so the body is the one read, with the
  declared fields changed.
- The default roles are the composites of the realm's `defaultRole` (GET/POST/DELETE roles-by-id/{id}/
  composites, a list of role representations); realm roles' containerId is the realm's id, client roles'
  their client's id.
- GET default-groups lists {id, name, path}; PUT and DELETE default-groups/{id} add and remove one (each
  idempotent: 204 again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from keycloak_operator.core import names
from keycloak_operator.core.reconcile import Event
from keycloak_operator.core.replication import user_profile
from keycloak_operator.core.replication.adoption import marked_in_part
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.marker import read_marker
from keycloak_operator.core.replication.sync import Resource, Verdict
from keycloak_operator.models.realm import KeycloakRealmSpec

REQUIRED_ACTIONS: Final = "requiredActions"
DEFAULT_ROLES: Final = "defaultRoles"
DEFAULT_GROUPS: Final = "defaultGroups"
PARTS: Final = (REQUIRED_ACTIONS, DEFAULT_ROLES, DEFAULT_GROUPS, user_profile.USER_PROFILE)
# Realm roles every realm has (Keycloak makes them with it) that a realm may hand to every user.
BUILT_IN_REALM_ROLES: Final = frozenset({"offline_access", "uma_authorization"})
# The one built-in client whose roles may be default: Keycloak makes its view-profile and manage-account
# default in every new realm, and they act on the user's own account only. Never realm-management.
ACCOUNT_CLIENT: Final = "account"

Obj = Mapping[str, Any]


def defaults_content(spec: KeycloakRealmSpec) -> dict[str, Any]:
    """The declared parts, in a canonical order (so a reordered spec is the same content)."""
    out: dict[str, Any] = {}
    if spec.required_actions is not None:
        out[REQUIRED_ACTIONS] = [
            {
                "alias": a.alias,
                "enabled": a.enabled,
                "defaultAction": a.default_action,
                **({} if a.priority is None else {"priority": a.priority}),
            }
            for a in sorted(spec.required_actions, key=lambda a: a.alias)
        ]
    if spec.default_roles is not None:
        out[DEFAULT_ROLES] = {
            "realm": sorted(spec.default_roles.realm),
            "clients": {c: sorted(r) for c, r in sorted(spec.default_roles.clients.items()) if r},
        }
    if spec.default_groups is not None:
        out[DEFAULT_GROUPS] = sorted(spec.default_groups)
    if spec.user_profile is not None:
        out[user_profile.USER_PROFILE] = user_profile.profile_content(spec.user_profile)
    return out


# Events of the realm's own write this round: the defaults then follow a spec change, not a hand edit.
SPEC_WRITES: Final = frozenset({"Created", "Updated", "Adopted"})


def written_event(written: Sequence[str], reasons_this_round: Iterable[str], was_pending: bool) -> Event:
    """What the defaults' writes are reported as: Updated when they follow the spec (the realm itself was
    written this round, or its status was Pending, so these writes had been held back); DriftRepaired only
    for what a hand edit in Keycloak changed."""
    if was_pending or any(r in SPEC_WRITES for r in reasons_this_round):
        return Event("Normal", "Updated", f"written as declared: {', '.join(written)}")
    return Event("Normal", "DriftRepaired", f"restored settings edited in Keycloak: {', '.join(written)}")


# --- required actions ---


@dataclass(frozen=True)
class ActionPlan:
    puts: list[dict[str, Any]] = field(default_factory=list)  # whole bodies, PUT by alias
    problem: Verdict | None = None


def plan_required_actions(declared: Sequence[Obj], observed: Iterable[Any]) -> ActionPlan:
    """The PUTs that make each declared action as declared; the actions not declared are left alone. An
    alias the server has not registered is the realm's Error, naming it; the others are still written."""
    by_alias = {a["alias"]: a for a in observed if isinstance(a, Mapping) and isinstance(a.get("alias"), str)}
    puts, missing = [], []
    for want in declared:
        have = by_alias.get(want["alias"])
        if have is None:
            missing.append(want["alias"])
            continue
        body = {**have, **want}
        if any(have.get(k) != v for k, v in want.items()):
            puts.append(body)
    problem = None
    if missing:
        message = (
            f"spec.requiredActions: not registered in this realm: {', '.join(missing)} (register the "
            "provider in Keycloak first); the others were written"
        )
        problem = Verdict("Error", "RequiredActionNotRegistered", message)
    return ActionPlan(puts, problem)


def action_label(body: Obj) -> str:
    return f"requiredActions[{body['alias']}]"


# --- default roles ---


@dataclass(frozen=True)
class RoleView:
    """What the realm holds that default roles may name. `realm_roles`: name -> id of the roles allowed
    (the realm resource's own and the built-in ones, when Keycloak has them); `clients`: clientId -> (client
    id, role name -> role id) for the clients allowed (those a KeycloakClient of the realm's namespace
    owns, by marker, and `account`)."""

    realm_roles: Mapping[str, str] = field(default_factory=dict)
    clients: Mapping[str, tuple[str, Mapping[str, str]]] = field(default_factory=dict)
    # What a declared composite role may include (role_in_reach): the realm roles allowed above by name, and
    # the ids of every client in reach (client_in_reach), declared here or not.
    reach_clients: frozenset[str] = frozenset()
    # Role ids of the declared client roles Keycloak lists as composite (their composites are read).
    composite: frozenset[str] = frozenset()


@dataclass(frozen=True)
class RoleChange:
    operation: Literal["add", "remove"]
    roles: tuple[dict[str, Any], ...]  # {id, name} as Keycloak takes them
    labels: tuple[str, ...]  # `realm/name` or `clientId/name`, for the event


@dataclass(frozen=True)
class RolePlan:
    changes: list[RoleChange] = field(default_factory=list)
    problem: Verdict | None = None


def allowed_realm_roles(spec_roles: Iterable[str]) -> frozenset[str]:
    return frozenset(spec_roles) | BUILT_IN_REALM_ROLES


def plan_default_roles(
    declared: Obj,
    held: Iterable[Any],
    view: RoleView,
    includes: Mapping[str, Sequence[Any]] | None = None,
    truncated: bool = False,
) -> RolePlan:
    """The adds and removes that make the default role's composites exactly `declared`. A declared role out
    of reach (not the realm's own, not of a client of its namespace) or not in Keycloak: the realm's
    problem, naming the field, and no role is added (a partial set would hand every new user a set nobody
    declared); the removals are still made: they only shrink what every user gets, and a role out of reach
    that is held (a hand edit, a client that changed hands) must not stay while the realm waits."""
    problem = _role_problem(declared, view) or composite_problem(declared, view, includes or {}, truncated)
    want: dict[str, tuple[str, str]] = {}  # role id -> (label, name), of the declared roles in reach
    for name in declared["realm"]:
        if name in view.realm_roles:
            want[view.realm_roles[name]] = (f"realm/{name}", name)
    for client_id, names_ in declared["clients"].items():
        _, roles = view.clients.get(client_id, ("", {}))
        for name in names_:
            if name in roles:
                want[roles[name]] = (f"{client_id}/{name}", name)
    client_of = {uuid: cid for cid, (uuid, _) in view.clients.items()}
    have: dict[str, tuple[str, str]] = {}
    for r in held:
        if not isinstance(r, Mapping) or not all(isinstance(r.get(k), str) for k in ("id", "name")):
            continue
        if r.get("clientRole") is True:
            container = str(r.get("containerId"))
            label = f"{client_of.get(container, container)}/{r['name']}"
        else:
            label = f"realm/{r['name']}"
        have[r["id"]] = (label, r["name"])
    changes = []
    removes, adds = sorted(set(have) - set(want)), sorted(set(want) - set(have))
    if removes:  # removes first: the set is never, even for a moment, larger than either side
        changes.append(_change("remove", removes, have))
    if adds and problem is None:
        changes.append(_change("add", adds, want))
    return RolePlan(changes, problem)


def _change(
    operation: Literal["add", "remove"], ids: list[str], source: Mapping[str, tuple[str, str]]
) -> RoleChange:
    roles = tuple({"id": i, "name": source[i][1]} for i in ids)
    return RoleChange(operation, roles, tuple(sorted(source[i][0] for i in ids)))


def _role_problem(declared: Obj, view: RoleView) -> Verdict | None:
    missing = [n for n in declared["realm"] if n not in view.realm_roles]
    if missing:
        message = (
            f"spec.defaultRoles.realm: not a role of this realm resource (spec.roles), offline_access or "
            f"uma_authorization, or not in Keycloak yet: {', '.join(missing)}; nothing was written for them"
        )
        return Verdict("Pending", "RoleNotFound", message)
    for client_id, names_ in declared["clients"].items():
        where = f"spec.defaultRoles.clients.{client_id}"
        if client_id not in view.clients:
            message = (
                f"{where}: no KeycloakClient of the realm's namespace owns this client in Keycloak (only "
                f"those and `{ACCOUNT_CLIENT}` may give roles to every user); nothing was written for them"
            )
            return Verdict("Pending", "ClientNotOwned", message)
        lacking = [n for n in names_ if n not in view.clients[client_id][1]]
        if lacking:
            message = f"{where}: no such client role: {', '.join(lacking)}; nothing was written for them"
            return Verdict("Pending", "RoleNotFound", message)
    return None


# A composite's includes are read role by role each round while declared: a bound keeps one realm's read
# cost small; a deeper tree is refused rather than half checked.
COMPOSITES_READ_MAX: Final = 64


def role_in_reach(role: Any, view: RoleView) -> bool:
    """Whether a role a default composite includes is the realm owner's: a realm role it may make default,
    or a role of a client in reach. Another namespace's client (a composite holding a role granted through
    serviceAccountGrants, say) or realm-management is not: every new user would get it."""
    if not isinstance(role, Mapping) or not isinstance(role.get("name"), str):
        return False
    if role.get("clientRole") is True:
        return role.get("containerId") in view.reach_clients
    return role["name"] in view.realm_roles


def composite_problem(
    declared: Obj, view: RoleView, includes: Mapping[str, Sequence[Any]], truncated: bool
) -> Verdict | None:
    """`includes`: role id -> the roles it includes, as read this round for the declared composite client
    roles and, below them, every composite in reach (`truncated`: COMPOSITES_READ_MAX was hit). Any role out
    of reach held that way refuses the default roles, naming the field and the role."""
    for client_id, names_ in declared["clients"].items():
        _, roles = view.clients.get(client_id, ("", {}))
        for name in names_:
            role_id = roles.get(name)
            if role_id is None or role_id not in view.composite:
                continue
            where = f"spec.defaultRoles.clients.{client_id}: {name} is composite and"
            if truncated:
                message = f"{where} includes more than {COMPOSITES_READ_MAX} roles; nothing was added"
                return Verdict("Pending", "CompositeOutOfReach", message)
            stack, seen = [role_id], set()
            while stack:
                current = stack.pop()
                if current in seen:
                    continue
                seen.add(current)
                for inner in includes.get(current, ()):
                    if not role_in_reach(inner, view):
                        label = _role_label(inner)
                        message = (
                            f"{where} includes {label}, not a role of this realm resource nor of a client of "
                            "its namespace: every new user would get it; nothing was added"
                        )
                        return Verdict("Pending", "CompositeOutOfReach", message)
                    if inner.get("composite") is True and isinstance(inner.get("id"), str):
                        stack.append(inner["id"])
    return None


def _role_label(role: Any) -> str:
    if not isinstance(role, Mapping):
        return "a role"
    if role.get("clientRole") is True:
        return f"client role {role.get('name')} of client id {role.get('containerId')}"
    return f"realm role {role.get('name')}"


# --- default groups ---


@dataclass(frozen=True)
class GroupPlan:
    add: list[str] = field(default_factory=list)  # group ids
    remove: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    problem: Verdict | None = None


@dataclass(frozen=True)
class NamespaceGroups:
    """The realm namespace's KeycloakGroups in this realm, by resource name -> id in Keycloak: `ready`
    those Ready this round, `known` every one whose id is known (Ready or not)."""

    ready: Mapping[str, str] = field(default_factory=dict)
    known: Mapping[str, str] = field(default_factory=dict)


def namespace_groups(
    realm_namespace: str,
    children: Iterable[Resource],
    verdicts: Mapping[ObjectKey, Verdict],
    remote_ids: Mapping[ObjectKey, str],
) -> NamespaceGroups:
    """Only the realm's own namespace's groups count (a group of the same name in another namespace is
    never a default group of this realm), each by the id its marker was found under, never by path."""
    ready: dict[str, str] = {}
    known: dict[str, str] = {}
    for c in children:
        if c.key.kind != names.GROUP_KIND or c.key.namespace != realm_namespace or c.deleting:
            continue
        remote = remote_ids.get(c.key)
        if remote is None:
            continue
        known[c.key.name] = remote
        verdict = verdicts.get(c.key)
        if verdict is not None and verdict.phase == "Ready":
            ready[c.key.name] = remote
    return NamespaceGroups(ready, known)


def plan_default_groups(
    declared: Sequence[str], groups: NamespaceGroups | Mapping[str, str], observed: Iterable[Any]
) -> GroupPlan:
    """`groups`: the namespace's groups (namespace_groups; a plain mapping: all of them Ready). Until each
    declared one is Ready, the realm waits and no group is added; the removals are still made (they only
    shrink what every user gets), except of a declared group whose id is known: one not Ready for a round
    is not taken away from new users meanwhile."""
    if not isinstance(groups, NamespaceGroups):
        groups = NamespaceGroups(groups, groups)
    waiting = [n for n in declared if n not in groups.ready]
    problem = None
    if waiting:
        message = (
            f"spec.defaultGroups: KeycloakGroup not Ready in this realm (or not in the realm's namespace): "
            f"{', '.join(waiting)}; no default group was added"
        )
        problem = Verdict("Pending", "GroupNotReady", message)
    keep = {groups.known[n] for n in declared if n in groups.known}
    want = {groups.ready[n]: n for n in declared if n in groups.ready}
    have = {
        str(g["id"]): str(g.get("path") or g.get("name") or g["id"])
        for g in observed
        if isinstance(g, Mapping) and isinstance(g.get("id"), str)
    }
    add = [] if problem is not None else sorted(set(want) - set(have))
    remove = sorted(set(have) - set(want) - keep)
    labels = [f"+{want[i]}" for i in add] + [f"-{have[i]}" for i in remove]
    return GroupPlan(add, remove, labels, problem)


# --- which clients' roles may be default ---


def client_in_reach(client_id: Any, attributes: Any, realm_namespace: str) -> bool:
    """Whether a Keycloak client's roles may be default roles of a realm of `realm_namespace`: a client
    a KeycloakClient of that namespace owns (by the operator's marker), or Keycloak's own `account` as it
    comes (no marker attribute at all: one whose marker was emptied or half written may be someone's).
    Never realm-management nor another namespace's client."""
    marker = read_marker(attributes)
    if marker is None:
        return client_id == ACCOUNT_CLIENT and not marked_in_part(attributes)
    return marker.key.kind == names.CLIENT_KIND and marker.key.namespace == realm_namespace
