"""Writes a realm's authentication flows and its flow bindings (core/replication/authentication_flow.py and
flow_bindings.py plan them).

Each round, inside a realm: its flows listed (one GET; a failure is reported on the flows only, never on the
realm), then the bindings that must go back to Keycloak's built-ins (a flow being deleted, a binding taken out
of spec.flowBindings) are written, then the flows, then the bindings to flows now Ready. A quiet round reads
the flows, the executions of each flow found ours (one GET each, plus one per config) and the realm twice (the
bindings before and after the flows), and writes nothing.

A flow is created with the id that marks it ours and built; a flow whose executions differ is rebuilt beside
the old one and swapped in: the Keycloak calls of both are in flow_builder.py.

A deleting flow the realm still binds after the bindings pass (the realm not Ready, so its bindings were not
written), or one an identity provider names (the provider's writer ran first: one deleted this round no
longer does), is not deleted, as Keycloak would refuse it every round: it stays Deleting, DeletionBlocked
naming the binding or the provider.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from keycloak_operator.core.replication import authentication_flow as af
from keycloak_operator.core.replication import flow_bindings as fb
from keycloak_operator.core.replication import flow_build, flow_content
from keycloak_operator.core.replication import idp_flow_rule as flow_rule
from keycloak_operator.core.replication import realm as realm_kind
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.round import Round
from keycloak_operator.core.replication.sync import Resource, ScopeOperation, ScopePlan, Verdict
from keycloak_operator.kernel.events import Event
from keycloak_operator.shell import metrics
from keycloak_operator.shell.admin.authentication_flow import AuthenticationFlowAdmin
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.admin.identity_provider import IdentityProviderAdmin
from keycloak_operator.shell.admin.keycloak import KeycloakAdmin
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.replication.executor import write_scope
from keycloak_operator.shell.replication.flow_builder import (
    limited,
    read_steps,
    without_leftovers,
    write_flow,
)

BINDINGS_KIND: Final = "RealmFlowBindings"  # the metrics' kind for a realm's binding writes
Obj = Mapping[str, Any]


class AuthenticationFlowWriter:
    def __init__(
        self,
        limiter: WriteLimiter,
        api_of: Callable[[KeycloakAdmin], AuthenticationFlowAdmin] = AuthenticationFlowAdmin,
        idps_of: Callable[[KeycloakAdmin], IdentityProviderAdmin] = IdentityProviderAdmin,
    ) -> None:
        self.limiter = limiter
        self.api_of = api_of
        self.idps_of = idps_of  # the realm's providers, read when a flow needs a rebuild

    async def sync(self, rnd: Round, at: InRealm) -> None:
        api = self.api_of(at.admin)
        declared = [c for c in at.children if c.key.kind == af.KIND]
        bindings = fb.declared_bindings(rnd.objects.get(at.realm.key) or {})
        if not declared and not bindings:
            return  # no flow of ours is recognisable (the marker is derived from a resource), none to bind
        try:
            observed = await api.flows(at.remote)
        except AdminError as e:
            _unreadable(rnd, declared, f"the realm's authentication flows could not be read: {e}")
            return
        verdict = rnd.verdicts.get(at.realm.key)
        bind = not at.realm.deleting and verdict is not None and verdict.phase == "Ready"
        if bind:  # first away from flows about to go, as Keycloak refuses to delete a bound flow
            states = {r.key: _state(r, None) for r in declared}
            await self._bindings(rnd, at, api, bindings, declared, observed, states, reverts_only=True)
        if declared:
            scope = await self._flows(rnd, at, api, declared, observed)
            if scope is None:
                return
            if any(scope.phases()):
                try:
                    observed = await api.flows(at.remote)
                except AdminError as e:  # the flows were written; only the bindings wait a round
                    _unreadable(rnd, declared, f"the realm's flows could not be read after writing: {e}")
                    return
            states = {r.key: _state(r, scope.verdicts.get(r.key)) for r in declared}
        else:
            states = {}
        if bind:
            await self._bindings(rnd, at, api, bindings, declared, observed, states, reverts_only=False)

    async def _bindings(
        self,
        rnd: Round,
        at: InRealm,
        api: AuthenticationFlowAdmin,
        bindings: Mapping[str, str],
        declared: Sequence[Resource],
        observed: Sequence[Obj],
        states: Mapping[ObjectKey, fb.FlowState],
        *,
        reverts_only: bool,
    ) -> None:
        """The realm's bindings planned from what Keycloak holds (one GET of the realm) and written in one
        PUT; a binding that cannot be made yet makes the realm Pending, naming the field. A failure is the
        realm's (its bindings are its own), the flows go on."""
        mine = [r for r in declared if r.parent == at.realm.key]
        alias_of = {
            key: str(f.get("alias"))
            for f in observed
            if (key := af.owner_of(at.remote, mine, f.get("id"))) is not None
        }
        owners = {str(f.get("alias")): af.owner_of(at.remote, declared, f.get("id")) for f in observed}
        ours = {alias for alias, key in owners.items() if key is not None}
        deleting = {r.key for r in declared if r.deleting}
        going = {alias for alias, key in owners.items() if key in deleting}
        flows = {r.key: fb.OwnFlow(alias_of.get(r.key), states[r.key]) for r in mine if r.key in states}
        try:
            current = await api.realm_bindings(at.remote)
            plan = fb.plan_bindings(
                bindings,
                at.realm.key.namespace,
                current,
                flows,
                ours,
                going=going,
                reverts_only=reverts_only,
            )
            if plan.body:
                await self.limiter.acquire(at.realm.key.namespace)
                # Read again after the limiter's wait: the attributes sent back are the realm's as of now.
                fresh = await api.realm_bindings(at.remote)
                await api.update_realm(at.remote, realm_kind.keeping_attributes(plan.body, fresh))
                metrics.replication_write(BINDINGS_KIND, "update")
                message = (
                    f"bound in Keycloak: {', '.join(f'{k}={v!r}' for k, v in sorted(plan.body.items()))}"
                )
                rnd.note(at.realm.key, Event("Normal", "FlowBound", message))
        except AdminError as e:
            rnd.write_failed(at.realm.key, f"flow bindings: {e}")
            rnd.verdicts[at.realm.key] = Verdict("Error", "FlowBindingFailed", f"flow bindings: {e}")
            return
        if plan.missing and not reverts_only:
            message = f"{'; '.join(plan.missing)}; the other bindings were written"
            rnd.verdicts[at.realm.key] = Verdict("Pending", "FlowNotReady", message)

    async def _flows(
        self,
        rnd: Round,
        at: InRealm,
        api: AuthenticationFlowAdmin,
        declared: list[Resource],
        observed: Sequence[Obj],
    ) -> ScopePlan | None:
        """Plan and write the realm's declared flows; None when they could not be read (said on each)."""
        try:
            observed, problems = await without_leftovers(
                limited(api, self.limiter, at.realm.key.namespace), at.remote, declared, observed
            )
        except AdminError as e:
            _unreadable(rnd, declared, f"a half-made flow could not be cleared: {e}")
            return None
        steps: dict[str, list[dict[str, Any]]] = {}
        planned = []
        for r in declared:  # each flow's executions; a failed read stays on that flow
            ids = {af.flow_id(at.remote, r.key, s) for s in af.SLOTS}
            flow = next((f for f in observed if f.get("id") in ids), None)
            try:
                if r.key in problems and r.problem is None:
                    planned.append(replace(r, problem=problems[r.key]))
                    continue
                if flow is not None:
                    steps[str(flow["id"])] = await read_steps(api, at.remote, flow)
                    stuck = flow_build.refused_in_place(flow, r, steps[str(flow["id"])])
                    if stuck is not None:
                        planned.append(replace(r, problem=stuck))
                        continue
                planned.append(r)
            except AdminError as e:
                problem = Verdict("Error", "ReadFailed", f"its executions could not be read: {e}")
                planned.append(replace(r, problem=problem))
        planned = await self._in_use(at, planned, observed, steps)
        try:
            blocked = await _blocked(api, self.idps_of(at.admin), at.remote, planned, observed)
        except AdminError as e:
            message = f"what uses the flows (the realm's bindings, its providers) could not be read: {e}"
            _unreadable(rnd, declared, message)
            return None
        scope = af.plan_flows(
            planned, observed, at.remote, steps, at.watched, revocation=at.revocation, blocked=blocked
        )
        alias_by_id = {str(f.get("id")): str(f.get("alias")) for f in observed}

        async def write(op: ScopeOperation) -> None:
            await write_flow(
                limited(api, self.limiter, op.key.namespace), at.remote, scope, op, steps, alias_by_id
            )

        await write_scope(rnd, scope, write, self.limiter, {c.key: c for c in declared})
        return scope

    async def _in_use(
        self,
        at: InRealm,
        planned: list[Resource],
        observed: Sequence[Obj],
        steps: Mapping[str, Sequence[Obj]],
    ) -> list[Resource]:
        """The flows a rebuild would replace that an identity provider uses, held with why
        (idp_flow_rule.rebuild_refusals); the realm's providers are read only when a flow needs a rebuild."""
        needing: dict[ObjectKey, str] = {}
        for r in planned:
            flow = next(
                (f for f in observed if af.slot_of(at.remote, r.key, str(f.get("id"))) is not None), None
            )
            seen = steps.get(str(flow.get("id"))) if flow is not None else None
            if (
                r.problem is None
                and not r.deleting
                and seen is not None
                and flow_content.executions_differ(r.content, seen)
            ):
                needing[r.key] = str(flow.get("alias")) if flow is not None else ""
        if not needing:
            return planned
        try:
            providers = await self.idps_of(at.admin).providers(at.remote)
        except AdminError as e:
            failed = Verdict("Error", "ReadFailed", f"the realm's identity providers could not be read: {e}")
            return [replace(r, problem=failed) if r.key in needing else r for r in planned]
        refused = flow_rule.rebuild_refusals(needing, providers)
        return [replace(r, problem=refused[r.key]) if r.key in refused else r for r in planned]


