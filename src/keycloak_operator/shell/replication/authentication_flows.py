"""Writes a realm's authentication flows (core/replication/authentication_flow.py plans them).

A flow is created with the id that marks it ours, then its executions are added in order, one POST each, and
read back once to set each one's requirement (Keycloak adds every execution DISABLED) and config. A flow whose
executions differ from the declared ones is rebuilt: its top-level executions deleted, then added again (the
module text of the planner says why). Only flows found ours have their executions read: one GET each, plus one
per authenticator config they hold.

A deleting flow the realm binds (browserFlow, directGrantFlow, ...) is not deleted: Keycloak would refuse, and
the binding is the realm owner's to change. It stays Deleting, DeletionBlocked naming the binding, until the
binding no longer names it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from keycloak_operator.core.reconcile import Event
from keycloak_operator.core.replication import authentication_flow as af
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.plan import Create, Delete, Update
from keycloak_operator.core.replication.round import Round, collect
from keycloak_operator.core.replication.sync import (
    Release,
    Resource,
    ScopeOperation,
    ScopePlan,
    Verdict,
    settle,
)
from keycloak_operator.shell import metrics
from keycloak_operator.shell.authentication_flow_admin import AuthenticationFlowApi
from keycloak_operator.shell.keycloak_admin import AdminError, KeycloakAdmin
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.replication.executor import execute

BINDINGS_KIND: Final = "RealmFlowBindings"  # the metrics' kind for a realm's binding writes


class AuthenticationFlowWriter:
    def __init__(
        self,
        limiter: WriteLimiter,
        api_of: Callable[[KeycloakAdmin], AuthenticationFlowApi] = AuthenticationFlowApi,
    ) -> None:
        self.limiter = limiter
        self.api_of = api_of

    async def sync(self, rnd: Round, at: InRealm) -> None:
        """The realm's declared flows, then its bindings (KeycloakRealm spec.flowBindings)."""
        api = self.api_of(at.admin)
        declared = [c for c in at.children if c.key.kind == af.KIND]
        if declared:  # none declared: no flow is recognisably ours (the marker is derived from a resource)
            await self._flows(rnd, at, api, declared)
        bindings = af.declared_bindings(rnd.objects.get(at.realm.key) or {})
        ready = rnd.verdicts.get(at.realm.key)
        if bindings and not at.realm.deleting and ready is not None and ready.phase == "Ready":
            await self._bindings(rnd, at, api, bindings)

    async def _bindings(
        self, rnd: Round, at: InRealm, api: AuthenticationFlowApi, bindings: Mapping[str, str]
    ) -> None:
        """Each declared binding naming a flow of the realm written (one GET of the realm and of its flows);
        one naming no flow makes the realm Pending, naming the field, the others written all the same."""
        current = await api.realm_bindings(at.remote)
        aliases = {str(f.get("alias")) for f in await api.flows(at.remote)}
        plan = af.plan_bindings(bindings, current, aliases)
        if plan.body:
            await self.limiter.acquire(at.realm.key.namespace)
            await api.update_realm(at.remote, plan.body)
            metrics.replication_write(BINDINGS_KIND, "update")
            message = f"bound in Keycloak: {', '.join(f'{k}={v!r}' for k, v in sorted(plan.body.items()))}"
            rnd.note(at.realm.key, Event("Normal", "FlowBound", message))
        if plan.missing:
            message = (
                f"{'; '.join(plan.missing)} not found in realm {at.remote}; the other bindings were written"
            )
            rnd.verdicts[at.realm.key] = Verdict("Pending", "FlowNotFound", message)

    async def _flows(
        self, rnd: Round, at: InRealm, api: AuthenticationFlowApi, declared: list[Resource]
    ) -> None:
        observed = await api.flows(at.remote)
        ids = {af.flow_id(at.remote, r.key) for r in declared}
        steps = {str(f["id"]): await _steps(api, at.remote, f) for f in observed if f.get("id") in ids}
        blocked = await self._blocked(api, at.remote, declared, observed, ids)
        scope = af.plan_flows(
            declared, observed, at.remote, steps, at.watched, revocation=at.revocation, blocked=blocked
        )

        async def write(op: ScopeOperation) -> None:
            await _write(api, at.remote, scope, op, steps)

        failed = await execute(scope, write, self.limiter, rnd)
        settle(scope, failed)
        collect(rnd, scope, {c.key: c for c in declared})

    @staticmethod
    async def _blocked(
        api: AuthenticationFlowApi,
        realm: str,
        declared: Sequence[Resource],
        observed: Sequence[Mapping[str, Any]],
        ids: set[str],
    ) -> dict[ObjectKey, str]:
        """Deleting flows the realm binds, with why (one GET of the realm, only when one is deleting)."""
        deleting = [r for r in declared if r.deleting and not r.preserve]
        if not deleting:
            return {}
        alias_of = {str(f.get("id")): str(f.get("alias")) for f in observed if f.get("id") in ids}
        current = await api.realm_bindings(realm)
        out: dict[ObjectKey, str] = {}
        for r in deleting:
            alias = alias_of.get(af.flow_id(realm, r.key))
            fields = af.bound_by(current, alias) if alias is not None else []
            if fields:
                out[r.key] = (
                    f"the realm binds flow {alias!r} ({', '.join(fields)}): it is deleted once the binding "
                    "names another flow"
                )
        return out


