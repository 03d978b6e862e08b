"""The authentication flow kind: a KeycloakAuthenticationFlow's representation, its scope (every top-level
flow of one realm) and how the operator knows its own flows. What a flow holds and how it compares with what
Keycloak lists is in flow_content.py; how a flow's executions are (re)built and a rebuild swapped in, in
flow_build.py.

**The marker is the flow's id.** AuthenticationFlowRepresentation has no attributes; its description is the
user's; its alias is user-visible (a prefix would show in every binding); and an authenticator config made to
carry the marker reads back masked (Keycloak 26.7.3 masks every value of a config whose provider it does not
know: checked on the real server). But Keycloak keeps the `id` a flow is created with (checked on 26.7.3: a
POST with an `id` makes the flow with that id). So a flow is created with one of two ids `flow_id(realm, key,
slot)`, name-based UUIDs (uuid5) of the realm, the resource's identity (kind, namespace, name) and a slot (0
or 1: a rebuild makes the new flow in the other slot, flow_build.py): a flow whose id is one derived for a
declared resource is that resource's. A hand-made flow gets a random id and is never taken for one of ours; a
flow of another namespace has another id, so no namespace reaches it. Flows are not adopted (their id cannot
be changed).

There is no hash to read back either, so a flow found with a derived id is taken as written as declared and
then compared field by field (alias, description, providerId) and execution by execution: any difference is
drift, repaired by an update. A spec change is found the same way; the hash the resource's status recorded at
its last write tells the two apart in the events (Updated, not DriftRepaired).

A flow whose executions differ is rebuilt beside the old one and swapped in, never patched in place
(flow_build.py says why and how). The realm's bindings (KeycloakRealm spec.flowBindings) are planned in
flow_bindings.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Container, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import replace
from typing import Any, Final

from keycloak_operator.core.replication.flow_content import (
    EXECUTIONS,
    config_aliases,
    executions_differ,
    flow_content,
    subflow_aliases,
)
from keycloak_operator.core.replication.identity import ObjectKey, told_to
from keycloak_operator.core.replication.in_realm import declared
from keycloak_operator.core.replication.marker import content_hash, marker_attributes
from keycloak_operator.core.replication.plan import Update
from keycloak_operator.core.replication.resources import RealmTarget
from keycloak_operator.core.replication.sync import (
    NO_REVOCATION,
    Resource,
    Revocation,
    ScopePlan,
    Verdict,
    plan_scope,
)
from keycloak_operator.kernel import names
from keycloak_operator.models.authentication_flow import BUILT_IN_FLOWS, KeycloakAuthenticationFlowSpec

KIND: Final = names.AUTHENTICATION_FLOW_KIND
# Keycloak's own top-level flows in every realm: never ours, never adopted.
BUILT_INS: Final = BUILT_IN_FLOWS
_ID_SPACE: Final = uuid.UUID("6f1c2b9e-3d0a-5c4e-9b7a-1e2d3c4b5a69")  # this operator's uuid5 namespace
SLOTS: Final = (0, 1)
# Flows one namespace may declare in one realm: each is read every round (its executions, its configs) and a
# rebuild writes each execution several times; the ones past it (newest first) are refused.
FLOWS_PER_NAMESPACE: Final = 50

Obj = Mapping[str, Any]


def flow_id(realm: str, key: ObjectKey, slot: int = 0) -> str:
    """The id the flow of `key` gets in `realm` in `slot` (ids are unique across a server's realms, so the
    realm is in it; slot 0 keeps the id of the first release of this kind)."""
    name = f"{realm}\x00{key.kind}/{key.namespace}/{key.name}" + (f"\x00{slot}" if slot else "")
    return str(uuid.uuid5(_ID_SPACE, name))


def slot_of(realm: str, key: ObjectKey, remote_id: str) -> int | None:
    return next((s for s in SLOTS if flow_id(realm, key, s) == remote_id), None)


def owner_of(realm: str, flows: Iterable[Resource], remote_id: object) -> ObjectKey | None:
    """The declared resource a flow's id says it belongs to (any slot), if any."""
    return next((r.key for r in flows if slot_of(realm, r.key, str(remote_id)) is not None), None)


