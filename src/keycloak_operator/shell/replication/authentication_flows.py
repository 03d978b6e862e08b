"""Writes a realm's authentication flows and its flow bindings (core/replication/authentication_flow.py and
flow_bindings.py plan them).

Each round, inside a realm: its flows listed (one GET; a failure is reported on the flows only, never on the
realm), then the bindings that must go back to Keycloak's built-ins (a flow being deleted, a binding taken out
of spec.flowBindings) are written, then the flows, then the bindings to flows now Ready. A quiet round reads
the flows, the executions of each flow found ours (one GET each, plus one per config) and the realm twice (the
bindings before and after the flows), and writes nothing.

A flow is created with the id that marks it ours and built (`_build`): every execution added DISABLED, the
configs set, then the requirements from the last up. A flow whose executions differ is rebuilt beside the old
one and swapped in (`_swap`: flow_build.py's module text says why): at every moment the realm runs the old
complete flow or the new complete one.

A deleting flow the realm still binds after the bindings pass (the realm not Ready, so its bindings were not
written) is not deleted: it stays Deleting, DeletionBlocked naming the binding.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Final, cast

from keycloak_operator.core.reconcile import Event
from keycloak_operator.core.replication import authentication_flow as af
from keycloak_operator.core.replication import flow_bindings as fb
from keycloak_operator.core.replication import flow_build, flow_content
from keycloak_operator.core.replication import idp_flow_rule as flow_rule
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
from keycloak_operator.shell.identity_provider_admin import IdentityProviderApi
from keycloak_operator.shell.keycloak_admin import AdminError, KeycloakAdmin
from keycloak_operator.shell.ratelimit import WriteLimiter
from keycloak_operator.shell.replication.context import InRealm
from keycloak_operator.shell.replication.executor import execute

BINDINGS_KIND: Final = "RealmFlowBindings"  # the metrics' kind for a realm's binding writes
Obj = Mapping[str, Any]


class AuthenticationFlowWriter:
    def __init__(
        self,
        limiter: WriteLimiter,
        api_of: Callable[[KeycloakAdmin], AuthenticationFlowApi] = AuthenticationFlowApi,
        idps_of: Callable[[KeycloakAdmin], IdentityProviderApi] = IdentityProviderApi,
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
        api: AuthenticationFlowApi,
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
                await api.update_realm(at.remote, plan.body)
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
        api: AuthenticationFlowApi,
        declared: list[Resource],
        observed: Sequence[Obj],
    ) -> ScopePlan | None:
        """Plan and write the realm's declared flows; None when they could not be read (said on each)."""
        try:
            observed, problems = await self._without_leftovers(
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
                    steps[str(flow["id"])] = await _steps(api, at.remote, flow)
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
            blocked = await self._blocked(api, at.remote, planned, observed)
        except AdminError as e:
            _unreadable(rnd, declared, f"the realm's bindings could not be read: {e}")
            return None
        scope = af.plan_flows(
            planned, observed, at.remote, steps, at.watched, revocation=at.revocation, blocked=blocked
        )
        alias_by_id = {str(f.get("id")): str(f.get("alias")) for f in observed}

        async def write(op: ScopeOperation) -> None:
            await _write(
                limited(api, self.limiter, op.key.namespace), at.remote, scope, op, steps, alias_by_id
            )

        failed = await execute(scope, write, self.limiter, rnd)
        settle(scope, failed)
        collect(rnd, scope, {c.key: c for c in declared})
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

    @staticmethod
    async def _without_leftovers(
        api: AuthenticationFlowApi, realm: str, declared: Sequence[Resource], observed: Sequence[Obj]
    ) -> tuple[Sequence[Obj], dict[ObjectKey, Verdict]]:
        """The flows, once a rebuild interrupted half way has had its extra flow deleted (rare: the realm is
        read only when one resource has two flows), without a failed build's copy (kept:
        flow_build.failed_build); with the problem of each resource whose copy is kept or whose extra flow
        could not be deleted (that resource's only)."""
        doubled = [
            r
            for r in declared
            if sum(af.slot_of(realm, r.key, str(f.get("id"))) is not None for f in observed) > 1
        ]
        if not doubled:
            return observed, {}
        current = await api.realm_bindings(realm)
        bound = {str(current.get(f)) for f in fb.REALM_BINDINGS if current.get(f)}
        gone: set[str] = set()
        problems: dict[ObjectKey, Verdict] = {}
        for r in doubled:
            failed = flow_build.failed_build(observed, realm, r, bound)
            if failed is not None:
                gone.add(str(failed.get("id")))
                message = (
                    f"the rebuild of this spec failed (see the earlier event); the realm keeps the old flow, "
                    f"the half-built copy {failed.get('alias')!r} is kept so it is not retried each round: "
                    "change the spec to try again"
                )
                problems[r.key] = Verdict("Error", "RebuildFailed", message)
            for flow_id in flow_build.leftovers(observed, realm, [r], bound):
                gone.add(flow_id)  # out of the plan either way: the resource holds one flow there
                try:
                    await api.delete_flow(realm, flow_id)
                except AdminError as e:
                    message = f"a flow left by an interrupted rebuild could not be deleted: {e}"
                    problems[r.key] = Verdict("Error", "DeleteFailed", message)
        return [f for f in observed if str(f.get("id")) not in gone], problems

    @staticmethod
    async def _blocked(
        api: AuthenticationFlowApi, realm: str, declared: Sequence[Resource], observed: Sequence[Obj]
    ) -> dict[ObjectKey, str]:
        """Deleting flows the realm still binds, with why (a GET of the realm, only when one is deleting)."""
        deleting = [r for r in declared if r.deleting and not r.preserve]
        if not deleting:
            return {}
        current = await api.realm_bindings(realm)
        out: dict[ObjectKey, str] = {}
        for f in observed:
            key = af.owner_of(realm, deleting, f.get("id"))
            fields = fb.bound_by(current, str(f.get("alias"))) if key is not None else []
            if key is not None and fields:
                out[key] = (
                    f"the realm binds flow {f.get('alias')!r} ({', '.join(fields)}): it is deleted once the "
                    "binding names another flow"
                )
        return out


# The API's writes: each takes a write-limiter token (`limited`).
_WRITES: Final = frozenset(
    {
        "create_flow",
        "update_flow",
        "delete_flow",
        "add_authenticator",
        "add_subflow",
        "set_requirement",
        "add_config",
        "update_config",
        "update_realm",
        "delete_execution",
    }
)


class _Limited:
    def __init__(self, api: AuthenticationFlowApi, limiter: WriteLimiter, namespace: str) -> None:
        self._api, self._limiter, self._namespace = api, limiter, namespace

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._api, name)
        if name not in _WRITES:
            return attr

        async def write(*args: Any) -> Any:
            await self._limiter.acquire(self._namespace)
            return await attr(*args)

        return write


