"""Writes a realm's clients (core/replication/client.py plans them), then their Secrets."""

from __future__ import annotations

from typing import Any

from keycloak_operator.core.replication import client, client_secret
from keycloak_operator.core.replication import client_parts as parts
from keycloak_operator.core.replication import token_mappers as tm
from keycloak_operator.core.replication.plan import Create, Delete, Update
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import (
    Disable,
    Release,
    Resource,
    ScopeOperation,
    ScopePlan,
    Verdict,
)
from keycloak_operator.kernel.events import Event
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.kube import SECRETS, ApiError, Kube
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.client_parts import KIND as PARTS_KIND
from keycloak_operator.shell.replication.client_parts import (
    realm_scopes,
    sync_parts,
    with_missing_scopes,
)
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.replication.executor import write_scope
from keycloak_operator.shell.replication.fan_out import fan_out
from keycloak_operator.shell.replication.mapper_revocation import revoke_refused_mappers
from keycloak_operator.shell.replication.service_accounts import (
    owners_after,
    strip_before_release,
    sync_service_accounts,
)
from keycloak_operator.shell.replication.token_reads import (
    AuthorityFor,
    authority_for,
    claims_only,
    realm_view,
)
from keycloak_operator.shell.settings import DEFAULT_CONCURRENCY


