"""What a realm gives every user (models/realm_defaults.py): its required actions, default roles and default
groups (default_groups.py; its user profile, user_profile.py), planned against what Keycloak holds. Pure;
shell/replication/realm_defaults.py reads and writes.

They are part of the realm's content (a change is a change to the realm, so its hash) but not of its PUT nor
of its drift check: each has endpoints of its own, read every round while declared, written only when they
differ. Seen on Keycloak 26.7.3:
- GET authentication/required-actions lists the registered ones; a PUT of one by alias replaces it whole (a
  body without `priority` sets it to 0, without `name` empties it), so the body is the one read, with the
  declared fields changed.
- The default roles are the composites of the realm's `defaultRole` (GET/POST/DELETE roles-by-id/{id}/
  composites, a list of role representations); realm roles' containerId is the realm's id, client roles'
  their client's id. What they may be is the token authority's (token_authority.py, may_give_every_user,
  asked of the realm's own namespace with its own grants): every user holds them.
- GET default-groups lists {id, name, path}; PUT and DELETE default-groups/{id} add and remove one (each
  idempotent: 204 again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from keycloak_operator.core.replication import user_profile
from keycloak_operator.core.replication.sync import Verdict
from keycloak_operator.core.replication.token_authority import ACCOUNT_CLIENT, Authority
from keycloak_operator.kernel.events import Event
from keycloak_operator.models.realm import KeycloakRealmSpec

REQUIRED_ACTIONS: Final = "requiredActions"
DEFAULT_ROLES: Final = "defaultRoles"
DEFAULT_GROUPS: Final = "defaultGroups"
PARTS: Final = (REQUIRED_ACTIONS, DEFAULT_ROLES, DEFAULT_GROUPS, user_profile.USER_PROFILE)

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
    """What default roles are judged against. `authority`: the realm's own namespace's token authority
    (its view holds every realm role, and every client with the namespace its marker names when a client
    role is declared); `client_roles`: clientId -> role name -> id, for the declared clients in the realm;
    `composite`: ids of the declared client roles Keycloak lists as composite (their composites are read)."""

    authority: Authority
    client_roles: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    composite: frozenset[str] = frozenset()

    def realm_role_id(self, name: str) -> str | None:
        found = (self.authority.view.realm_roles.get(name) or {}).get("id")
        return found if isinstance(found, str) else None


@dataclass(frozen=True)
class RoleChange:
    operation: Literal["add", "remove"]
    roles: tuple[dict[str, Any], ...]  # {id, name} as Keycloak takes them
    labels: tuple[str, ...]  # `realm/name` or `clientId/name`, for the event


@dataclass(frozen=True)
class RolePlan:
    changes: list[RoleChange] = field(default_factory=list)
    problem: Verdict | None = None


def plan_default_roles(
    declared: Obj,
    held: Iterable[Any],
    view: RoleView,
    includes: Mapping[str, Sequence[Any]] | None = None,
    truncated: bool = False,
) -> RolePlan:
    """The adds and removes that make the default role's composites exactly `declared`. A declared role the
    token authority refuses the realm's own namespace for every user (may_give_every_user), or that
    includes such a role, or that is not in Keycloak: the realm's problem, naming the field (and the grant
    it needs), and no role is added (a partial set would hand every new user a set nobody declared). The
    removals are still made: they only shrink what every user gets, and a refused role that is held (a
    grant withdrawn, a hand edit, a client that changed hands) must not stay while the realm waits."""
    refused, problem = _refused(declared, view)
    out_of_reach, composite = composite_problem(declared, view, includes or {}, truncated)
    problem = problem or composite
    want: dict[str, tuple[str, str]] = {}  # role id -> (label, name), of the declared roles allowed
    for name in declared["realm"]:
        role_id = view.realm_role_id(name)
        if role_id is not None and (None, name) not in refused:
            want[role_id] = (f"realm/{name}", name)
    for client_id, names_ in declared["clients"].items():
        roles = view.client_roles.get(client_id, {})
        for name in names_:
            if name in roles and (client_id, name) not in refused and roles[name] not in out_of_reach:
                want[roles[name]] = (f"{client_id}/{name}", name)
    client_of = {uuid: cid for cid, (uuid, _) in view.authority.view.clients.items()}
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


def waiting(verdict: Verdict) -> Verdict:
    # The realm itself was written: its default roles wait for a grant or a fix, as they wait for a role.
    return Verdict("Pending", verdict.reason, verdict.message, revocable=False)


def _refused(declared: Obj, view: RoleView) -> tuple[set[tuple[str | None, str]], Verdict | None]:
    """The declared roles the authority refuses, as (clientId or None, name), and the realm's problem: the
    first refusal, else the first role not in Keycloak."""
    authority = view.authority
    refused: set[tuple[str | None, str]] = set()
    first: Verdict | None = None
    for name in declared["realm"]:
        if name not in authority.view.realm_roles:
            continue
        found = authority.judge_every_user(None, name, f"spec.defaultRoles.realm[{name}]")
        if found is not None:
            refused.add((None, name))
            first = first or waiting(found)
    for client_id, names_ in declared["clients"].items():
        if client_id not in authority.view.clients:
            continue  # not in the realm (yet): waits, said by _missing, rather than refused
        for name in names_:
            found = authority.judge_every_user(client_id, name, f"spec.defaultRoles.clients.{client_id}")
            if found is not None:
                refused.add((client_id, name))
                first = first or waiting(found)
    return refused, first or _missing(declared, view)


def _missing(declared: Obj, view: RoleView) -> Verdict | None:
    absent = [n for n in declared["realm"] if n not in view.authority.view.realm_roles]
    if absent:
        message = f"spec.defaultRoles.realm: no realm role {', '.join(absent)} in Keycloak; nothing was added"
        return Verdict("Pending", "RoleNotFound", message)
    for client_id, names_ in declared["clients"].items():
        where = f"spec.defaultRoles.clients.{client_id}"
        if client_id not in view.client_roles:
            message = f"{where}: no client {client_id!r} in the realm; nothing was added"
            return Verdict("Pending", "RoleNotFound", message)
        lacking = [n for n in names_ if n not in view.client_roles[client_id]]
        if lacking:
            message = f"{where}: no such client role: {', '.join(lacking)}; nothing was added"
            return Verdict("Pending", "RoleNotFound", message)
    return None


# A composite's includes are read role by role each round while declared: a bound keeps one realm's read
# cost small; a deeper tree is refused rather than half checked.
COMPOSITES_READ_MAX: Final = 64


def role_in_reach(role: Any, view: RoleView) -> bool:
    """Whether a role a default composite includes may be given to every user (the token authority's
    may_give_every_user, for the realm's own namespace): a role of another namespace's client (a composite
    holding a role granted to the client's team, say) or of realm-management is not, nor is a client role
    of a client the view does not know."""
    if not isinstance(role, Mapping) or not isinstance(role.get("name"), str):
        return False
    authority = view.authority
    if role.get("clientRole") is True:
        client_of = {uuid: cid for cid, (uuid, _) in authority.view.clients.items()}
        client_id = client_of.get(str(role.get("containerId")))
        return client_id is not None and authority.may_give_every_user(client_id, role["name"])
    return role["name"] in authority.view.realm_roles and authority.may_give_every_user(None, role["name"])


def composite_problem(
    declared: Obj, view: RoleView, includes: Mapping[str, Sequence[Any]], truncated: bool
) -> tuple[set[str], Verdict | None]:
    """`includes`: role id -> the roles it includes, as read this round for the declared composite client
    roles and, below them, every composite in reach (`truncated`: COMPOSITES_READ_MAX was hit). The ids of
    the declared roles that hold a role out of reach that way (role_in_reach), and the realm's problem,
    naming the field and the role."""
    out: set[str] = set()
    problem: Verdict | None = None
    for client_id, names_ in declared["clients"].items():
        roles = view.client_roles.get(client_id, {})
        for name in names_:
            role_id = roles.get(name)
            if role_id is None or role_id not in view.composite:
                continue
            where = f"spec.defaultRoles.clients.{client_id}: {name} is composite and"
            if truncated:
                message = f"{where} includes more than {COMPOSITES_READ_MAX} roles; nothing was added"
                problem = problem or Verdict("Pending", "CompositeOutOfReach", message)
                continue
            inner = _out_of_reach(role_id, view, includes)
            if inner is not None:
                out.add(role_id)
                message = (
                    f"{where} includes {_role_label(inner)}, which the realm's own namespace may not give "
                    f"every user (a role of its own clients, `{ACCOUNT_CLIENT}` or a plain realm role, or "
                    "one its spec.serviceAccountGrants grant it); nothing was added"
                )
                problem = problem or Verdict("Pending", "CompositeOutOfReach", message)
    return out, problem


def _out_of_reach(role_id: str, view: RoleView, includes: Mapping[str, Sequence[Any]]) -> Any:
    """The first role below `role_id` out of reach, or None."""
    stack, seen = [role_id], set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        for inner in includes.get(current, ()):
            if not role_in_reach(inner, view):
                return inner
            if inner.get("composite") is True and isinstance(inner.get("id"), str):
                stack.append(inner["id"])
    return None


def _role_label(role: Any) -> str:
    if not isinstance(role, Mapping):
        return "a role"
    if role.get("clientRole") is True:
        return f"client role {role.get('name')} of client id {role.get('containerId')}"
    return f"realm role {role.get('name')}"