def limited(api: AuthenticationFlowApi, limiter: WriteLimiter, namespace: str) -> AuthenticationFlowApi:
    """`api` with a write-limiter token taken by `namespace` before each write: a create or a rebuild is many
    writes (each execution added, its config, its requirement, the swap), each paid for, not only the
    operation's first (the executor's)."""
    return cast(AuthenticationFlowApi, _Limited(api, limiter, namespace))


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


async def _steps(api: AuthenticationFlowApi, realm: str, flow: Obj) -> list[dict[str, Any]]:
    listing = await api.executions(realm, str(flow.get("alias")))
    configs = {}
    for e in listing:
        config_id = e.get("authenticationConfig")
        if isinstance(config_id, str) and config_id:
            configs[config_id] = await api.config(realm, config_id)
    return flow_content.observed_steps(listing, configs)


async def _write(
    api: AuthenticationFlowApi,
    realm: str,
    scope: ScopePlan,
    op: ScopeOperation,
    steps: Mapping[str, Sequence[Obj]],
    alias_by_id: Mapping[str, str],
) -> None:
    if isinstance(op, Delete):
        await api.delete_flow(realm, op.remote_id)
    elif isinstance(op, Release):
        return  # the marker is the id, which cannot be taken off: the flow is left as it is
    elif isinstance(op, Create):
        flow_id = await api.create_flow(realm, flow_build.create_body(op.content, realm, op.key))
        scope.remote_ids[op.key] = flow_id
        try:
            await _build(api, realm, op.content)
        except AdminError as e:
            # Refused (an alias held by a flow the operator cannot see, say): the half-made flow, never
            # bound, is tagged a failed build of this spec, so it is not rebuilt every round
            # (flow_build.refused_in_place); anything else (a 5xx, a timeout) leaves it to be rebuilt next
            # round.
            await _tag_failed(api, realm, op.content, flow_id, e)
            raise _explained(e) from e
    elif isinstance(op, Update):
        if op.remote_id in steps and not flow_content.executions_differ(op.content, steps[op.remote_id]):
            await api.update_flow(realm, op.remote_id, flow_build.update_body(op.content, op.remote_id))
        else:
            old_alias = alias_by_id.get(op.remote_id, str(op.content["alias"]))
            scope.remote_ids[op.key] = await _swap(api, realm, op, old_alias)
    else:
        raise AdminError(0, f"{op.key}: no such write for an authentication flow")


