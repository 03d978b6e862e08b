"""Writes a client's sub-objects (roles, protocol mappers, client scopes) once the client itself is written;
core/replication/client_parts.py plans them. A quiet round reads only what clients declare (a client's
roles when it declares roles, listed once per round for every step that needs them (realm_reads.py); the
realm's scopes when one declares scopes) and writes nothing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from keycloak_operator.core.replication import client_parts as parts
from keycloak_operator.core.replication import token_mappers as tm
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.marker import read_marker
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import Resource, ScopePlan, Verdict
from keycloak_operator.kernel.events import Event
from keycloak_operator.shell import metrics
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.fan_out import fan_out
from keycloak_operator.shell.replication.realm_reads import RealmReads
from keycloak_operator.shell.replication.token_reads import AuthorityFor

KIND = "ClientPart"  # the metrics' kind for a client's sub-objects


# name -> (id, the namespace its marker names, its protocol)
RealmScopes = Mapping[str, tuple[str, str | None, str]]


async def realm_scopes(
    admin: KeycloakAdmin, realm: str, clients: list[Resource]
) -> dict[str, tuple[str, str | None, str]]:
    """The realm's client scopes, with the namespace that declares each (None: no resource does); read
    only when a client declares scopes."""
    if not any(parts.declares_scopes(c.content) for c in clients):
        return {}
    out: dict[str, tuple[str, str | None, str]] = {}
    for s in await admin.client_scopes(realm):
        if isinstance(s, Mapping) and isinstance(s.get("name"), str) and isinstance(s.get("id"), str):
            found = read_marker(s.get("attributes"))
            owner = found.key.namespace if found is not None else None
            out[str(s["name"])] = (str(s["id"]), owner, str(s.get("protocol") or parts.PROTOCOL))
    return out


def _protocol(client: Resource) -> str:
    return str(client.content.get("protocol") or parts.PROTOCOL)


def with_missing_scopes(clients: list[Resource], scopes: RealmScopes) -> list[Resource]:
    """A client naming a scope the realm lacks, or one another namespace declares, gets that as its
    problem: nothing is written for it."""
    out = []
    for c in clients:
        usable = parts.usable_scopes(scopes, c.key.namespace, _protocol(c))
        missing = None if c.problem is not None else parts.missing_scopes(c.content, usable)
        out.append(c if missing is None or c.deleting else replace(c, problem=missing))
    return out


@dataclass(frozen=True)
class _Done:
    """One client's parts seen to: what the round is told, in the clients' order (fan_out.py)."""

    error: str | None = None
    conflict: Verdict | None = None
    refused: Verdict | None = None  # a mapper the token authority refused: not written, or removed
    repaired: Event | None = None


async def sync_parts(
    rnd: Round,
    admin: KeycloakAdmin,
    limiter: WriteLimiter,
    reads: RealmReads,
    realm: str,
    clients: list[Resource],
    scope: ScopePlan,
    observed: Mapping[str, Mapping[str, Any]],
    scopes: RealmScopes,
    concurrency: int,
    authority: AuthorityFor,
) -> dict[ObjectKey, Verdict]:
    """Each declared client in sync or just written: its sub-objects brought to what it declares, a few
    clients at a time (`concurrency`); its protocol mappers only those the token authority allows
    (`authority`), the operator's refused ones removed. A failure is that client's alone. `observed`: the
    clients as listed this round, by id (a client just written is read again: the listing predates the
    write). Returns the clients with a mapper refused (Forbidden, or Pending for a role the realm lacks) or a
    declared role or mapper held by one made by hand (Conflict), for their status once their Secret is seen
    to (a status, unlike an event, is written only when it changes, so a lasting conflict costs a quiet round
    nothing)."""
    written = {op.key for op in scope.plan.creates} | {op.key for op in scope.plan.updates}
    due: list[tuple[Resource, str]] = []
    for c in clients:
        remote = scope.remote_ids.get(c.key)
        verdict = rnd.verdicts.get(c.key)
        if c.deleting or remote is None or verdict is None or verdict.phase != "Ready":
            continue
        if any(k in c.content for k in parts.SUBRESOURCES):
            due.append((c, remote))

    async def one(item: tuple[Resource, str]) -> _Done:
        c, remote = item
        try:
            current = await admin.client(realm, remote) if c.key in written else observed.get(remote, {})
            roles = await reads.client_roles(remote) if parts.ROLES in c.content else None
            usable = parts.usable_scopes(scopes, c.key.namespace, _protocol(c))
            content, refusals = tm.allowed_mappers(c.content, authority(c.key.namespace))
            plan = parts.plan_parts(content, current, roles, usable, c.key.namespace + "/" + c.key.name)
            for write in plan.ordered():
                await limiter.acquire(c.key.namespace)
                try:
                    await admin.write_client_part(
                        realm, remote, write.part, write.operation, write.name, write.remote_id, write.body
                    )
                finally:  # even a write that failed may have gone through
                    if write.part == "role":
                        reads.forget(remote)
                metrics.replication_write(KIND, write.operation)
        except AdminError as e:
            return _Done(error=str(e))
        conflict = None
        if plan.conflicts:
            message = f"held by objects the operator did not create, left alone: {', '.join(plan.conflicts)}"
            conflict = Verdict("Conflict", "Conflict", message + "; everything else was written")
        repaired = None
        if plan.writes and c.key not in written:  # the client's content did not change: a hand edit
            message = f"restored what was edited in Keycloak: {', '.join(plan.changed())}"
            repaired = Event("Normal", "DriftRepaired", message)
        refused = tm.one_verdict(refusals, "client")
        return _Done(conflict=conflict, refused=refused, repaired=repaired)

    conflicts: dict[ObjectKey, Verdict] = {}
    done_all = await fan_out(due, one, concurrency, fair_by=lambda item: item[0].key.namespace)
    for (c, _), done in zip(due, done_all, strict=True):
        if done.error is not None:
            rnd.failed = True
            rnd.verdicts[c.key] = Verdict(
                "Error", "WriteFailed", f"client roles, mappers or scopes: {done.error}"
            )
            continue
        if done.conflict is not None:
            conflicts[c.key] = done.conflict
        if done.refused is not None:  # worse than a conflict: said first
            conflicts[c.key] = done.refused
        if done.repaired is not None:
            rnd.note(c.key, done.repaired)
    return conflicts