def _state(r: Resource, verdict: Verdict | None) -> fb.FlowState:
    if r.deleting:
        return "deleting"
    return "ready" if verdict is not None and verdict.phase == "Ready" else "waiting"


def _unreadable(rnd: Round, declared: Sequence[Resource], message: str) -> None:
    """The flows could not be read: each flow says so and keeps what it has (a deleting one its finalizer);
    the realm and its other kinds go on."""
    rnd.failed = True
    for r in declared:
        rnd.verdicts[r.key] = r.problem or Verdict("Error", "ReadFailed", message)


async def _blocked(
    api: AuthenticationFlowAdmin,
    idps: IdentityProviderAdmin,
    realm: str,
    declared: Sequence[Resource],
    observed: Sequence[Obj],
) -> dict[ObjectKey, str]:
    """Deleting flows Keycloak would refuse to delete, with why: the realm still binds them, or an identity
    provider names them (a GET of the realm and one of its providers, only when one is deleting)."""
    deleting = [r for r in declared if r.deleting and not r.preserve]
    if not deleting:
        return {}
    current = await api.realm_bindings(realm)
    providers = await idps.providers(realm)
    out: dict[ObjectKey, str] = {}
    aliases: dict[ObjectKey, str] = {}
    for f in observed:
        key = af.owner_of(realm, deleting, f.get("id"))
        if key is None:
            continue
        aliases[key] = str(f.get("alias"))
        fields = fb.bound_by(current, aliases[key])
        if fields:
            out[key] = (
                f"the realm binds flow {f.get('alias')!r} ({', '.join(fields)}): it is deleted once the "
                "binding names another flow"
            )
    for key, why in flow_rule.deletion_blocks(aliases, providers).items():
        out[key] = f"{out[key]}; {why}" if key in out else why
    return out
