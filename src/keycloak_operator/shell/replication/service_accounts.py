"""Writes a client's role composites and service-account role mappings once the client and its own roles
are written; core/replication/role_composites.py and service_account.py plan them. Only clients declaring
spec.serviceAccountRoles or a role's composites cost anything: a quiet round reads the realm's roles once,
the roles of the clients they name, each such role's composites and service account's mappings, and writes
nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from keycloak_operator.core.reconcile import Event
from keycloak_operator.core.replication import role_composites as rc
from keycloak_operator.core.replication import service_account as sa
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import Resource, ScopePlan, Verdict
from keycloak_operator.shell import metrics
from keycloak_operator.shell.keycloak_admin import AdminError
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.role_mappings import RoleMappings

KIND = "ServiceAccountRole"  # the metrics' kind


def _role_sets(c: Resource) -> list[Mapping[str, Any]]:
    own = [c.content[sa.SA_ROLES]] if sa.SA_ROLES in c.content else []
    return [*own, *rc.declared(c.content).values()]


def _usable(role: Any) -> bool:
    return isinstance(role, Mapping) and isinstance(role.get("name"), str) and isinstance(role.get("id"), str)


async def _view(
    at: InRealm,
    due: list[Resource],
    clients: list[Resource],
    scope: ScopePlan,
    observed: Sequence[Mapping[str, Any]],
) -> sa.RealmView:
    """The realm as the planner needs it, with the roles of the clients `due` name. Clients created this
    round are not in `observed` (listed before the writes): they are this round's own, with the marker of
    their resource's namespace."""
    owners = sa.client_owners(observed)
    declared = {c.key: c for c in clients}
    for op in scope.plan.creates:
        remote = scope.remote_ids.get(op.key)
        if remote is not None and op.key in declared:
            owners[declared[op.key].natural_key] = (remote, op.key.namespace)
    named = {cid for c in due for refs in _role_sets(c) for cid in refs["clients"]}
    client_roles: dict[str, dict[str, str]] = {}
    for cid in sorted(named & owners.keys()):
        roles = await at.admin.client_roles(at.remote, owners[cid][0])
        client_roles[cid] = {str(r["name"]): str(r["id"]) for r in roles if _usable(r)}
    # A role without a name or an id (a server's odd answer) cannot be mapped: as if absent (Pending).
    realm_roles = {str(r["name"]): r for r in await at.admin.roles(at.remote) if _usable(r)}
    return sa.RealmView(at.remote, realm_roles, owners, client_roles)


def _due(rnd: Round, c: Resource, scope: ScopePlan) -> bool:
    if c.deleting or c.key not in scope.remote_ids:
        return False
    verdict = rnd.verdicts.get(c.key)
    return (
        verdict is not None
        and verdict.phase == "Ready"
        and (sa.SA_ROLES in c.content or bool(rc.declared(c.content)))
    )


async def sync_service_accounts(
    rnd: Round,
    at: InRealm,
    limiter: WriteLimiter,
    clients: list[Resource],
    scope: ScopePlan,
    observed: Sequence[Mapping[str, Any]],
) -> dict[ObjectKey, Verdict]:
    """Each Ready client declaring service-account roles or role composites brought to them (composites
    first: a role is whole before it is mapped). Returns the verdicts of those refused (not granted, not
    found), for their status once their Secret is seen to: the client itself stays written. A failure is
    that client's alone."""
    due = [c for c in clients if _due(rnd, c, scope)]
    if not due:
        return {}
    view = await _view(at, due, clients, scope, observed)
    written = {op.key for op in scope.plan.creates} | {op.key for op in scope.plan.updates}
    step = _Step(at, limiter, view)
    refused: dict[ObjectKey, Verdict] = {}
    for c in due:
        try:
            outcomes = await step.run(c, scope.remote_ids[c.key])
        except AdminError as e:
            rnd.failed = True
            rnd.verdicts[c.key] = Verdict(
                "Error", "WriteFailed", f"role composites or service-account roles: {e}"
            )
            continue
        problems = [p.problem for _, p in outcomes if p.problem is not None]
        if problems:
            refused[c.key] = problems[0]
        revoked = [f"{where}/{label}" for where, p in outcomes for label in p.revoked]
        if revoked:
            message = f"removed roles no longer granted: {', '.join(revoked)}"
            rnd.note(c.key, Event("Warning", sa.REVOKED, message))
        repaired = [
            f"{where}/{label}" for where, p in outcomes for label in p.changed() if label not in p.revoked
        ]
        if repaired and c.key not in written:  # the client's content did not change: a hand edit
            rnd.note(
                c.key,
                Event(
                    "Normal", "DriftRepaired", f"restored what was edited in Keycloak: {', '.join(repaired)}"
                ),
            )
    return refused


class _Step:
    """One client's composites and service-account mappings: read, planned, written."""

    def __init__(self, at: InRealm, limiter: WriteLimiter, view: sa.RealmView) -> None:
        self.at, self.limiter, self.view = at, limiter, view
        self.api = RoleMappings(at.admin, at.remote)
        self.granted_by = f"{at.realm.key.namespace}/{at.realm.key.name}"

    async def run(self, c: Resource, remote: str) -> list[tuple[str, sa.MappingPlan]]:
        """(where, plan) of each role set written, `where` naming it in events."""
        out: list[tuple[str, sa.MappingPlan]] = []
        ns = c.key.namespace
        for role, composites in sorted(rc.declared(c.content).items()):
            held = rc.held_composites(await self.api.composites(remote, role), self.view)
            plan = rc.plan_composites(role, composites, ns, self.at.grants, self.granted_by, self.view, held)
            for write in plan.ordered():
                await self._acquire(ns, write)
                await self.api.write_composites(remote, role, write)
            out.append((f"roles/{role}/composites", plan))
        if sa.SA_ROLES in c.content:
            user = await self.api.service_account_user(remote)
            held = sa.held_mappings(await self.api.held(user))
            plan = sa.plan_mappings(c.content, ns, self.at.grants, self.granted_by, self.view, held)
            for write in plan.ordered():
                await self._acquire(ns, write)
                await self.api.write(user, write)
            out.append((sa.SA_ROLES, plan))
        return out

    async def _acquire(self, namespace: str, write: sa.MappingWrite) -> None:
        await self.limiter.acquire(namespace)
        metrics.replication_write(KIND, "delete" if write.operation == "remove" else "create")
