"""The group kind: a KeycloakGroup's representation in Keycloak, its scope (every group of one realm, the tree
flattened), its place in the tree, its role mappings and the order of its writes.

A group is identified in Keycloak by a generated id and named by its path (`/parent/child`), unique within
its realm: the path is the natural key, so the same name under two parents is two groups. `spec.parent` names
another KeycloakGroup of the same namespace and realm; the planner resolves the chain into a path. A missing
or not yet Ready parent leaves the child Pending (naming `spec.parent`); a cycle is an Error on every group
in it (InvalidParent), and nothing of it is written (group_tree.py: each path found once, the tree at most
MAX_DEPTH deep).

Writes go by depth: removals deepest first (deleting a parent in Keycloak takes its subgroups with it, and
they must be ours to take: a delete waits while anything below it is still wanted, group_tree.py), upserts
shallowest first (a child is created under its parent's id).

Role mappings are exact and written through their own endpoints after the group, as a client scope's
mappers are: what a marked group holds beyond what it declares is removed. A realm role the realm lacks
leaves the group Pending. Every mapping asks the token authority (token_authority.py: a group's members,
and whoever an identity provider's mapper puts in it, hold what it maps): a composite realm role, or a role
of a client no KeycloakClient of the group's own namespace owns (ADR 0012; `realm-management` included),
needs the realm owner's grant. A refusal makes the group Forbidden without a revocation clock (the
namespace is still allowed in the realm, only the mapping is refused), names the field and the grant, and
nothing is written; a mapping the group holds without a grant is removed whatever the group's verdict. A
group is never adopted yet.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from keycloak_operator.core.replication import adoption, group_tree
from keycloak_operator.core.replication import token_authority as ta
from keycloak_operator.core.replication.client import BUILT_IN_CLIENTS
from keycloak_operator.core.replication.drift import as_set
from keycloak_operator.core.replication.group_tree import (
    MAX_DEPTH,
    blocked_deletes,
    over_the_cap,
    parent_key,
    tree_paths,
)
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.in_realm import declared
from keycloak_operator.core.replication.marker import (
    content_hash,
    is_marker_attribute,
    marker_attributes,
    read_marker,
)
from keycloak_operator.core.replication.plan import Create, Plan, Update
from keycloak_operator.core.replication.resources import (
    RealmTarget,
)
from keycloak_operator.core.replication.sync import (
    DRIFTED,
    NO_REVOCATION,
    Resource,
    Revocation,
    ScopePlan,
    Verdict,
    plan_scope,
)
from keycloak_operator.models.group import KeycloakGroupSpec

KIND: Final = group_tree.KIND
PARENT: Final = (
    group_tree.PARENT
)  # the parent KeycloakGroup's metadata.name ("" at the top): hashed, not sent
PATH: Final = "path"
REALM_ROLES: Final = group_tree.REALM_ROLES
CLIENT_ROLES: Final = group_tree.CLIENT_ROLES
# Left out of the group's POST and PUT and of the generic drift check: the roles have endpoints of their
# own, the parent is where the group is created or moved to, and attributes are compared here (as sets).
SUBRESOURCES: Final = (PARENT, REALM_ROLES, CLIENT_ROLES)

Obj = Mapping[str, Any]


def group_content(spec: KeycloakGroupSpec) -> dict[str, Any]:
    """The group as declared, every list in one order (Keycloak keeps them as sets); its path is added by
    the planner, which sees the whole tree."""
    return {
        "name": spec.name,
        PARENT: spec.parent or "",
        "attributes": {k: as_set(v) for k, v in sorted(spec.attributes.items())},
        REALM_ROLES: as_set(spec.realm_roles),
        CLIENT_ROLES: {c: as_set(r) for c, r in sorted(spec.client_roles.items())},
    }


def group_resource(
    obj: Obj, realms: Mapping[ObjectKey, RealmTarget], unreadable: AbstractSet[str] = frozenset()
) -> Resource:
    """A group, with a problem when its realm is unknown or does not allow the group's namespace."""
    d = declared(obj, KeycloakGroupSpec, realms, unreadable, "groups")
    if isinstance(d, Resource):
        return d
    flags = d.flags | adoption.flags(
        obj, "a group is not adopted yet: an unmarked group at its path stays as it is"
    )
    return Resource(d.key, d.spec.name, group_content(d.spec), problem=d.problem, parent=d.parent, **flags)