async def _steps(api: AuthenticationFlowApi, realm: str, flow: Mapping[str, Any]) -> list[dict[str, Any]]:
    listing = await api.executions(realm, str(flow.get("alias")))
    configs = {}
    for e in listing:
        config_id = e.get("authenticationConfig")
        if isinstance(config_id, str) and config_id:
            configs[config_id] = await api.config(realm, config_id)
    return af.observed_steps(listing, configs)


async def _write(
    api: AuthenticationFlowApi,
    realm: str,
    scope: ScopePlan,
    op: ScopeOperation,
    steps: Mapping[str, Sequence[Mapping[str, Any]]],
) -> None:
    if isinstance(op, Delete):
        await api.delete_flow(realm, op.remote_id)
    elif isinstance(op, Release):
        return  # the marker is the id, which cannot be taken off: the flow is left as it is
    elif isinstance(op, Create):
        flow_id = await api.create_flow(realm, af.create_body(op.content, realm, op.key))
        scope.remote_ids[op.key] = flow_id
        await _build(api, realm, op.content)
    elif isinstance(op, Update):
        await api.update_flow(realm, op.remote_id, af.update_body(op.content, op.remote_id))
        if op.remote_id not in steps or af.executions_differ(op.content, steps[op.remote_id]):
            alias = str(op.content["alias"])
            for e in await api.executions(realm, alias):
                if e.get("level") == 0:
                    await api.delete_execution(realm, str(e["id"]))
            await _build(api, realm, op.content)
    else:
        raise AdminError(0, f"{op.key}: no such write for an authentication flow")


async def _build(api: AuthenticationFlowApi, realm: str, content: Mapping[str, Any]) -> None:
    """Add the declared executions to the (empty) flow in order, then set requirements and configs."""
    for b in af.build_steps(content):
        if "subflow" in b.step:
            await api.add_subflow(realm, b.parent, dict(b.step))
        else:
            await api.add_authenticator(realm, b.parent, str(b.step["authenticator"]))
    alias = str(content["alias"])
    listed = await api.executions(realm, alias)
    declared = content.get(af.EXECUTIONS) or []
    if len(listed) != len(declared):
        raise AdminError(
            0, f"flow {alias}: {len(listed)} executions after the build, {len(declared)} declared"
        )
    for seen, want in zip(listed, declared, strict=True):
        if seen.get("requirement") != want["requirement"]:
            await api.set_requirement(realm, alias, {**seen, "requirement": want["requirement"]})
        config = want.get("config")
        if config is not None:
            await api.add_config(realm, str(seen["id"]), dict(config))
