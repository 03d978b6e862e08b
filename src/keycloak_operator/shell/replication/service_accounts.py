"""Writes a client's service-account role mappings once the client and its own roles are written;
core/replication/service_account.py plans them. Only clients declaring spec.serviceAccountRoles cost
anything: a quiet round reads the realm's roles once, the roles of the clients they name, and each such
service account's mappings, and writes nothing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from keycloak_operator.core.reconcile import Event
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
    named = {cid for c in due for cid in c.content[sa.SA_ROLES]["clients"]}
    client_roles: dict[str, dict[str, str]] = {}
    for cid in sorted(named & owners.keys()):
        roles = await at.admin.client_roles(at.remote, owners[cid][0])
        client_roles[cid] = {str(r["name"]): str(r["id"]) for r in roles if _usable(r)}
    # A role without a name or an id (a server's odd answer) cannot be mapped: as if absent (Pending).
    realm_roles = {str(r["name"]): r for r in await at.admin.roles(at.remote) if _usable(r)}
    return sa.RealmView(at.remote, realm_roles, owners, client_roles)


async def sync_service_accounts(
    rnd: Round,
    at: InRealm,
    limiter: WriteLimiter,
    clients: list[Resource],
    scope: ScopePlan,
    observed: Sequence[Mapping[str, Any]],
) -> dict[ObjectKey, Verdict]:
    """Each Ready client declaring service-account roles brought to them. Returns the verdicts of those
    refused (not granted, not found), for their status once their Secret is seen to: the client itself
    stays written. A failure is that client's alone."""
    due = [
        c
        for c in clients
        if sa.SA_ROLES in c.content
        and not c.deleting
        and c.key in scope.remote_ids
        and (v := rnd.verdicts.get(c.key)) is not None
        and v.phase == "Ready"
    ]
    if not due:
        return {}
    view = await _view(at, due, clients, scope, observed)
    written = {op.key for op in scope.plan.creates} | {op.key for op in scope.plan.updates}
    mappings = RoleMappings(at.admin, at.remote)
    granted_by = f"{at.realm.key.namespace}/{at.realm.key.name}"
    refused: dict[ObjectKey, Verdict] = {}
    for c in due:
        try:
            user = await mappings.service_account_user(scope.remote_ids[c.key])
            held = sa.held_mappings(await mappings.held(user))
            plan = sa.plan_mappings(c.content, c.key.namespace, at.grants, granted_by, view, held)
            for write in plan.ordered():
                await limiter.acquire(c.key.namespace)
                await mappings.write(user, write)
                metrics.replication_write(KIND, "delete" if write.operation == "remove" else "create")
        except AdminError as e:
            rnd.failed = True
            rnd.verdicts[c.key] = Verdict("Error", "WriteFailed", f"service-account roles: {e}")
            continue
        if plan.problem is not None:
            refused[c.key] = plan.problem
        if plan.revoked:
            message = f"removed service-account roles no longer granted: {', '.join(plan.revoked)}"
            rnd.note(c.key, Event("Warning", sa.REVOKED, message))
        repaired = [label for label in plan.changed() if label not in plan.revoked]
        if repaired and c.key not in written:  # the client's content did not change: a hand edit
            message = (
                f"restored what was edited in Keycloak: {', '.join(f'{sa.SA_ROLES}/{r}' for r in repaired)}"
            )
            rnd.note(c.key, Event("Normal", "DriftRepaired", message))
    return refused