@dataclass(frozen=True)
class Available:
    """What the realm holds that groups may map, read fresh by the writer after the clients were written.
    `client_roles`: clientId -> role names, for the clients in Keycloak that a declared group names and may
    map (whose owner, told by the marker, is in the authority's view); `declared_clients`: namespace ->
    clientIds its KeycloakClients declare (in Keycloak yet or not)."""

    realm_roles: frozenset[str] = frozenset()
    client_roles: Mapping[str, frozenset[str]] = field(default_factory=dict)
    declared_clients: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # Each namespace's token authority in the realm; without one no realm role is known to be plain, no
    # client is anyone's, and every role mapping needs a grant (fail-closed).
    authority: Callable[[str], ta.Authority] | None = None

    def authority_of(self, namespace: str) -> ta.Authority:
        if self.authority is not None:
            return self.authority(namespace)
        return ta.Authority(namespace, (), "", ta.RealmView("", {}, {}))


def _reference_problem(r: Resource, available: Available) -> Verdict | None:
    """A role the realm lacks, or one the token authority refuses the group's namespace (the group's
    members, and whoever an identity provider's mapper puts in it, hold what it maps), named by its field."""
    missing = [n for n in r.content[REALM_ROLES] if n not in available.realm_roles]
    if missing:
        return Verdict("Pending", "RoleNotFound", f"spec.realmRoles: not in the realm: {', '.join(missing)}")
    ns = r.key.namespace
    authority = available.authority_of(ns)
    for role in r.content[REALM_ROLES]:
        refused = authority.judge_role_text(role, f"spec.realmRoles[{role}]", realm_only=True)
        if refused is not None:
            return refused
    for client_id, wanted in r.content[CLIENT_ROLES].items():
        where = f"spec.clientRoles.{client_id}"
        if (
            client_id not in authority.view.clients
            and client_id in available.declared_clients.get(ns, frozenset())
            and client_id not in BUILT_IN_CLIENTS  # Keycloak's, even when a KeycloakClient names it
        ):
            msg = f"{where}: the KeycloakClient of namespace {ns} declaring it is not in Keycloak yet"
            return Verdict("Pending", "ClientNotReady", msg)
        for role in wanted:
            refused = authority.judge_client_role(client_id, role, where)
            if refused is not None:
                return refused
        roles = available.client_roles.get(client_id)
        if roles is None:  # granted, and not in the realm (or not read)
            return Verdict("Pending", "RoleNotFound", f"{where}: no client {client_id!r} in the realm")
        lacking = [n for n in wanted if n not in roles]
        if lacking:
            return Verdict("Pending", "RoleNotFound", f"{where}: no such client role: {', '.join(lacking)}")
    return None


def resolve_tree(
    groups: Sequence[Resource], available: Available, blocked: AbstractSet[ObjectKey] = frozenset()
) -> list[Resource]:
    """Each group with its path as natural key and in its content, or with the problem that holds it.
    A deleting group needs neither (its object is found by its marker), unless its delete is `blocked`:
    it is then still desired, and without a path it must be held."""
    paths = tree_paths({g.key: g for g in groups})
    too_many = over_the_cap(groups)
    out = []
    for g in groups:
        if "name" not in g.content:  # an invalid spec: its problem already says so
            out.append(g)
            continue
        path = too_many.get(g.key) or paths[g.key]
        if isinstance(path, Verdict):
            free = g.deleting and g.key not in blocked  # an Error would hold its finalizer for ever
            out.append(g if g.problem or free else replace(g, problem=path))
            continue
        g = replace(g, natural_key=path, content={**g.content, PATH: path})
        if not g.deleting and g.problem is None:
            problem = _reference_problem(g, available)
            # A refusal that revokes nothing runs no clock, even one a status still carries from before.
            since = g.forbidden_since if problem is None or problem.revocable else None
            g = replace(g, problem=problem, forbidden_since=since)
        out.append(g)
    return out


