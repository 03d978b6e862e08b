"""A client's service-account role mappings (spec.serviceAccountRoles): which roles its service-account
user must hold, which of those need the realm owner's grant, and the writes that bring what Keycloak holds
to what is declared. Pure: the shell (shell/replication/service_accounts.py) reads and writes.

Who may ask for what (models/service_account.py says why):
- a realm role that exists in the realm: anyone the realm lets declare clients (the realm's roles are
  the realm owner's own choice of what to hand out);
- a role of a client whose Keycloak object carries this namespace's marker (the client's own roles, or
  another client this namespace declares): its own to give;
- any other client role (`realm-management`, `broker`, a client made by hand, a client of another
  namespace): only with a grant in the parent KeycloakRealm's spec.serviceAccountGrants naming the
  client's namespace, the clientId and the role. The owner is told by the marker in Keycloak, never by
  what some namespace declares: a namespace declaring a client named `realm-management` owns nothing.

Exact set: once declared, the service account holds exactly the declared roles, besides the realm's
default role (`default-roles-<realm>`, which Keycloak maps to every user; never removed). Keycloak returns
direct mappings only, so a composite's members are never seen as hand-added.

A declared role not granted: the client is Forbidden and nothing is added; a mapping held without a grant
(the grant withdrawn, or added by hand) is removed all the same, since leaving it would keep the access the
realm owner took back. A declared role the realm lacks: Pending, nothing added.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from keycloak_operator.core import names
from keycloak_operator.core.replication.marker import read_marker
from keycloak_operator.core.replication.sync import Verdict
from keycloak_operator.models.service_account import RoleRefs, ServiceAccountGrant

SA_ROLES: Final = "serviceAccountRoles"
FIELD: Final = "spec.serviceAccountRoles"
NOT_GRANTED: Final = "ServiceAccountRoleNotGranted"
NOT_FOUND: Final = "ServiceAccountRoleNotFound"
REVOKED: Final = "ServiceAccountRoleRevoked"
# Keycloak's description of a realm's default role (RealmManager), besides its name: either tells it.
DEFAULT_ROLE_DESCRIPTION: Final = "${role_default-roles}"

Operation = Literal["add", "remove"]


def refs_content(refs: RoleRefs) -> dict[str, Any]:
    """A declared role set as it sits in the client's content: sorted, one order, one hash."""
    clients = {cid: sorted(set(r)) for cid, r in sorted(refs.clients.items())}
    return {"realm": sorted(set(refs.realm)), "clients": clients}


def roles_content(roles: RoleRefs | None) -> dict[str, Any]:
    """The declared mappings in the client's content; {} when absent, so a client that declares none keeps
    the content and hash it had before the field existed."""
    return {} if roles is None else {SA_ROLES: refs_content(roles)}


@dataclass(frozen=True)
class Grant:
    namespace: str
    client_id: str
    roles: frozenset[str]


def grants_of(declared: Iterable[ServiceAccountGrant] | None) -> tuple[Grant, ...]:
    return tuple(Grant(g.namespace, g.client_id, frozenset(g.roles)) for g in declared or ())


@dataclass(frozen=True)
class RealmView:
    """What the realm holds, read this round. `clients`: clientId -> (id, the namespace in its client
    marker, None when unmarked); `client_roles`: clientId -> role name -> id, for the clients declared
    mappings name; `realm_roles`: name -> representation (id, description)."""

    name: str
    realm_roles: Mapping[str, Mapping[str, Any]]
    clients: Mapping[str, tuple[str, str | None]]
    client_roles: Mapping[str, Mapping[str, str]]

    def is_default(self, role: str) -> bool:
        if role == f"default-roles-{self.name.lower()}":
            return True
        return (self.realm_roles.get(role) or {}).get("description") == DEFAULT_ROLE_DESCRIPTION


def client_owners(observed: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, str | None]]:
    """clientId -> (id, namespace of the KeycloakClient its marker names, or None) from a client listing."""
    out: dict[str, tuple[str, str | None]] = {}
    for c in observed:
        cid, uuid = c.get("clientId"), c.get("id")
        if not isinstance(cid, str) or not isinstance(uuid, str):
            continue
        found = read_marker(c.get("attributes"))
        owner = found.key.namespace if found is not None and found.key.kind == names.CLIENT_KIND else None
        out[cid] = (uuid, owner)
    return out


