"""Writes a realm's identity providers (core/replication/identity_provider.py plans them), then their mappers
(identity_provider_mappers.py).

Each provider's client secret is read from its Secret, by name, in the provider's own namespace (never one the
resource names: ADR 0012), only for a provider that may be written this round, and handed to the write that
needs it, in memory; nothing here logs or reports a value."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from keycloak_operator.core.replication import authentication_flow as af
from keycloak_operator.core.replication import identity_provider as idp
from keycloak_operator.core.replication import idp_flow_rule as flow_rule
from keycloak_operator.core.replication import idp_mappers, idp_secret
from keycloak_operator.core.replication.identity import ObjectKey
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
from keycloak_operator.shell.admin.authentication_flow import AuthenticationFlowAdmin
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.group import GroupAdmin
from keycloak_operator.shell.admin.identity_provider import IdentityProviderAdmin
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.kube import SECRETS, ApiError, Kube
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.replication.executor import write_scope
from keycloak_operator.shell.replication.identity_provider_mappers import (
    GroupsOf,
    mappers,
    revoke_held,
    with_mapper_rule,
)
from keycloak_operator.shell.replication.mapper_sync import sync_mappers


class IdentityProviderWriter:
    def __init__(
        self,
        kube: Kube,
        limiter: WriteLimiter,
        api_of: Callable[[KeycloakAdmin], IdentityProviderAdmin] = IdentityProviderAdmin,
        groups_of: GroupsOf = GroupAdmin,
        flows_of: Callable[[KeycloakAdmin], AuthenticationFlowAdmin] = AuthenticationFlowAdmin,
    ) -> None:
        self.kube = kube
        self.limiter = limiter
        self.api_of = api_of
        self.groups_of = groups_of  # the realm's groups, read for the mappers that hand one out
        self.flows_of = flows_of  # the realm's flows, read for a provider that names its first-login flow

    async def sync(self, rnd: Round, at: InRealm) -> None:
        """The realm's identity providers, diffed whole against what the realm holds; then their mappers."""
        declared = [c for c in at.children if c.key.kind == idp.KIND]
        if not declared:
            # As for groups: nothing is read when no KeycloakIdentityProvider targets the realm. A provider's
            # finalizer keeps it declared until its object is gone; one left behind by a finalizer removed
            # by hand is deleted as an orphan the next time a provider is declared in the realm.
            return
        api = self.api_of(at.admin)
        declared = await with_mapper_rule(at, declared, self.groups_of)
        declared = await self._flow_rule(at, declared)
        declared, secrets = await self._secrets(rnd, declared)
        try:
            observed = await api.providers(at.remote)
        except AdminError as e:
            # The providers' failure alone, as for groups: the realm and its other kinds go on.
            rnd.failed = True  # retried soon, as a failed write is
            unlisted = Verdict(
                "Error",
                "ReadFailed",
                f"the realm's identity providers could not be read, nothing was written: {e}",
            )
            for r in declared:
                rnd.verdicts[r.key] = r.problem or unlisted
            return
        scope = idp.plan_identity_providers(declared, observed, at.watched, revocation=at.revocation)
        by_alias = {str(o.get("alias")): o for o in observed if isinstance(o, Mapping)}

        async def write(op: ScopeOperation) -> None:
            await self._write(api, at.remote, scope, op, secrets, by_alias)

        await write_scope(rnd, scope, write, self.limiter, {c.key: c for c in declared})
        await sync_mappers(rnd, declared, scope, self.limiter, mappers(api, at.remote))
        await revoke_held(rnd, api, at, declared, scope, self.limiter, self.groups_of)

    async def _flow_rule(self, at: InRealm, declared: list[Resource]) -> list[Resource]:
        """Each provider whose first-login flow is another namespace's, held Forbidden (idp_flow_rule.py). The
        realm's flows are read only when a provider names one; if they cannot be read, those providers wait,
        the others go on."""
        asking = [
            r for r in declared if r.problem is None and not r.deleting and flow_rule.chosen_flow(r.content)
        ]
        if not asking:
            return declared
        try:
            flows = await self.flows_of(at.admin).flows(at.remote)
        except AdminError as e:
            failed = Verdict("Error", "ReadFailed", f"spec.{flow_rule.FIELD}: the realm's flows: {e}")
            keys = {r.key for r in asking}
            return [replace(r, problem=failed) if r.key in keys else r for r in declared]
        flow_resources = [c for c in at.children if c.key.kind == af.KIND]
        refused = flow_rule.flow_refusals(asking, flows, flow_resources, at.remote, at.realm.key)
        return [replace(r, problem=refused[r.key]) if r.key in refused else r for r in declared]

    async def _secrets(
        self, rnd: Round, declared: list[Resource]
    ) -> tuple[list[Resource], dict[ObjectKey, str]]:
        """Each provider that may be written, with its Secret's version in its content (or a problem naming
        the field), and the secrets by provider. One GET per such provider."""
        out: list[Resource] = []
        values: dict[ObjectKey, str] = {}
        for r in declared:
            ref = idp_secret.client_secret_ref(rnd.objects.get(r.key) or {})
            if ref is None or r.problem is not None or r.deleting:
                out.append(r)  # a deleting one needs no secret: its namespace's Secrets may be gone already
                continue
            try:
                secret = await self.kube.get(SECRETS, r.key.namespace, ref[0])
            except ApiError as e:  # refused or failing: this provider waits, the others go on
                where = f"{idp.SECRET_FIELD}: Secret {r.key.namespace}/{ref[0]}"
                out.append(
                    replace(r, problem=Verdict("Error", "SecretReadFailed", f"{where}: HTTP {e.status}"))
                )
                continue
            found, value = idp_secret.with_client_secret(r, ref, secret)
            out.append(found)
            if value is not None:
                values[r.key] = value
        return out, values

    @staticmethod
    async def _write(
        api: IdentityProviderAdmin,
        realm: str,
        scope: ScopePlan,
        op: ScopeOperation,
        secrets: Mapping[ObjectKey, str],
        observed: Mapping[str, Mapping[str, Any]],
    ) -> None:
        if isinstance(op, Delete):
            await api.delete(realm, op.remote_id)
        elif isinstance(op, Release):
            # Read again right before: the body is the provider as it is, less the marker.
            current = idp.observed_view(await api.get(realm, op.remote_id))
            await api.update(realm, op.remote_id, idp.release_body(current))
            # Its mappers stay too, without the key that would make the operator take them for its own.
            for w in idp_mappers.release_mappers(op.remote_id, await api.mappers(realm, op.remote_id)):
                await api.write_mapper(realm, op.remote_id, w.operation, w.remote_id, w.body)
        elif isinstance(op, Disable):
            await api.update(realm, op.remote_id, idp.disable_body(op.current))
        elif isinstance(op, Create):
            scope.remote_ids[op.key] = await api.create(realm, idp.upsert_body(op, secrets.get(op.key)))
        else:
            assert isinstance(op, Update)
            body = idp.upsert_body(op, secrets.get(op.key), observed.get(op.remote_id))
            await api.update(realm, op.remote_id, body)
            scope.remote_ids[op.key] = str(body["alias"])  # a changed alias renamed it