def plan_groups(
    groups: Sequence[Resource],
    observed: Iterable[Obj],
    available: Available,
    namespaces: Container[str] | None = None,
    *,
    revocation: Revocation = NO_REVOCATION,
) -> tuple[ScopePlan, list[Resource]]:
    """Every group of one realm, diffed whole against the realm's groups (the tree flattened, each with its
    `path` and `parentId`); also the groups as planned (paths resolved, problems set). A group whose parent
    did not end Ready (a Conflict, say) is Pending and planned again without it: at most one more pass per
    level of the tree (MAX_DEPTH levels at most)."""
    seen = [o for o in observed if isinstance(o, Mapping)]
    blocked, kept = blocked_deletes(groups, seen)
    planned = resolve_tree(groups, available, blocked.keys())
    for _ in range(MAX_DEPTH + 2):  # a parent not Ready holds its subgroups: one more pass per level
        plan = plan_scope(
            KIND,
            planned,
            seen,
            remote_id_of="id",
            natural_key_of=PATH,
            subresources=(*SUBRESOURCES, "attributes"),
            blocked=blocked,
            namespaces=namespaces,
            revocation=revocation,
        )
        waiting = _children_of_unready(planned, plan, blocked.keys())
        if not waiting:
            break
        planned = [replace(g, problem=waiting[g.key]) if g.key in waiting else g for g in planned]
    for key, why in blocked.items():
        # A blocked delete is still desired, so its path may be in Conflict; it still waits to be deleted
        # (its finalizer held), which its status says, the Conflict after (read only after the passes above,
        # which hold its subgroups on the Conflict).
        verdict = plan.verdicts.get(key)
        if verdict is not None and verdict.phase != "Deleting":
            message = f"{why}; meanwhile {verdict.phase}: {verdict.message}"
            plan.verdicts[key] = Verdict("Deleting", "DeletionBlocked", message)
    plan.disables = []  # no switch to turn off: revocation keeps the group until it deletes it
    # An orphan (or a revoked group, or a duplicate) holding subgroups it may not take along stays: Keycloak
    # would delete them with it. Nothing declares an orphan, so there is no status to say so; the guide does.
    plan.plan.deletes[:] = [d for d in plan.plan.deletes if d.remote_id not in kept]
    plan.plan.duplicates[:] = [d for d in plan.plan.duplicates if d.remote_id not in kept]
    _attribute_drift(plan, planned, seen)
    return plan, planned


def _children_of_unready(
    groups: Sequence[Resource], plan: ScopePlan, blocked: AbstractSet[ObjectKey]
) -> dict[ObjectKey, Verdict]:
    """Groups still desired (a blocked delete is) whose parent did not end Ready: held, Pending. A blocked
    delete is where its subgroups go only while nothing holds it: one whose own parent is not Ready (in
    Conflict, say) still says Deleting, but is not at its declared path, so a subgroup created under it
    would land at another path than declared and be moved back every round."""
    problems = {g.key: g.problem for g in groups if g.problem is not None}
    out = {}
    for g in groups:
        up = parent_key(g)
        if (g.deleting and g.key not in blocked) or g.problem is not None or up is None:
            continue
        verdict = plan.verdicts.get(up)
        if verdict is not None and verdict.phase == "Deleting" and up in problems:
            verdict = problems[up]
        if verdict is None or verdict.phase not in ("Ready", "Deleting"):
            why = f"{verdict.phase}: {verdict.message}" if verdict else "not planned"
            message = f"spec.parent: KeycloakGroup {up.namespace}/{up.name} is not Ready ({why})"
            out[g.key] = Verdict("Pending", "ParentNotReady", message)
    return out


def observed_attributes(obj: Obj) -> dict[str, list[str]]:
    """A group's attributes as Keycloak returns them, less the marker, each a sorted set of strings."""
    attributes = obj.get("attributes")
    if not isinstance(attributes, Mapping):
        return {}
    out = {}
    for k, v in attributes.items():
        if not is_marker_attribute(str(k)):
            values = v if isinstance(v, list) else [v]
            out[str(k)] = as_set([str(x) for x in values])
    return out


def _attribute_drift(scope: ScopePlan, groups: Sequence[Resource], observed: Sequence[Obj]) -> None:
    """Attributes compared whole (an attribute added by hand is drift too), values as sets; a group in step
    otherwise gets an update that restores them."""
    by_id = {str(o.get("id")): o for o in observed}
    updating = {u.key: u for u in scope.plan.updates}
    added = False
    for g in groups:
        remote = scope.remote_ids.get(g.key)
        verdict = scope.verdicts.get(g.key)
        if remote is None or verdict is None or verdict.phase != "Ready" or g.deleting:
            continue
        obj = by_id[remote]
        marker = read_marker(obj.get("attributes"))
        if marker is None or (g.key in updating and updating[g.key].previous_hash != DRIFTED):
            continue  # a spec change: the update that follows writes every attribute anyway
        have, want = observed_attributes(obj), g.content["attributes"]
        changed = sorted(f"attributes.{k}" for k in {*have, *want} if have.get(k) != want.get(k))
        if not changed:
            continue
        scope.drift[g.key] = sorted({*scope.drift.get(g.key, []), *changed})
        if g.key not in updating:
            scope.plan.updates.append(Update(g.key, remote, g.content, content_hash(g.content), DRIFTED))
            added = True
    if added:
        scope.plan.updates.sort(key=lambda u: u.key)


