"""Writes a realm's client scopes (core/replication/client_scope.py plans them), then their protocol mappers.
Runs before the clients' writer, so that a client attaching a scope declared in the same round finds it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keycloak_operator.core.replication import client_scope
from keycloak_operator.core.replication import token_authority as ta
from keycloak_operator.core.replication import token_mappers as tm
from keycloak_operator.core.replication.client_parts import MAPPER_HASH
from keycloak_operator.core.replication.plan import Create, Delete, Update
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import (
    Release,
    Resource,
    ScopeOperation,
    ScopePlan,
    Verdict,
)
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.replication.executor import write_scope
from keycloak_operator.shell.replication.mapper_revocation import revoke_refused_mappers
from keycloak_operator.shell.replication.mapper_sync import MapperPlan, Mappers, sync_mappers
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
        await sync_mappers(rnd, declared, scope, self.limiter, _mappers(at, by_id, authority))

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


def _mappers(at: InRealm, observed: Mapping[str, Mapping[str, Any]], authority: AuthorityFor) -> Mappers:
    """A scope's protocol mappers, in its representation; those the token authority refuses left out (and
    removed by revoke_refused_mappers if the operator wrote them)."""

    async def read(_s: Resource, remote: str, written: bool) -> Any:
        # A scope just written is read again: the listing predates the write.
        return await at.admin.client_scope(at.remote, remote) if written else observed[remote]

    def plan(s: Resource, current: Any) -> tuple[MapperPlan, Verdict | None]:
        content, refusals = tm.allowed_mappers(s.content, authority(s.key.namespace))
        return client_scope.plan_mappers(content, current), tm.one_verdict(refusals, "scope")

    async def write(remote: str, w: Any) -> None:
        await at.admin.write_scope_mapper(at.remote, remote, w.operation, w.remote_id, w.body)

    return Mappers(MAPPER_KIND, client_scope.MAPPERS, "protocol mappers", read, plan, write)