def flow_resource(
    obj: Obj, realms: Mapping[ObjectKey, RealmTarget], unreadable: AbstractSet[str] = frozenset()
) -> Resource:
    """A flow, with a problem when its realm is unknown or does not allow its namespace (flowNamespaces:
    by default only the realm's own namespace declares flows)."""
    d = declared(
        obj, KeycloakAuthenticationFlowSpec, realms, unreadable, "authentication flows", "flowNamespaces"
    )
    if isinstance(d, Resource):
        return d
    return Resource(d.key, d.spec.alias, flow_content(d.spec), problem=d.problem, parent=d.parent, **d.flags)


def observed_view(flow: Obj, realm: str, declared: Iterable[Resource]) -> dict[str, Any]:
    """A flow as listed, with the marker its id stands for in `attributes` (none for a flow no declared
    resource has that id for: a hand-made flow, a built-in, a gone resource's)."""
    view = {k: v for k, v in flow.items() if k != "authenticationExecutions"}
    for r in declared:
        if slot_of(realm, r.key, str(flow.get("id"))) is not None and not flow.get("builtIn"):
            # Taken as written as declared: the field comparison finds what differs (module text).
            view["attributes"] = marker_attributes(r.key, content_hash(r.content))
            break
    return view


def _told(holder: ObjectKey | str, reader: ObjectKey) -> str:
    """A holder as a message on `reader` names it: another namespace's resource only by kind."""
    return holder if isinstance(holder, str) else told_to(holder, reader.namespace)


def alias_claims(
    flows: Sequence[Resource],
    observed: Iterable[Obj],
    realm: str,
    executions: Mapping[str, Sequence[Obj]] | None = None,
) -> dict[ObjectKey, Verdict]:
    """Subflow and config aliases are unique in a realm (Keycloak answers 409 to a second one), so each is a
    natural key: the resource whose flow holds it in Keycloak keeps it (`executions`: the observed steps of
    each flow found ours, by id), as plan_scope does for flow aliases, so an older resource can never freeze
    another's flow by declaring its aliases; an alias nobody holds goes to the first resource declaring it
    (oldest first). A resource whose subflow alias is another resource's flow or subflow alias or a flow's
    that is not ours, whose flow alias is another's subflow alias, or whose config alias is another's, is a
    Conflict, nothing written for it. (Two resources' flow aliases are plan_scope's natural keys.)"""
    nobody = "a flow the operator did not create"
    seen = list(observed)
    held: dict[str, ObjectKey | str] = {  # flow aliases -> who holds them
        str(f.get("alias")): nobody for f in seen if owner_of(realm, flows, f.get("id")) is None
    }
    subflows: dict[str, ObjectKey | str] = {}
    configs: dict[str, ObjectKey | str] = {}
    for f in seen:  # the aliases held in Keycloak, by the resource whose flow holds them
        owner = owner_of(realm, flows, f.get("id"))
        if owner is None:
            continue
        for step in (executions or {}).get(str(f.get("id")), ()):
            if step.get("subflow"):
                subflows.setdefault(str(step["subflow"]), owner)
            config = step.get("config")
            if isinstance(config, Mapping) and config.get("alias"):
                configs.setdefault(str(config["alias"]), owner)
    out: dict[ObjectKey, Verdict] = {}
    for r in sorted(flows, key=lambda r: (r.created, r.key)):
        if r.deleting or r.problem is not None or not r.content:
            continue
        me: ObjectKey | str = r.key
        top = str(r.content["alias"])
        clash = [
            f"subflow alias {a!r} is already held by {_told(held.get(a) or subflows[a], r.key)}"
            for a in subflow_aliases(r.content)
            if held.get(a, me) != me or subflows.get(a, me) != me
        ]
        if subflows.get(top, me) != me:
            clash.append(f"alias {top!r} is already a subflow of {_told(subflows[top], r.key)}")
        clash += [
            f"config alias {a!r} is already held by {_told(configs[a], r.key)}"
            for a in config_aliases(r.content)
            if configs.get(a, me) != me
        ]
        if clash:
            out[r.key] = Verdict("Conflict", "Conflict", f"{'; '.join(clash)}; nothing was written")
            continue
        held.setdefault(top, me)
        for a in subflow_aliases(r.content):
            subflows.setdefault(a, me)
        for a in config_aliases(r.content):
            configs.setdefault(a, me)
    return out