@dataclass(frozen=True)
class Held:
    """The service account's direct mappings: realm role name -> id; clientId -> (client id, name -> id)."""

    realm: Mapping[str, str] = field(default_factory=dict)
    clients: Mapping[str, tuple[str, Mapping[str, str]]] = field(default_factory=dict)


def _named(roles: Any) -> dict[str, str]:
    if not isinstance(roles, list):
        return {}
    return {
        r["name"]: r["id"]
        for r in roles
        if isinstance(r, Mapping) and isinstance(r.get("name"), str) and isinstance(r.get("id"), str)
    }


def held_mappings(answer: Any) -> Held:
    """Keycloak's GET users/{id}/role-mappings: `realmMappings` and `clientMappings` by clientId."""
    if not isinstance(answer, Mapping):
        return Held()
    clients: dict[str, tuple[str, Mapping[str, str]]] = {}
    for cid, entry in (answer.get("clientMappings") or {}).items():
        if isinstance(entry, Mapping) and isinstance(entry.get("id"), str):
            clients[str(cid)] = (entry["id"], _named(entry.get("mappings")))
    return Held(_named(answer.get("realmMappings")), clients)


@dataclass(frozen=True)
class MappingWrite:
    operation: Operation
    client_id: str | None  # None: realm roles
    container: str | None  # the client's id in Keycloak; None for realm roles
    roles: tuple[tuple[str, str], ...]  # (id, name)

    def labels(self) -> list[str]:
        return [f"{self.client_id or 'realm'}/{name}" for _, name in self.roles]

    def body(self) -> list[dict[str, str]]:
        return [{"id": rid, "name": name} for rid, name in self.roles]


@dataclass
class MappingPlan:
    writes: list[MappingWrite] = field(default_factory=list)
    problem: Verdict | None = None
    revoked: list[str] = field(default_factory=list)  # `clientId/role`: held without a grant, removed

    def ordered(self) -> list[MappingWrite]:
        return sorted(self.writes, key=lambda w: w.operation != "remove")  # removals first, stable

    def changed(self) -> list[str]:
        return sorted({label for w in self.writes for label in w.labels()})


def needs_grant(view: RealmView, client_id: str, namespace: str) -> bool:
    """Whether roles of `client_id` are beyond what `namespace` owns: its client in Keycloak carries
    no marker of this namespace (a built-in, a hand-made client, another namespace's, or none yet)."""
    found = view.clients.get(client_id)
    return found is None or found[1] != namespace


def granted(grants: Iterable[Grant], namespace: str, client_id: str, role: str) -> bool:
    return any(g.namespace == namespace and g.client_id == client_id and role in g.roles for g in grants)


def plan_mappings(
    content: Mapping[str, Any],
    namespace: str,
    grants: Iterable[Grant],
    granted_by: str,
    view: RealmView,
    held: Held,
) -> MappingPlan:
    """The writes for one client's service account. `namespace`: the client resource's; `grants`: its
    realm resource's (`granted_by`, `namespace/name`), and no one else's."""
    if SA_ROLES not in content:
        return MappingPlan()
    return plan_role_set(content[SA_ROLES], FIELD, namespace, grants, granted_by, view, held)


