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

- a realm role that is composite (it includes other roles, perhaps `realm-management`'s), other than the
  realm's default role: only with a grant naming no clientId (the realm's roles). A realm role whose
  representation does not say `composite: false` counts as composite (fail-closed).

Exact set: once declared, the service account holds exactly the declared roles, besides the realm's
default role (`default-roles-<realm>`, which Keycloak maps to every user; never removed) and its own
client's `uma_protection` (which Keycloak maps when authorization services are on). Keycloak returns
direct mappings only, so a composite's members are never seen as hand-added.

Whatever is declared, and whatever the client's verdict: a client carrying a namespace's marker never
keeps a mapping (or a role composite) that needs a grant and lacks one (`enforce`): dropping the field,
leaving the client Pending or Forbidden does not keep what the realm owner withdrew.

A declared role not granted: the client is Forbidden and nothing is added; a mapping held without a grant
(the grant withdrawn, or added by hand) is removed all the same, since leaving it would keep the access the
realm owner took back. A declared role the realm lacks: Pending, nothing added.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from keycloak_operator.core.replication.sync import Verdict

# The grant rule is the token authority's; these names stay importable from here for the kinds' callers.
from keycloak_operator.core.replication.token_authority import (
    DEFAULT_ROLE_DESCRIPTION as DEFAULT_ROLE_DESCRIPTION,
)
from keycloak_operator.core.replication.token_authority import Authority
from keycloak_operator.core.replication.token_authority import Grant as Grant
from keycloak_operator.core.replication.token_authority import RealmView as RealmView
from keycloak_operator.core.replication.token_authority import client_owners as client_owners
from keycloak_operator.kernel.events import Event
from keycloak_operator.models.service_account import RoleRefs, ServiceAccountGrant

SA_ROLES: Final = "serviceAccountRoles"
FIELD: Final = "spec.serviceAccountRoles"
NOT_GRANTED: Final = "ServiceAccountRoleNotGranted"
NOT_FOUND: Final = "ServiceAccountRoleNotFound"
REVOKED: Final = "ServiceAccountRoleRevoked"
# The client role Keycloak maps to a client's own service account when authorization services are on.
UMA_PROTECTION: Final = "uma_protection"

Operation = Literal["add", "remove"]


def refs_content(refs: RoleRefs) -> dict[str, Any]:
    """A declared role set as it sits in the client's content: sorted, one order, one hash."""
    clients = {cid: sorted(set(r)) for cid, r in sorted(refs.clients.items())}
    return {"realm": sorted(set(refs.realm)), "clients": clients}


def roles_content(roles: RoleRefs | None) -> dict[str, Any]:
    """The declared mappings in the client's content; {} when absent, so a client that declares none keeps
    the content and hash it had before the field existed."""
    return {} if roles is None else {SA_ROLES: refs_content(roles)}


def grants_of(declared: Iterable[ServiceAccountGrant] | None) -> tuple[Grant, ...]:
    return tuple(
        Grant(g.namespace, g.client_id, frozenset(g.roles), frozenset(g.claims)) for g in declared or ()
    )


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
    by_client = answer.get("clientMappings")
    for cid, entry in (by_client if isinstance(by_client, Mapping) else {}).items():
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
    """Whether roles of `client_id` are beyond what `namespace` owns (token_authority.py decides)."""
    return not Authority(namespace, (), "", view).owns_client(client_id)


def granted(grants: Iterable[Grant], namespace: str, client_id: str | None, role: str) -> bool:
    """`client_id` None: a realm role granted by name (token_authority.py decides)."""
    return Authority(namespace, tuple(grants), "", view=RealmView("", {}, {})).granted(client_id, role)


def plan_mappings(
    content: Mapping[str, Any],
    namespace: str,
    grants: Iterable[Grant],
    granted_by: str,
    view: RealmView,
    held: Held,
    *,
    own: str | None = None,
) -> MappingPlan:
    """The writes for one client's service account. `namespace`: the client resource's; `grants`: its
    realm resource's (`granted_by`, `namespace/name`), and no one else's; `own`: the client's id in
    Keycloak (its `uma_protection` is kept). Without the field declared: only what needs a grant and lacks
    one is removed (enforce)."""
    return plan_role_set(
        content.get(SA_ROLES),
        where=FIELD,
        namespace=namespace,
        grants=grants,
        granted_by=granted_by,
        view=view,
        held=held,
        own=own,
    )