async def _swap(api: AuthenticationFlowApi, realm: str, op: Update, old_alias: str) -> str:
    """Build the declared flow beside the old one (the other id slot, staged aliases), move the realm's
    bindings of the old one to it, delete the old one, then give the new one its declared aliases. Its id."""
    slot = 1 - (af.slot_of(realm, op.key, op.remote_id) or 0)
    staged = flow_build.staged(op.content, slot)
    new_id = await api.create_flow(realm, flow_build.create_body(staged, realm, op.key, slot))
    try:
        await _build(api, realm, staged)
    except AdminError as e:
        # Refused by Keycloak: the copy is tagged a failed build of this spec and kept
        # (flow_build.failed_build), so the same spec is not rebuilt every round; if even the tag cannot be
        # written, or the error was not a refusal (a 5xx, a timeout, a dropped connection), it is a leftover,
        # deleted and retried next round.
        await _tag_failed(api, realm, staged, new_id, e, of=op.content)
        raise _explained(e) from e
    bound = fb.bound_by(await api.realm_bindings(realm), old_alias)
    if bound:
        await api.update_realm(realm, dict.fromkeys(bound, str(staged["alias"])))
    await api.delete_flow(realm, op.remote_id)
    await api.update_flow(realm, new_id, flow_build.update_body(op.content, new_id))
    try:
        for rename in flow_build.renames(await api.executions(realm, str(op.content["alias"])), op.content):
            if rename.what == "flow":
                await api.update_flow(realm, rename.remote_id, dict(rename.body))
            else:
                await api.update_config(realm, rename.remote_id, dict(rename.body))
    except AdminError as e:
        # A declared subflow or config alias held by a flow the operator does not manage (409): the new flow
        # is complete and bound, with some staged aliases left. Tagged a failed build of this spec, it stays
        # as it is (flow_build.refused_in_place) instead of being rebuilt, and renamed again, every round.
        await _tag_failed(api, realm, op.content, new_id, e)
        raise _explained(e) from e
    return new_id


class BuildRefused(AdminError):
    """Keycloak took every step of a build but the flow does not hold what was declared."""


def _refused(e: AdminError) -> bool:
    """Whether Keycloak refused a write (4xx, or a build it took but got wrong): worth remembering as a failed
    build. A 5xx, a timeout or a dropped connection (status 0) is not: the write is retried next round."""
    return isinstance(e, BuildRefused) or 400 <= e.status < 500


def _explained(e: AdminError) -> AdminError:
    if e.status != 409:
        return e
    return AdminError(
        e.status,
        f"{e}: an alias of this flow is held by a flow the operator does not manage; the flow is not rebuilt "
        "until the spec changes",
    )


async def _tag_failed(
    api: AuthenticationFlowApi, realm: str, content: Obj, flow_id: str, e: AdminError, of: Obj | None = None
) -> None:
    """On a refusal, give the flow `flow_id` (holding `content`'s alias) the failed-build tag of `of` (the
    declared content; `content` itself by default). If even the tag cannot be written, it stays untagged."""
    if not _refused(e):
        return
    failed = {
        **flow_build.update_body(content, flow_id),
        "description": flow_build.build_tag(of or content, failed=True),
    }
    with contextlib.suppress(AdminError):
        await api.update_flow(realm, flow_id, failed)


async def _build(api: AuthenticationFlowApi, realm: str, content: Obj) -> None:
    """Make the (empty) flow hold the declared executions: each added at its parent's end (Keycloak adds it
    DISABLED), the configs set, then the requirements from the last up (flow_build.requirement_order)."""
    for b in flow_build.build_steps(content):
        if "subflow" in b.step:
            await api.add_subflow(realm, b.parent, dict(b.step))
        else:
            await api.add_authenticator(realm, b.parent, str(b.step["authenticator"]))
    alias = str(content["alias"])
    listed = await api.executions(realm, alias)
    declared = content.get(flow_content.EXECUTIONS) or []
    if len(listed) != len(declared):
        raise BuildRefused(
            0, f"flow {alias}: {len(listed)} executions after the build, {len(declared)} declared"
        )
    for seen, want in zip(listed, declared, strict=True):
        if want.get("config") is not None:
            await api.add_config(realm, str(seen["id"]), dict(want["config"]))
    for i in flow_build.requirement_order(len(declared)):
        seen, want = listed[i], declared[i]
        if seen.get("requirement") != want["requirement"]:
            await api.set_requirement(realm, alias, {**seen, "requirement": want["requirement"]})