def plan_role_set(
    declared: Mapping[str, Any],
    where: str,
    namespace: str,
    grants: Iterable[Grant],
    granted_by: str,
    view: RealmView,
    held: Held,
    *,
    keep_default: bool = True,
) -> MappingPlan:
    """The writes that make `held` the exact set `declared` ({"realm": [...], "clients": {cid: [...]}}),
    under the grant rule: a service account's mappings, or a client role's composites (role_composites.py).
    `where`: the field named in messages; `keep_default`: the realm's default role is never removed."""
    plan = MappingPlan()
    grants = tuple(grants)
    want_realm: set[str] = set(declared["realm"])
    want_clients: dict[str, set[str]] = {cid: set(r) for cid, r in declared["clients"].items()}

    def allowed(cid: str, role: str) -> bool:
        return not needs_grant(view, cid, namespace) or granted(grants, namespace, cid, role)

    plan.problem = _not_granted(where, want_clients, allowed, namespace, granted_by) or _not_found(
        where, want_realm, want_clients, view
    )
    # Removals: held and not allowed, always; held and not declared (not a default), once nothing is amiss.
    for cid, (container, roles) in sorted(held.clients.items()):
        unsafe = {n for n in roles if not allowed(cid, n)}
        extra = set() if plan.problem else {n for n in roles if n not in want_clients.get(cid, set())}
        gone = sorted(unsafe | extra)
        if gone:
            plan.writes.append(MappingWrite("remove", cid, container, tuple((roles[n], n) for n in gone)))
        plan.revoked += [f"{cid}/{n}" for n in sorted(unsafe) if n in want_clients.get(cid, set())]
    if plan.problem is not None:
        return plan
    extra_realm = sorted(
        n for n in held.realm if n not in want_realm and not (keep_default and view.is_default(n))
    )
    if extra_realm:
        plan.writes.append(MappingWrite("remove", None, None, tuple((held.realm[n], n) for n in extra_realm)))
    add_realm = sorted(want_realm - held.realm.keys())
    if add_realm:
        ids = tuple((str(view.realm_roles[n]["id"]), n) for n in add_realm)
        plan.writes.append(MappingWrite("add", None, None, ids))
    for cid, wanted in sorted(want_clients.items()):
        add = sorted(wanted - held.clients.get(cid, ("", {}))[1].keys())
        if add:
            ids = tuple((view.client_roles[cid][n], n) for n in add)
            plan.writes.append(MappingWrite("add", cid, view.clients[cid][0], ids))
    return plan


def _not_granted(
    where: str, want: Mapping[str, set[str]], allowed: Any, namespace: str, granted_by: str
) -> Verdict | None:
    missing = {cid: sorted(r for r in roles if not allowed(cid, r)) for cid, roles in sorted(want.items())}
    missing = {cid: roles for cid, roles in missing.items() if roles}
    if not missing:
        return None
    cid, roles = next(iter(missing.items()))
    listed = ", ".join(roles)
    more = f" (and roles of {', '.join(sorted(missing)[1:])})" if len(missing) > 1 else ""
    # Not revocable: the client itself stays allowed; only its service account's roles are refused.
    return Verdict(
        "Forbidden",
        NOT_GRANTED,
        f"{where}.clients.{cid}: {listed} not granted to namespace {namespace} by KeycloakRealm "
        f"{granted_by}{more}; its spec.serviceAccountGrants needs {{namespace: {namespace}, clientId: "
        f"{cid}, roles: [{listed}]}}; nothing was added",
        revocable=False,
    )


def _not_found(
    field_: str, want_realm: set[str], want: Mapping[str, set[str]], view: RealmView
) -> Verdict | None:
    absent = sorted(want_realm - view.realm_roles.keys())
    if absent:
        where, what = f"{field_}.realm", f"no realm role {', '.join(map(repr, absent))}"
    else:
        missing = {
            cid: sorted(r for r in roles if r not in view.client_roles.get(cid, {}))
            for cid, roles in sorted(want.items())
        }
        missing = {cid: roles for cid, roles in missing.items() if roles}
        if not missing:
            return None
        cid, roles = next(iter(missing.items()))
        where = f"{field_}.clients.{cid}"
        what = (
            f"no client {cid!r} in the realm"
            if cid not in view.clients
            else f"client {cid!r} has no role {', '.join(map(repr, roles))}"
        )
    return Verdict("Pending", NOT_FOUND, f"{where}: {what}; nothing was added")


def apply(held: Held, writes: Iterable[MappingWrite]) -> Held:
    """What Keycloak holds after `writes` (for tests, and to reason about convergence)."""
    realm = dict(held.realm)
    clients = {cid: (c, dict(r)) for cid, (c, r) in held.clients.items()}
    for w in writes:
        entry = (
            ("", realm) if w.client_id is None else clients.setdefault(w.client_id, (w.container or "", {}))
        )
        target = entry[1]
        for rid, name in w.roles:
            if w.operation == "add":
                target[name] = rid
            else:
                target.pop(name, None)
    return Held(realm, {cid: (c, r) for cid, (c, r) in clients.items() if r})