class ClientWriter:
    def __init__(self, kube: Kube, limiter: WriteLimiter, concurrency: int = DEFAULT_CONCURRENCY) -> None:
        self.kube = kube
        self.limiter = limiter
        self.concurrency = concurrency  # per-client steps in flight (fan_out.py)

    async def sync(self, rnd: Round, at: InRealm) -> None:
        """The realm's clients, diffed whole against what the realm holds; then their Secrets."""
        declared = [c for c in at.children if c.key.kind == client.KIND]
        scopes = await realm_scopes(at.admin, at.remote, declared)
        declared = with_missing_scopes(declared, scopes)
        observed = await at.admin.clients(at.remote)
        scope = client.plan_clients(declared, observed, at.watched, revocation=at.revocation)

        async def write(op: ScopeOperation) -> None:
            await self._write(at.admin, at.remote, scope, op, observed)

        failed = await write_scope(rnd, scope, write, self.limiter, {c.key: c for c in declared})
        by_id = {str(c.get("id")): c for c in observed if isinstance(c, dict)}
        authority = await self._authority(at, declared, scope, observed, set(failed))
        # Each phase whole before the next (a client's roles before composites naming them, every client
        # written before service accounts map their roles); inside a phase, clients side by side.
        conflicts = await sync_parts(
            rnd,
            at.admin,
            self.limiter,
            at.reads,
            at.remote,
            declared,
            scope,
            by_id,
            scopes,
            self.concurrency,
            authority,
        )

        async def delete_mapper(remote: str, mapper_id: str, name: str) -> None:
            await at.admin.write_client_part(at.remote, remote, "mapper", "delete", name, mapper_id, None)

        await revoke_refused_mappers(
            rnd, declared, scope, by_id, authority, self.limiter, delete_mapper, PARTS_KIND
        )
        refused = await sync_service_accounts(
            rnd, at, self.limiter, declared, scope, observed, set(failed), self.concurrency
        )
        await self._secrets(rnd, at.admin, at.remote, declared, scope)
        # A refused service-account role or a conflict leaves the client written (its Secret too): said on
        # its status only if nothing worse was.
        for key, verdict in {**conflicts, **refused}.items():
            if rnd.verdicts[key].phase == "Ready":
                rnd.verdicts[key] = verdict

    @staticmethod
    async def _authority(
        at: InRealm, declared: list[Resource], scope: ScopePlan, observed: list[Any], failed: set[Any]
    ) -> AuthorityFor:
        """The token authority for the clients' mappers, who owns which client as of after this round's
        client writes (a client created this round is its namespace's already). The realm's roles are read
        only when a mapper declared or held by the operator names a role or an audience."""
        if not tm.must_read_realm((c.content for c in declared), observed, parts.MAPPER_HASH):
            return claims_only(at)
        view = await realm_view(at, owners_after(declared, scope, observed, failed))
        return authority_for(at, view)

    async def _write(
        self, admin: KeycloakAdmin, realm: str, scope: ScopePlan, op: ScopeOperation, observed: list[Any]
    ) -> None:
        if isinstance(op, Delete):
            await admin.delete_client(realm, op.remote_id)
        elif isinstance(op, Release):
            # Read again right before: the body is the client as it is, less the marker. Roles that need a
            # grant go first: once unmarked, no grant covers the client.
            current = next((c for c in await admin.clients(realm) if c.get("id") == op.remote_id), None)
            if current is not None:
                await strip_before_release(admin, realm, self.limiter, op.key, current, observed)
                await admin.update_client(realm, op.remote_id, client.release_body(current))
        elif isinstance(op, Disable):
            await admin.update_client(realm, op.remote_id, client.disable_body(op.current))
        elif isinstance(op, Create):
            scope.remote_ids[op.key] = await admin.create_client(realm, client.upsert_body(op))
        else:
            assert isinstance(op, Update)
            await admin.update_client(realm, op.remote_id, client.upsert_body(op))

    async def _secrets(
        self, rnd: Round, admin: KeycloakAdmin, realm: str, clients: list[Resource], scope: ScopePlan
    ) -> None:
        """A confidential client's secret goes to a Secret in its namespace, owned by the client resource.
        Read from Keycloak only when the Secret is missing, names another client, or the client was just
        written: a quiet round GETs each such Secret by name and writes nothing. (By name, not a LIST per
        namespace: the operator's role then needs no `list` on Secrets, which would hand it every Secret of
        every watched namespace in one call.)"""
        written = {op.key for op in scope.plan.creates} | {op.key for op in scope.plan.updates}

        async def one(c: Resource) -> Verdict | Event | None:
            """What to tell the round: a verdict, the Secret's event, or nothing (in sync)."""
            obj = rnd.objects[c.key]
            secret_name = client_secret.client_secret_name(obj)
            remote = scope.remote_ids.get(c.key)
            if (
                secret_name is None
                or remote is None
                or not client_secret.secret_due(c, remote, rnd.verdicts.get(c.key))
            ):
                return None
            try:
                existing = await self.kube.get(SECRETS, c.key.namespace, secret_name)
            except ApiError as e:  # this client's problem: raised, it would cancel the others' steps
                return Verdict("Error", "SecretReadFailed", f"Secret {secret_name}: {e}")
            step = client_secret.secret_step(obj, secret_name, existing, remote, c.key in written)
            if isinstance(step, Verdict):
                return step
            if step == "keep":
                return None
            try:
                value = await admin.client_secret(realm, remote)
            except AdminError as e:
                return Verdict("Error", "SecretReadFailed", str(e))
            body = client_secret.secret_body(obj, secret_name, c.natural_key, value, remote)
            if existing is not None and existing.get("data") == body["data"]:
                return None
            try:
                await self.kube.apply(body)
            except ApiError as e:  # a terminating namespace, say: this client's problem, not the round's
                return Verdict("Error", "SecretWriteFailed", str(e))
            return client_secret.secret_written(secret_name)

        told_all = await fan_out(clients, one, self.concurrency, fair_by=lambda c: c.key.namespace)
        for c, told in zip(clients, told_all, strict=True):
            if isinstance(told, Verdict):
                # A read or write that failed is retried soon; a Secret that is someone else's waits for
                # its owner to act (SecretNotOwned), as before.
                rnd.failed = rnd.failed or told.reason in ("SecretReadFailed", "SecretWriteFailed")
                rnd.verdicts[c.key] = told
            elif told is not None:
                rnd.note(c.key, told)
