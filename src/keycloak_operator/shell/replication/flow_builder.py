"""The Keycloak calls that build an authentication flow (shell/replication/authentication_flows.py runs the
round; core/replication/flow_build.py plans each build).

A flow is created with the id that marks it ours and built (`_build`): every execution added DISABLED, the
configs set, then the requirements from the last up. A flow whose executions differ is rebuilt beside the old
one and swapped in (`_swap`: flow_build.py's module text says why): at every moment the realm runs the old
complete flow or the new complete one. A rebuild interrupted half way leaves an extra flow, deleted before the
round plans (`without_leftovers`). Each write takes a write-limiter token (`limited`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from keycloak_operator.core.replication import authentication_flow as af
from keycloak_operator.core.replication import flow_bindings as fb
from keycloak_operator.core.replication import flow_build, flow_content
from keycloak_operator.core.replication import realm as realm_kind
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.plan import Create, Delete, Update
from keycloak_operator.core.replication.sync import Release, Resource, ScopeOperation, ScopePlan, Verdict
from keycloak_operator.shell.admin.authentication_flow import AuthenticationFlowAdmin
from keycloak_operator.shell.admin.connection import AdminError
from keycloak_operator.shell.ratelimit import WriteLimiter

Obj = Mapping[str, Any]

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
    def __init__(self, api: AuthenticationFlowAdmin, limiter: WriteLimiter, namespace: str) -> None:
        self._api, self._limiter, self._namespace = api, limiter, namespace

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._api, name)
        if name not in _WRITES:
            return attr

        async def write(*args: Any) -> Any:
            await self._limiter.acquire(self._namespace)
            return await attr(*args)

        return write


def limited(api: AuthenticationFlowAdmin, limiter: WriteLimiter, namespace: str) -> AuthenticationFlowAdmin:
    """`api` with a write-limiter token taken by `namespace` before each write: a create or a rebuild is many
    writes (each execution added, its config, its requirement, the swap), each paid for, not only the
    operation's first (the executor's)."""
    return cast(AuthenticationFlowAdmin, _Limited(api, limiter, namespace))


async def without_leftovers(
    api: AuthenticationFlowAdmin, realm: str, declared: Sequence[Resource], observed: Sequence[Obj]
) -> tuple[Sequence[Obj], dict[ObjectKey, Verdict]]:
    """The flows, once a rebuild interrupted half way has had its extra flow deleted (rare: the realm is
    read only when one resource has two flows), without a failed build's copy (kept: flow_build.failed_build);
    with the problem of each resource whose copy is kept or whose extra flow could not be deleted (that
    resource's only)."""
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


async def read_steps(api: AuthenticationFlowAdmin, realm: str, flow: Obj) -> list[dict[str, Any]]:
    """A flow's executions as observed (flow_content.observed_steps): one GET, plus one per config."""
    listing = await api.executions(realm, str(flow.get("alias")))
    configs = {}
    for e in listing:
        config_id = e.get("authenticationConfig")
        if isinstance(config_id, str) and config_id:
            configs[config_id] = await api.config(realm, config_id)
    return flow_content.observed_steps(listing, configs)


async def write_flow(
    api: AuthenticationFlowAdmin,
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


async def _swap(api: AuthenticationFlowAdmin, realm: str, op: Update, old_alias: str) -> str:
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
    listed = await api.realm_bindings(realm)
    bound = fb.bound_by(listed, old_alias)
    if bound:
        moved = dict.fromkeys(bound, str(staged["alias"]))
        await api.update_realm(realm, realm_kind.keeping_attributes(moved, listed))
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
    api: AuthenticationFlowAdmin, realm: str, content: Obj, flow_id: str, e: AdminError, of: Obj | None = None
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


async def _build(api: AuthenticationFlowAdmin, realm: str, content: Obj) -> None:
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