def plan_role_set(
    declared: Mapping[str, Any] | None,
    *,
    where: str,
    namespace: str,
    grants: Iterable[Grant],
    granted_by: str,
    view: RealmView,
    held: Held,
    keep_default: bool = True,
    own: str | None = None,
) -> MappingPlan:
    """The writes that make `held` the exact set `declared` ({"realm": [...], "clients": {cid: [...]}}),
    under the grant rule: a service account's mappings, or a client role's composites (role_composites.py).
    `declared` None (not declared, or the client not in a state to be written): only the held roles that
    need a grant and lack one are removed, nothing else. `where`: the field named in messages;
    `keep_default`: the realm's default role is never removed; `own`: the id of the client whose
    `uma_protection` is kept."""
    plan = MappingPlan()
    grants = tuple(grants)
    want_realm: set[str] = set(declared["realm"]) if declared is not None else set()
    want_clients: dict[str, set[str]] = (
        {cid: set(r) for cid, r in declared["clients"].items()} if declared is not None else {}
    )

    authority = Authority(namespace, grants, granted_by, view)
    allowed, realm_allowed = authority.may_give_client_role, authority.may_give_realm_role

    if declared is not None:
        plan.problem = _not_granted(
            where, want_realm, want_clients, allowed, realm_allowed, view, namespace, granted_by
        ) or _not_found(where, want_realm, want_clients, view)
    managed = declared is not None and plan.problem is None  # the exact set: extras removed too
    # Removals: held and not allowed, always; held and not declared (not kept), once nothing is amiss.
    for cid, (container, roles) in sorted(held.clients.items()):
        unsafe = {n for n in roles if not allowed(cid, n)}
        kept = {UMA_PROTECTION} if own is not None and container == own else set()
        extra = {n for n in roles if n not in want_clients.get(cid, set()) | kept} if managed else set()
        gone = sorted(unsafe | extra)
        if gone:
            plan.writes.append(MappingWrite("remove", cid, container, tuple((roles[n], n) for n in gone)))
        plan.revoked += [
            f"{cid}/{n}" for n in sorted(unsafe) if declared is None or n in want_clients.get(cid, ())
        ]
    unsafe_realm = {n for n in held.realm if not realm_allowed(n)}
    extra_realm = (
        {n for n in held.realm if n not in want_realm and not (keep_default and view.is_default(n))}
        if managed
        else set()
    )
    if unsafe_realm | extra_realm:
        gone = sorted(unsafe_realm | extra_realm)
        plan.writes.append(MappingWrite("remove", None, None, tuple((held.realm[n], n) for n in gone)))
        plan.revoked += [f"realm/{n}" for n in sorted(unsafe_realm) if declared is None or n in want_realm]
    if not managed:
        return plan
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
    where: str,
    want_realm: set[str],
    want: Mapping[str, set[str]],
    allowed: Callable[[str, str], bool],
    realm_allowed: Callable[[str], bool],
    view: RealmView,
    namespace: str,
    granted_by: str,
) -> Verdict | None:
    missing: dict[str | None, list[str]] = {
        None: sorted(r for r in want_realm if r in view.realm_roles and not realm_allowed(r))
    }
    missing.update(
        {cid: sorted(r for r in roles if not allowed(cid, r)) for cid, roles in sorted(want.items())}
    )
    missing = {cid: roles for cid, roles in missing.items() if roles}
    if not missing:
        return None
    cid, roles = next(iter(missing.items()))
    listed = ", ".join(roles)
    others = [c or "realm" for c in missing][1:]
    more = f" (and roles of {', '.join(others)})" if others else ""
    field_ = f"{where}.realm" if cid is None else f"{where}.clients.{cid}"
    what = "composite realm roles " if cid is None else ""
    needs = (
        f"{{namespace: {namespace}, roles: [{listed}]}}"
        if cid is None
        else (f"{{namespace: {namespace}, clientId: {cid}, roles: [{listed}]}}")
    )
    # Not revocable: the client itself stays allowed; only its service account's roles are refused.
    return Verdict(
        "Forbidden",
        NOT_GRANTED,
        f"{field_}: {what}{listed} not granted to namespace {namespace} by KeycloakRealm "
        f"{granted_by}{more}; its spec.serviceAccountGrants needs {needs}; nothing was added",
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


def outcome(plans: Iterable[tuple[str, MappingPlan]], written: bool) -> tuple[Verdict | None, list[Event]]:
    """One client's refusal (the first, for its status) and events, from its plans (`where`, plan):
    removals for lack of a grant in a Warning; other changes, when the client's content was not written
    this round, repair a hand edit."""
    plans = list(plans)
    problem = next((p.problem for _, p in plans if p.problem is not None), None)
    events = []
    revoked = [f"{where}/{label}" for where, p in plans for label in p.revoked]
    if revoked:
        events.append(Event("Warning", REVOKED, f"removed roles no longer granted: {', '.join(revoked)}"))
    repaired = [f"{where}/{label}" for where, p in plans for label in p.changed() if label not in p.revoked]
    if repaired and not written:
        events.append(
            Event("Normal", "DriftRepaired", f"restored what was edited in Keycloak: {', '.join(repaired)}")
        )
    return problem, events