def stages(scope: ScopePlan, observed: Mapping[str, Obj]) -> list[ScopePlan]:
    """The scope's writes as a sequence of smaller scopes, each run whole before the next: removals level by
    level from the deepest (by the object's path as read), then upserts level by level from the top (by
    the declared path), so that a parent is never deleted before its subgroups nor created after them."""

    removals: dict[int, ScopePlan] = {}
    upserts: dict[int, ScopePlan] = {}

    def at(stage: dict[int, ScopePlan], path: object) -> ScopePlan:
        return stage.setdefault(str(path).count("/"), ScopePlan(Plan()))

    for d in scope.plan.deletes:
        at(removals, (observed.get(d.remote_id) or {}).get(PATH, "/")).plan.deletes.append(d)
    for d in scope.plan.duplicates:
        at(removals, (observed.get(d.remote_id) or {}).get(PATH, "/")).plan.duplicates.append(d)
    for r in scope.releases:
        at(removals, (observed.get(r.remote_id) or {}).get(PATH, "/")).releases.append(r)
    for c in scope.plan.creates:
        at(upserts, c.content.get(PATH, "/")).plan.creates.append(c)
    for u in scope.plan.updates:
        at(upserts, u.content.get(PATH, "/")).plan.updates.append(u)
    return [*(removals[d] for d in sorted(removals, reverse=True)), *(upserts[d] for d in sorted(upserts))]


def upsert_body(op: Create | Update) -> dict[str, Any]:
    """A create's or update's body: name and attributes, marked; Keycloak takes a group's attribute values
    only as lists (a plain string is refused), the marker's too. An update also names its id."""
    # The marker holds the hash of the whole content (roles, parent and path too), not of the body sent.
    marker = marker_attributes(op.key, op.content_hash)
    attributes = {**op.content["attributes"], **{k: [v] for k, v in marker.items()}}
    body = {"name": op.content["name"], "attributes": attributes}
    return body if isinstance(op, Create) else {**body, "id": op.remote_id}


def release_body(current: Obj) -> dict[str, Any]:
    """Preserve on delete: the group's name and attributes as read, less the marker (a group's PUT replaces
    its attributes whole, so leaving the marker's keys out removes them)."""
    return {"id": current.get("id"), "name": current.get("name"), "attributes": observed_attributes(current)}


@dataclass(frozen=True)
class MappingWrite:
    operation: Literal["add", "remove"]
    client: str | None  # a clientId; None: realm roles
    roles: tuple[str, ...]

    @property
    def label(self) -> str:
        where = REALM_ROLES if self.client is None else f"{CLIENT_ROLES}.{self.client}"
        return f"{where}/{','.join(self.roles)}"


def plan_role_mappings(content: Obj, observed: Obj) -> list[MappingWrite]:
    """The writes that make the group's direct role mappings exactly the declared ones: removals first,
    realm roles (client None) before each client's."""
    held = observed.get(CLIENT_ROLES)
    have: dict[str | None, list[str]] = {None: _names(observed.get(REALM_ROLES))}
    have |= {str(c): _names(r) for c, r in (held.items() if isinstance(held, Mapping) else [])}
    want: dict[str | None, list[str]] = {None: list(content[REALM_ROLES]), **content[CLIENT_ROLES]}
    removes, adds = [], []
    for client in sorted(have.keys() | want.keys(), key=lambda c: (c is not None, c or "")):
        had, wanted = set(have.get(client, [])), set(want.get(client, []))
        if had - wanted:
            removes.append(MappingWrite("remove", client, tuple(sorted(had - wanted))))
        if wanted - had:
            adds.append(MappingWrite("add", client, tuple(sorted(wanted - had))))
    return [*removes, *adds]


def refused_held(observed: Obj, authority: ta.Authority) -> list[MappingWrite]:
    """The removals of roles a group holds that its namespace may not give (a composite realm role or
    another client's role whose grant was withdrawn, or one added by hand): for a marked group that is not
    Ready, whose declared mappings are not written this round. The authority's view must know every
    client's owner, or the group's own client roles would go too."""
    gone = [n for n in _names(observed.get(REALM_ROLES)) if not authority.may_give_realm_role(n)]
    out = [MappingWrite("remove", None, tuple(sorted(gone)))] if gone else []
    held = observed.get(CLIENT_ROLES)
    for client_id, roles in sorted(held.items()) if isinstance(held, Mapping) else []:
        gone = [n for n in _names(roles) if not authority.may_give_client_role(str(client_id), n)]
        if gone:
            out.append(MappingWrite("remove", str(client_id), tuple(sorted(gone))))
    return out


def _names(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []
