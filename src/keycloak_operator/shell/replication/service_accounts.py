"""Writes a client's role composites and service-account role mappings once the client and its own roles
are written; core/replication/role_composites.py and service_account.py plan them.

Every client with an object carrying its resource's marker is held to the grant rule, whatever its verdict
and whatever it declares: a Ready client declaring spec.serviceAccountRoles or a role's composites is
brought to them (the exact set); any other (the field dropped, Pending, Forbidden, in Error) loses only the
mappings and composites that need a grant and lack one. A preserved client is stripped of every role that
needs a grant before it is released (`strip_before_release`): once unmarked it is no namespace's, and no
grant covers it. So a quiet round reads the realm's roles once, each such client's roles (the listing the
client parts made this round, realm_reads.py; and the composites of those the operator made that may have
any) and, with service accounts on, the service account's user and its mappings, and writes nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from keycloak_operator.core.replication import role_composites as rc
from keycloak_operator.core.replication import service_account as sa
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import Resource, ScopePlan, Verdict
from keycloak_operator.shell import metrics
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.admin.role_mapping import RoleMappingAdmin
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.replication.fan_out import fan_out
from keycloak_operator.shell.replication.realm_reads import RealmReads

KIND = "ServiceAccountRole"  # the metrics' kind


def _role_sets(c: Resource) -> list[Mapping[str, Any]]:
    own = [c.content[sa.SA_ROLES]] if sa.SA_ROLES in c.content else []
    return [*own, *rc.declared(c.content).values()]


def _usable(role: Any) -> bool:
    return isinstance(role, Mapping) and isinstance(role.get("name"), str) and isinstance(role.get("id"), str)


def owners_after(
    clients: list[Resource], scope: ScopePlan, observed: Sequence[Any], failed: set[ObjectKey]
) -> dict[str, tuple[str, str | None]]:
    """Who owns which clientId after this round's writes (`observed` was listed before them): a client
    created or updated (adopted, renamed) is its resource's under its declared clientId, its old name gone;
    a released one is no one's; a deleted one is gone. `failed`: keys whose write did not go through."""
    owners = sa.client_owners(observed)
    declared = {c.key: c for c in clients}
    gone = {d.remote_id for d in scope.plan.deletes if d.key not in failed}
    gone |= {d.remote_id for d in scope.plan.duplicates if d.key not in failed}
    released = {r.remote_id for r in scope.releases if r.key not in failed}
    owners = {
        cid: (uuid, None if uuid in released else ns)
        for cid, (uuid, ns) in owners.items()
        if uuid not in gone
    }
    for key in [op.key for op in scope.plan.creates] + [op.key for op in scope.plan.updates]:
        remote = scope.remote_ids.get(key)
        if remote is None or key not in declared or key in failed:
            continue
        owners = {cid: v for cid, v in owners.items() if v[0] != remote}
        owners[declared[key].natural_key] = (remote, key.namespace)
    return owners


async def _view(
    at: InRealm, named: set[str], owners: dict[str, tuple[str, str | None]], concurrency: int
) -> sa.RealmView:
    """The realm as the planner needs it, with the roles of the clients `named`. A client whose roles
    cannot be read (deleted meanwhile, say) has none: the clients naming it are Pending, no one else is."""

    async def listed(cid: str) -> list[Any] | None:
        try:
            return await at.reads.client_roles(owners[cid][0])
        except AdminError:
            return None

    client_roles: dict[str, dict[str, str]] = {}
    ids = sorted(named & owners.keys())
    # Reads only, no writes to share out: in the ids' order.
    for cid, roles in zip(ids, await fan_out(ids, listed, concurrency), strict=True):
        if roles is not None:
            client_roles[cid] = {str(r["name"]): str(r["id"]) for r in roles if _usable(r)}
    # A role without a name or an id (a server's odd answer) cannot be mapped: as if absent (Pending).
    realm_roles = {str(r["name"]): r for r in await at.admin.roles(at.remote) if _usable(r)}
    return sa.RealmView(at.remote, realm_roles, owners, client_roles)


def _managed(rnd: Round, c: Resource) -> bool:
    """Brought to what it declares (else only held to the grant rule): Ready, not going away."""
    verdict = rnd.verdicts.get(c.key)
    return not c.deleting and verdict is not None and verdict.phase == "Ready"


def _held_to_rule(c: Resource, scope: ScopePlan, failed: set[ObjectKey]) -> bool:
    """Its object carries its marker and stays: not deleted or released this round (a release strips it
    first). An object whose adoption failed is still no one's: left alone."""
    if c.key not in scope.remote_ids or (c.key in scope.adopted and c.key in failed):
        return False
    leaving = {op.key for op in scope.plan.deletes} | {r.key for r in scope.releases}
    return c.key not in leaving or c.key in failed