def over_the_cap(flows: Sequence[Resource]) -> dict[ObjectKey, Verdict]:
    """The flows past FLOWS_PER_NAMESPACE of their namespace in the realm (the oldest are kept): an Error on
    each, nothing written for it (one it made before stays: a flow past the cap is not deleted)."""
    out: dict[ObjectKey, Verdict] = {}
    count: dict[str, int] = {}
    for r in sorted(flows, key=lambda r: (r.created, r.key)):
        if r.deleting:
            continue
        count[r.key.namespace] = count.get(r.key.namespace, 0) + 1
        if count[r.key.namespace] > FLOWS_PER_NAMESPACE:
            message = (
                f"namespace {r.key.namespace} declares more than {FLOWS_PER_NAMESPACE} authentication flows "
                "for this realm; this one (among the newest) is not written"
            )
            out[r.key] = Verdict("Error", "TooManyFlows", message, revocable=False)
    return out


def plan_flows(
    flows: Sequence[Resource],
    observed: Iterable[Obj],
    realm: str,
    executions: Mapping[str, Sequence[Obj]],
    namespaces: Container[str] | None = None,
    *,
    revocation: Revocation = NO_REVOCATION,
    blocked: Mapping[ObjectKey, str] | None = None,
) -> ScopePlan:
    """Every top-level flow of one realm. `blocked`: deleting flows the realm still binds, with why.
    `executions`: the observed steps (`observed_steps`) of each flow found ours, by id; a flow in step whose
    executions differ gets an update (a rebuild) and its drift."""
    seen = [o for o in observed if isinstance(o, Mapping)]
    capped = over_the_cap(flows)
    flows = [replace(r, problem=capped[r.key]) if r.key in capped and r.problem is None else r for r in flows]
    claims = alias_claims(flows, seen, realm, executions)
    flows = [replace(r, problem=claims[r.key]) if r.key in claims else r for r in flows]
    listed = [observed_view(o, realm, flows) for o in seen]
    scope = plan_scope(
        KIND,
        flows,
        listed,
        remote_id_of="id",
        natural_key_of="alias",
        subresources=(EXECUTIONS, "topLevel", "builtIn"),
        namespaces=namespaces,
        revocation=revocation,
        never_adopt=BUILT_INS,
        blocked=blocked,
    )
    scope.disables = []  # a flow has no switch to turn off: revocation keeps it until it deletes it
    plan = scope.plan
    writing = {c.key for c in plan.creates} | {u.key for u in plan.updates} | {d.key for d in plan.deletes}
    for r in flows:
        remote = scope.remote_ids.get(r.key)
        verdict = scope.verdicts.get(r.key)
        if r.deleting or remote is None or r.key in writing or verdict is None or verdict.phase != "Ready":
            continue
        if remote in executions and executions_differ(r.content, executions[remote]):
            digest = content_hash(r.content)
            scope.plan.updates.append(Update(r.key, remote, r.content, digest, digest))
            scope.drift[r.key] = [EXECUTIONS]
    for r in flows:
        # The plan is the same either way; only the event differs: what the spec changed since the last write
        # is an update, not a repair of a hand edit (a resource with no hash recorded is taken as in step).
        if r.written_hash is not None and r.written_hash != content_hash(r.content):
            scope.drift.pop(r.key, None)
    scope.plan.updates.sort(key=lambda op: op.key)
    return scope
