"""The authentication flow kind: a KeycloakAuthenticationFlow's representation, its scope (every top-level
flow of one realm), how the operator knows its own flows, and the steps that (re)build a flow's executions.

**The marker is the flow's id.** AuthenticationFlowRepresentation has no attributes; its description is the
user's; its alias is user-visible (a prefix would show in every binding); and an authenticator config made to
carry the marker reads back masked (Keycloak 26.7.3 masks every value of a config whose provider it does not
know: checked on the real server). But Keycloak keeps the `id` a flow is created with (checked on 26.7.3: a
POST with an `id` makes the flow with that id). So a flow is created with the id `flow_id(realm, key)`, a
name-based UUID (uuid5) of the realm and the resource's identity (kind, namespace, name): a flow whose id is
the one derived for a declared resource is that resource's. A hand-made flow gets a random id and is never
taken for one of ours; a flow of another namespace has another id, so no namespace reaches it. The id names
no resource, so a flow whose resource is gone without its finalizer (never, in the ordinary course) is
unrecognisable, and left alone: the safe side. Flows are not adopted (their id cannot be changed).

There is no hash to read back either, so a flow found with the derived id is taken as written as declared and
then compared field by field (description, providerId) and execution by execution: any difference is drift,
repaired by an update. (A spec change is seen the same way; its event says what was rewritten.)

**Executions are rebuilt, not patched.** Keycloak's flow API adds an execution by provider at the end of a
flow, PUTs its requirement separately, reorders only by raising or lowering one step at a time, and makes a
subflow through another endpoint. Matching an observed list to a declared one with those moves is fiddly and
any mistake leaves the flow half in one order, half in the other. So when the executions differ at all, every
top-level execution is deleted (a subflow's deletion deletes its flow and everything in it) and the declared
ones are added again in order (`build_steps`). A flow bound to the realm cannot be deleted, but its
executions can, so a bound flow is repaired the same way. A sign-in running through the flow during the few
requests of a rebuild may fail; a rebuild happens only on a spec change or a hand edit.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Final

from keycloak_operator.core import names
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.in_realm import declared
from keycloak_operator.core.replication.marker import content_hash, marker_attributes
from keycloak_operator.core.replication.plan import Update
from keycloak_operator.core.replication.resources import (
    RealmTarget,
)
from keycloak_operator.core.replication.sync import NO_REVOCATION, Resource, Revocation, ScopePlan, plan_scope
from keycloak_operator.models.authentication_flow import KeycloakAuthenticationFlowSpec

KIND: Final = names.AUTHENTICATION_FLOW_KIND
EXECUTIONS: Final = "executions"
# Keycloak's own flows in every realm: never ours, never adopted.
BUILT_INS: Final = frozenset(
    {
        "browser",
        "direct grant",
        "registration",
        "reset credentials",
        "clients",
        "first broker login",
        "docker auth",
    }
)
MASKED: Final = "**********"  # what Keycloak returns for a config value it will not show
_ID_SPACE: Final = uuid.UUID("6f1c2b9e-3d0a-5c4e-9b7a-1e2d3c4b5a69")  # this operator's uuid5 namespace

Obj = Mapping[str, Any]


def flow_id(realm: str, key: ObjectKey) -> str:
    """The id the flow of `key` gets in `realm` (ids are unique across a server's realms, so the realm is in
    it)."""
    return str(uuid.uuid5(_ID_SPACE, f"{realm}\x00{key.kind}/{key.namespace}/{key.name}"))


def _steps(executions: Sequence[Any], level: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for e in executions:
        sub = getattr(e, "subflow", None)
        if sub is None:
            step: dict[str, Any] = {"level": level, "authenticator": e.authenticator}
            if e.config is not None:
                step["config"] = {"alias": e.config.alias, "config": dict(sorted(e.config.config.items()))}
            out.append({**step, "requirement": e.requirement})
        else:
            out.append(
                {
                    "level": level,
                    "subflow": sub.alias,
                    "providerId": sub.provider_id,
                    "description": sub.description,
                    "requirement": e.requirement,
                }
            )
            out.extend(_steps(sub.executions, level + 1))
    return out


def flow_content(spec: KeycloakAuthenticationFlowSpec) -> dict[str, Any]:
    """The flow as declared; its executions flattened depth-first, as Keycloak lists them (level, order)."""
    return {
        "alias": spec.alias,
        "description": spec.description,
        "providerId": spec.provider_id,
        "topLevel": True,
        "builtIn": False,
        EXECUTIONS: _steps(spec.executions, 0),
    }


def flow_resource(
    obj: Obj, realms: Mapping[ObjectKey, RealmTarget], unreadable: AbstractSet[str] = frozenset()
) -> Resource:
    """A flow, with a problem when its realm is unknown or does not allow its namespace (clientNamespaces:
    a flow does nothing until the realm binds it, and binding is the realm owner's)."""
    d = declared(obj, KeycloakAuthenticationFlowSpec, realms, unreadable, "authentication flows")
    if isinstance(d, Resource):
        return d
    return Resource(d.key, d.spec.alias, flow_content(d.spec), problem=d.problem, parent=d.parent, **d.flags)


# --- what Keycloak holds ------------------------------------------------------------------------------------


def observed_steps(listing: Iterable[Obj], configs: Mapping[str, Obj]) -> list[dict[str, Any]]:
    """A flow's executions as GET .../flows/{alias}/executions lists them (depth-first), in `flow_content`'s
    shape; `configs`: authenticator configs by id. A subflow's type is not in that listing: not compared."""
    out: list[dict[str, Any]] = []
    for e in listing:
        level = e.get("level")
        if e.get("authenticationFlow"):
            out.append(
                {
                    "level": level,
                    "subflow": e.get("displayName"),
                    "description": e.get("description") or "",
                    "requirement": e.get("requirement"),
                }
            )
            continue
        step: dict[str, Any] = {"level": level, "authenticator": e.get("providerId")}
        config = configs.get(str(e.get("authenticationConfig"))) if e.get("authenticationConfig") else None
        if config is not None:
            step["config"] = {
                "alias": config.get("alias"),
                "config": dict(sorted((config.get("config") or {}).items())),
            }
        out.append({**step, "requirement": e.get("requirement")})
    return out


def _comparable(steps: Sequence[Obj]) -> list[dict[str, Any]]:
    return [{k: v for k, v in s.items() if k != "providerId"} for s in steps]


def _unmasked(seen: dict[str, Any], want: Obj) -> dict[str, Any]:
    """`seen` with each config value Keycloak masks (a key its authenticator does not declare, or a secret
    one: read back as MASKED, checked on 26.7.3) taken as the declared one: it cannot be compared."""
    config, wanted = seen.get("config"), want.get("config")
    if not isinstance(config, Mapping) or not isinstance(wanted, Mapping):
        return seen
    values = {
        k: (wanted["config"].get(k, v) if v == MASKED else v) for k, v in (config.get("config") or {}).items()
    }
    return {**seen, "config": {**config, "config": values}}


def executions_differ(content: Obj, observed: Sequence[Obj]) -> bool:
    declared = _comparable(content.get(EXECUTIONS) or [])
    seen = _comparable(observed)
    if len(seen) == len(declared):
        seen = [_unmasked(s, d) for s, d in zip(seen, declared, strict=True)]
    return declared != seen


def observed_view(flow: Obj, realm: str, declared: Iterable[Resource]) -> dict[str, Any]:
    """A flow as listed, with the marker its id stands for in `attributes` (none for a flow no declared
    resource has that id for: a hand-made flow, a built-in, a gone resource's)."""
    view = {k: v for k, v in flow.items() if k != "authenticationExecutions"}
    for r in declared:
        if flow.get("id") == flow_id(realm, r.key) and not flow.get("builtIn"):
            # Taken as written as declared: the field comparison finds what differs (module text).
            view["attributes"] = marker_attributes(r.key, content_hash(r.content))
            break
    return view


def plan_flows(
    flows: Sequence[Resource],
    observed: Iterable[Obj],
    realm: str,
    executions: Mapping[str, Sequence[Obj]],
    namespaces: AbstractSet[str] | None = None,
    *,
    revocation: Revocation = NO_REVOCATION,
    blocked: Mapping[ObjectKey, str] | None = None,
) -> ScopePlan:
    """Every top-level flow of one realm. `blocked`: deleting flows the realm still binds, with why.
    `executions`: the observed steps (`observed_steps`) of each flow found ours, by id; a flow in step whose
    executions differ gets an update (a rebuild) and its drift."""
    listed = [observed_view(o, realm, flows) for o in observed if isinstance(o, Mapping)]
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
    scope.plan.updates.sort(key=lambda op: op.key)
    return scope


# --- the writes ---------------------------------------------------------------------------------------------


def create_body(content: Obj, realm: str, key: ObjectKey) -> dict[str, Any]:
    """The flow's POST: its fields, with the id that marks it ours. Executions are added after it
    (`build_steps`)."""
    body = {k: v for k, v in content.items() if k != EXECUTIONS}
    return {**body, "id": flow_id(realm, key)}


def update_body(content: Obj, remote_id: str) -> dict[str, Any]:
    return {**{k: v for k, v in content.items() if k != EXECUTIONS}, "id": remote_id}


@dataclass(frozen=True)
class BuildStep:
    """Add one execution to `parent` (a flow alias), at its end; then set its requirement and config."""

    parent: str
    step: Mapping[str, Any]


def build_steps(content: Obj) -> list[BuildStep]:
    """The additions that make an empty flow hold the declared executions, in order: each step is added to
    the flow or subflow it belongs to (the last subflow opened one level up), at its end."""
    parents = [str(content["alias"])]
    out: list[BuildStep] = []
    for step in content.get(EXECUTIONS) or []:
        level = int(step["level"])
        del parents[level + 1 :]
        out.append(BuildStep(parents[level], step))
        if "subflow" in step:
            parents.append(str(step["subflow"]))
    return out


# --- the realm's bindings (KeycloakRealm spec.flowBindings) ------------------------------------------------

# spec.flowBindings field -> RealmRepresentation field.
BINDINGS: Final = {
    "browser": "browserFlow",
    "directGrant": "directGrantFlow",
    "registration": "registrationFlow",
    "resetCredentials": "resetCredentialsFlow",
    "clientAuthentication": "clientAuthenticationFlow",
    "firstBrokerLogin": "firstBrokerLoginFlow",
}
# Every binding Keycloak has: a flow bound by any of them cannot be deleted.
REALM_BINDINGS: Final = (*BINDINGS.values(), "dockerAuthenticationFlow")


def declared_bindings(realm_obj: Obj) -> dict[str, str]:
    """spec.flowBindings of a KeycloakRealm (validated already, as its resource was built), by its own names;
    none when absent."""
    raw = (realm_obj.get("spec") or {}).get("flowBindings")
    if not isinstance(raw, Mapping):
        return {}
    return {k: v for k, v in raw.items() if k in BINDINGS and isinstance(v, str)}


@dataclass
class BindingPlan:
    body: dict[str, str]  # the realm PUT's fields (RealmRepresentation names); empty: nothing to write
    missing: list[str]  # `spec.flowBindings.<name>: flow 'x'` not found in the realm


def plan_bindings(declared: Mapping[str, str], realm: Obj, aliases: AbstractSet[str]) -> BindingPlan:
    """The bindings to write: each declared one naming an existing flow that the realm does not bind yet."""
    plan = BindingPlan({}, [])
    for name, alias in sorted(declared.items()):
        field = BINDINGS[name]
        if alias not in aliases:
            plan.missing.append(f"spec.flowBindings.{name}: flow {alias!r}")
        elif realm.get(field) != alias:
            plan.body[field] = alias
    return plan


def bound_by(realm: Obj, alias: str) -> list[str]:
    """The realm's bindings naming the flow `alias`."""
    return [f for f in REALM_BINDINGS if realm.get(f) == alias]