async def sync_service_accounts(
    rnd: Round,
    at: InRealm,
    limiter: WriteLimiter,
    clients: list[Resource],
    scope: ScopePlan,
    observed: Sequence[Any],
    failed: set[ObjectKey],
    concurrency: int,
) -> dict[ObjectKey, Verdict]:
    """Each client held to the grant rule (composites first: a role is whole before it is mapped), a few
    clients at a time (`concurrency`: each touches only its own roles and its own user). Returns
    the verdicts of the Ready ones refused (not granted, not found), for their status once their Secret is
    seen to: the client itself stays written. A failure is that client's alone."""
    due = [c for c in clients if _held_to_rule(c, scope, failed)]
    if not due:
        return {}
    managed = {c.key for c in due if _managed(rnd, c)}
    named = {cid for c in due if c.key in managed for refs in _role_sets(c) for cid in refs["clients"]}
    try:
        view = await _view(at, named, owners_after(clients, scope, observed, failed), concurrency)
    except AdminError as e:
        for c in due:
            _failed(rnd, c, f"realm roles: {e}")
        return {}
    listed = {str(o.get("id")): o for o in observed if isinstance(o, Mapping)}
    written = {op.key for op in scope.plan.creates} | {op.key for op in scope.plan.updates}
    step = _Step(
        at.admin,
        at.remote,
        limiter,
        at.reads,
        view,
        at.grants,
        f"{at.realm.key.namespace}/{at.realm.key.name}",
    )

    async def one(c: Resource) -> list[tuple[str, sa.MappingPlan]] | AdminError:
        remote = scope.remote_ids[c.key]
        # Whether Keycloak has a service-account user for it: as declared once written (or in sync); else as
        # listed (a Pending client declaring it may not have one yet: asking would fail every round).
        seen = c.content if c.key in managed else listed.get(remote, {})
        enabled = seen.get("serviceAccountsEnabled") is True
        try:
            return await step.run(c.key, c.content, remote, enabled, manage=c.key in managed)
        except AdminError as e:
            return e

    refused: dict[ObjectKey, Verdict] = {}
    outcomes = await fan_out(due, one, concurrency, fair_by=lambda c: c.key.namespace)
    for c, plans in zip(due, outcomes, strict=True):
        if isinstance(plans, AdminError):
            _failed(rnd, c, str(plans))
            continue
        problem, events = sa.outcome(plans, written=c.key in written)
        if problem is not None:
            refused[c.key] = problem
        for event in events:
            rnd.note(c.key, event)
    return refused


def _failed(rnd: Round, c: Resource, message: str) -> None:
    """A Ready client turns Error; another keeps its verdict (a Forbidden one its revocation clock), with a
    WriteFailed event. The round is retried soon either way."""
    text = f"role composites or service-account roles: {message}"
    verdict = rnd.verdicts.get(c.key)
    if verdict is not None and verdict.phase == "Ready":
        rnd.failed = True
        rnd.verdicts[c.key] = Verdict("Error", "WriteFailed", text)
    else:
        rnd.write_failed(c.key, text)


async def strip_before_release(
    admin: KeycloakAdmin,
    realm: str,
    limiter: WriteLimiter,
    key: ObjectKey,
    current: Mapping[str, Any],
    observed: Sequence[Any],
) -> None:
    """Before a preserved client is released (its marker stripped): every mapping and composite that needs
    a grant is removed, granted or not, since once unmarked the client is no namespace's and no grant
    covers it. A failure raises: the release waits, the marker stays, the next round tries again."""
    remote = str(current["id"])
    realm_roles = {str(r["name"]): r for r in await admin.roles(realm) if _usable(r)}
    view = sa.RealmView(realm, realm_roles, sa.client_owners(observed), {})
    step = _Step(admin, realm, limiter, RealmReads(admin, realm), view, (), "")  # read fresh, right before
    await step.run(key, {}, remote, current.get("serviceAccountsEnabled") is True, manage=False)


class _Step:
    """One client's composites and service-account mappings: read, planned, written."""

    def __init__(
        self,
        admin: KeycloakAdmin,
        realm: str,
        limiter: WriteLimiter,
        reads: RealmReads,
        view: sa.RealmView,
        grants: tuple[sa.Grant, ...],
        granted_by: str,
    ) -> None:
        self.limiter, self.view, self.grants, self.granted_by = limiter, view, grants, granted_by
        self.reads = reads
        self.api = RoleMappingAdmin(admin, realm)

    async def run(
        self, key: ObjectKey, content: Mapping[str, Any], remote: str, enabled: bool, *, manage: bool
    ) -> list[tuple[str, sa.MappingPlan]]:
        """(where, plan) of each role set seen to, `where` naming it in events. `manage`: brought to what is
        declared; else only what needs a grant and lacks one is removed. Only roles the operator made for
        this client are touched (a declared name held by a hand-made role is a Conflict, client_parts.py)."""
        out: list[tuple[str, sa.MappingPlan]] = []
        ns = key.namespace
        declared = rc.declared(content) if manage else {}
        owned = rc.owned_roles(await self.reads.client_roles(remote), f"{ns}/{key.name}")
        for role, composite in sorted(owned.items()):
            if role not in declared and not composite:
                continue
            held = rc.held_composites(await self.api.composites(remote, role), self.view)
            plan = rc.plan_composites(
                role, declared.get(role), ns, self.grants, self.granted_by, self.view, held
            )
            for write in plan.ordered():
                # The shared listing is not forgotten: only the role's `composite` flag changes, and nothing
                # after this step reads it (realm_reads.py).
                await self.limiter.acquire(ns)
                await self.api.write_composites(remote, role, write)
                _count(write)
            out.append((f"roles/{role}/composites", plan))
        if enabled:
            user = await self.api.service_account_user(remote)
            held = sa.held_mappings(await self.api.held(user))
            plan = sa.plan_mappings(
                content if manage else {}, ns, self.grants, self.granted_by, self.view, held, own=remote
            )
            for write in plan.ordered():
                await self.limiter.acquire(ns)
                await self.api.write(user, write)
                _count(write)
            out.append((sa.SA_ROLES, plan))
        return out


def _count(write: sa.MappingWrite) -> None:
    """A write that went through, in the metrics."""
    metrics.replication_write(KIND, "delete" if write.operation == "remove" else "create")
