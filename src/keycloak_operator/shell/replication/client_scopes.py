"""Writes a realm's client scopes (core/replication/client_scope.py plans them), then their protocol mappers.
Runs before the clients' writer, so that a client attaching a scope declared in the same round finds it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keycloak_operator.core.replication import client_scope
from keycloak_operator.core.replication import token_authority as ta
from keycloak_operator.core.replication import token_mappers as tm
from keycloak_operator.core.replication.client_parts import MAPPER_HASH
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.plan import Create, Delete, Update
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import (
    Release,
    Resource,
    ScopeOperation,
    ScopePlan,
    Verdict,
)
from keycloak_operator.kernel.events import Event
from keycloak_operator.shell import metrics
from keycloak_operator.shell.admin_connection import AdminError
from keycloak_operator.shell.keycloak_admin import KeycloakAdmin
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.replication.executor import write_scope
from keycloak_operator.shell.replication.mapper_revocation import revoke_refused_mappers
from keycloak_operator.shell.replication.token_reads import (
    AuthorityFor,
    authority_for,
    claims_only,
    realm_view,
)

MAPPER_KIND = "ClientScopeMapper"  # the metrics' kind for a client scope's mappers


class ClientScopeWriter:
    def __init__(self, limiter: WriteLimiter) -> None:
        self.limiter = limiter

    async def sync(self, rnd: Round, at: InRealm) -> None:
        """The realm's client scopes, diffed whole against what the realm holds; then their mappers."""
        declared = [c for c in at.children if c.key.kind == client_scope.KIND]
        observed = await at.admin.client_scopes(at.remote)
        scope = client_scope.plan_client_scopes(declared, observed, at.watched, revocation=at.revocation)

        async def write(op: ScopeOperation) -> None:
            await self._write(at.admin, at.remote, scope, op)

        await write_scope(rnd, scope, write, self.limiter, {c.key: c for c in declared})
        by_id = {str(s.get("id")): s for s in observed if isinstance(s, Mapping)}
        authority = await self._authority(at, declared, observed)
        await self._mappers(rnd, at, declared, scope, by_id, authority)

        async def delete(remote: str, mapper_id: str, _name: str) -> None:
            await at.admin.write_scope_mapper(at.remote, remote, "delete", mapper_id, None)

        await revoke_refused_mappers(
            rnd, declared, scope, by_id, authority, self.limiter, delete, MAPPER_KIND
        )

    @staticmethod
    async def _authority(at: InRealm, declared: list[Resource], observed: list[Any]) -> AuthorityFor:
        """The token authority for the scopes' mappers (a scope's mappers reach the token of every client it
        is attached to); the realm's roles and clients are read only when a mapper declared or held by the
        operator names a role or an audience."""
        if not tm.must_read_realm((s.content for s in declared), observed, MAPPER_HASH):
            return claims_only(at)
        owners = ta.client_owners(await at.admin.clients(at.remote))
        return authority_for(at, await realm_view(at, owners))

    @staticmethod
    async def _write(admin: KeycloakAdmin, realm: str, scope: ScopePlan, op: ScopeOperation) -> None:
        if isinstance(op, Delete):
            await admin.delete_client_scope(realm, op.remote_id)
        elif isinstance(op, Release):
            # Read again right before: the body is the scope as it is, less the marker.
            current = await admin.client_scope(realm, op.remote_id)
            await admin.update_client_scope(realm, op.remote_id, client_scope.release_body(current))
        elif isinstance(op, Create):
            scope.remote_ids[op.key] = await admin.create_client_scope(realm, client_scope.upsert_body(op))
        else:
            assert isinstance(op, Update)  # no Disable: plan_client_scopes plans none
            await admin.update_client_scope(realm, op.remote_id, client_scope.upsert_body(op))

    async def _mappers(
        self,
        rnd: Round,
        at: InRealm,
        scopes: list[Resource],
        scope: ScopePlan,
        observed: Mapping[str, Mapping[str, Any]],
        authority: AuthorityFor,
    ) -> None:
        """Each declared scope in sync or just written: its mappers brought to what it declares, those the
        token authority refuses left out (and removed if the operator wrote them). A failure, a refusal, or
        a declared name held by a hand-made mapper, is that scope's alone."""
        written = {op.key for op in scope.plan.creates} | {op.key for op in scope.plan.updates}
        conflicts: dict[ObjectKey, Verdict] = {}
        for s in scopes:
            remote = scope.remote_ids.get(s.key)
            verdict = rnd.verdicts.get(s.key)
            if s.deleting or remote is None or verdict is None or verdict.phase != "Ready":
                continue
            if client_scope.MAPPERS not in s.content:
                continue
            try:
                # A scope just written is read again: the listing predates the write.
                current = (
                    await at.admin.client_scope(at.remote, remote) if s.key in written else observed[remote]
                )
                content, refusals = tm.allowed_mappers(s.content, authority(s.key.namespace))
                plan = client_scope.plan_mappers(content, current)
                for w in plan.ordered():
                    await self.limiter.acquire(s.key.namespace)
                    await at.admin.write_scope_mapper(at.remote, remote, w.operation, w.remote_id, w.body)
                    metrics.replication_write(MAPPER_KIND, w.operation)
            except AdminError as e:
                rnd.failed = True
                rnd.verdicts[s.key] = Verdict("Error", "WriteFailed", f"protocol mappers: {e}")
                continue
            if plan.conflicts:
                held = ", ".join(plan.conflicts)
                message = f"held by objects the operator did not create, left alone: {held}"
                conflicts[s.key] = Verdict("Conflict", "Conflict", message + "; everything else was written")
            refused = tm.one_verdict(refusals, "scope")
            if refused is not None:  # worse than a conflict: said first
                conflicts[s.key] = refused
            if plan.writes and s.key not in written:  # the scope's content did not change: a hand edit
                message = f"restored what was edited in Keycloak: {', '.join(plan.changed())}"
                rnd.note(s.key, Event("Normal", "DriftRepaired", message))
        rnd.verdicts.update(conflicts)
