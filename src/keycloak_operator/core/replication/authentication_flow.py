"""The authentication flow kind: a KeycloakAuthenticationFlow's representation, its scope (every top-level
flow of one realm), how the operator knows its own flows, the steps that (re)build a flow's executions, and
how a rebuild swaps a new flow in.

**The marker is the flow's id.** AuthenticationFlowRepresentation has no attributes; its description is the
user's; its alias is user-visible (a prefix would show in every binding); and an authenticator config made to
carry the marker reads back masked (Keycloak 26.7.3 masks every value of a config whose provider it does not
know: checked on the real server). But Keycloak keeps the `id` a flow is created with (checked on 26.7.3: a
POST with an `id` makes the flow with that id). So a flow is created with one of two ids `flow_id(realm, key,
slot)`, name-based UUIDs (uuid5) of the realm, the resource's identity (kind, namespace, name) and a slot (0
or 1: a rebuild makes the new flow in the other slot, below): a flow whose id is one derived for a declared
resource is that resource's. A hand-made flow gets a random id and is never taken for one of ours; a flow of
another namespace has another id, so no namespace reaches it. Flows are not adopted (their id cannot be
changed).

There is no hash to read back either, so a flow found with a derived id is taken as written as declared and
then compared field by field (alias, description, providerId) and execution by execution: any difference is
drift, repaired by an update. (A spec change is seen the same way; its event says what was rewritten.)

**Executions are rebuilt, never patched, and never in place (copy-then-swap).** Keycloak's flow API adds an
execution at the end of a flow, DISABLED, sets its requirement separately, and reorders one step at a time;
patching a live flow passes through states that are neither the old flow nor the new one (a direct grant
checking the username but not yet the password). So a flow whose executions differ is built anew beside the
old one: a flow in the other id slot, under staged aliases (`staged`: the flow's, its subflows' and its
configs' aliases with a suffix no declared alias can hold), every execution added DISABLED, each config set,
then the requirements from the last execution up (`build_steps`, `requirement_order`). Only once complete
is it swapped in: each realm binding naming the old flow is moved to it (one realm PUT), the old flow is
deleted, and the new one's aliases are renamed to the declared ones (a binding is kept by id through a
rename). At every moment a sign-in runs through the old complete flow or the new complete one. A rebuild
interrupted half way leaves two flows of one resource: `leftovers` keeps the bound one (else the one not
staged) and deletes the other before anything else is planned. A build Keycloak refused leaves its copy tagged
as a failed build of the content it was built from (`build_tag`, in its description): kept while the spec is
the same (`failed_build`), so a failing rebuild is not retried (a create and a delete) every round.

The realm's bindings (KeycloakRealm spec.flowBindings) are planned in flow_bindings.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from typing import Any, Final, Literal

from keycloak_operator.core import names
from keycloak_operator.core.replication.identity import ObjectKey
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
from keycloak_operator.models.authentication_flow import BUILT_IN_FLOWS, KeycloakAuthenticationFlowSpec

KIND: Final = names.AUTHENTICATION_FLOW_KIND
EXECUTIONS: Final = "executions"
# Keycloak's own top-level flows in every realm: never ours, never adopted.
BUILT_INS: Final = BUILT_IN_FLOWS
MASKED: Final = "**********"  # what Keycloak returns for a config value it will not show
_ID_SPACE: Final = uuid.UUID("6f1c2b9e-3d0a-5c4e-9b7a-1e2d3c4b5a69")  # this operator's uuid5 namespace
SLOTS: Final = (0, 1)
# Flows one namespace may declare in one realm: each is read every round (its executions, its configs) and a
# rebuild writes each execution several times; the ones past it (newest first) are refused.
FLOWS_PER_NAMESPACE: Final = 50
# A staged (being built) flow's aliases end with this: '~' is allowed by Keycloak (ReservedCharValidator, read
# from 26.7.3's jar) and by no declared alias (models.authentication_flow.ALIAS), so no resource holds one.
STAGED: Final = " ~"

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
    """A flow, with a problem when its realm is unknown or does not allow its namespace (flowNamespaces:
    by default only the realm's own namespace declares flows)."""
    d = declared(
        obj, KeycloakAuthenticationFlowSpec, realms, unreadable, "authentication flows", "flowNamespaces"
    )
    if isinstance(d, Resource):
        return d
    return Resource(d.key, d.spec.alias, flow_content(d.spec), problem=d.problem, parent=d.parent, **d.flags)


def subflow_aliases(content: Obj) -> list[str]:
    return [str(s["subflow"]) for s in content.get(EXECUTIONS) or [] if "subflow" in s]


def config_aliases(content: Obj) -> list[str]:
    return [str(s["config"]["alias"]) for s in content.get(EXECUTIONS) or [] if s.get("config")]


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
        if slot_of(realm, r.key, str(flow.get("id"))) is not None and not flow.get("builtIn"):
            # Taken as written as declared: the field comparison finds what differs (module text).
            view["attributes"] = marker_attributes(r.key, content_hash(r.content))
            break
    return view


def build_tag(content: Obj, *, failed: bool = False) -> str:
    """The description of a staged flow: which declared content it is a build of, and whether that build
    failed (set by the writer when Keycloak refused a step; a build cut short by a stop keeps `being built`,
    a leftover to delete and retry). The swap gives the flow its declared description."""
    return f"{'build failed' if failed else 'being built'}: {content_hash(content)}"


def failed_build(observed: Iterable[Obj], realm: str, r: Resource, bound: AbstractSet[str]) -> Obj | None:
    """The staged copy a rebuild of `r`'s current content left when it failed (unbound, tagged as a failed
    build of that content): kept as the memory that this spec's rebuild failed, so it is not retried (a create
    and a delete) every round; a changed spec (another tag) or the resource's deletion lets it go as a
    leftover."""
    if r.deleting or not r.content:
        return None
    tag = build_tag(r.content, failed=True)
    return next(
        (
            f
            for f in observed
            if slot_of(realm, r.key, str(f.get("id"))) is not None
            and STAGED in str(f.get("alias"))
            and str(f.get("alias")) not in bound
            and f.get("description") == tag
        ),
        None,
    )


def refused_in_place(flow: Obj, r: Resource, steps: Sequence[Obj]) -> Verdict | None:
    """The Error of `r` when its own flow (`flow`, not a staged copy; `steps`: its observed executions) is
    tagged a failed build of its current spec: a first build Keycloak refused half way (never bound), or a
    swapped-in flow whose subflow or config aliases could not be given their declared names (409: held by a
    flow the operator does not see, such as a hand-made flow's subflow). Such a flow is left as it is, so it
    is not rebuilt every round; the declared aliases it lacks are named. A swapped-in flow is complete and
    bound, running with its staged aliases; changing the spec (once the alias is free) rebuilds it."""
    if (
        r.deleting
        or r.problem is not None
        or STAGED in str(flow.get("alias"))
        or flow.get("description") != build_tag(r.content, failed=True)
    ):
        return None
    have: set[str] = set()
    for step in steps:
        if step.get("subflow"):
            have.add(str(step["subflow"]))
        config = step.get("config")
        if isinstance(config, Mapping) and config.get("alias"):
            have.add(str(config["alias"]))
    missing = [a for a in [*subflow_aliases(r.content), *config_aliases(r.content)] if a not in have]
    held = (
        f"alias {', '.join(repr(a) for a in missing)} is held by a flow the operator does not manage"
        if missing
        else "Keycloak refused a step"
    )
    message = (
        f"the build of this spec failed: {held} (see the earlier event); the flow is left as it is and not "
        "rebuilt each round: free the alias (or change it in the spec), then change the spec to try again"
    )
    return Verdict("Error", "RebuildFailed", message)


def leftovers(
    observed: Sequence[Obj], realm: str, flows: Iterable[Resource], bound: AbstractSet[str]
) -> list[str]:
    """Ids of the flows an interrupted rebuild left beside a resource's other flow, to delete: of two flows of
    one resource the bound one stays (a swap was under way), else the one not staged, else slot 0's. A failed
    build of the current spec (`failed_build`) is not one of them."""
    out: list[str] = []
    for r in flows:
        failed = failed_build(observed, realm, r, bound)
        slots = {str(f.get("id")): slot_of(realm, r.key, str(f.get("id"))) for f in observed}
        both = [f for f in observed if slots[str(f.get("id"))] is not None and f is not failed]
        if len(both) < 2:
            continue
        ranked = sorted(
            both,
            key=lambda f: (
                str(f.get("alias")) not in bound,
                STAGED in str(f.get("alias")),
                slots[str(f["id"])],
            ),
        )
        out.extend(str(f["id"]) for f in ranked[1:])
    return out


def _who(key: ObjectKey) -> str:
    return f"{key.kind} {key.namespace}/{key.name}"


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
    held: dict[str, str] = {  # flow aliases -> who holds them
        str(f.get("alias")): nobody for f in seen if owner_of(realm, flows, f.get("id")) is None
    }
    subflows: dict[str, str] = {}
    configs: dict[str, str] = {}
    for f in seen:  # the aliases held in Keycloak, by the resource whose flow holds them
        owner = owner_of(realm, flows, f.get("id"))
        if owner is None:
            continue
        for step in (executions or {}).get(str(f.get("id")), ()):
            if step.get("subflow"):
                subflows.setdefault(str(step["subflow"]), _who(owner))
            config = step.get("config")
            if isinstance(config, Mapping) and config.get("alias"):
                configs.setdefault(str(config["alias"]), _who(owner))
    out: dict[ObjectKey, Verdict] = {}
    for r in sorted(flows, key=lambda r: (r.created, r.key)):
        if r.deleting or r.problem is not None or not r.content:
            continue
        me = _who(r.key)
        top = str(r.content["alias"])
        clash = [
            f"subflow alias {a!r} is already held by {held.get(a) or subflows[a]}"
            for a in subflow_aliases(r.content)
            if held.get(a, me) != me or subflows.get(a, me) != me
        ]
        if subflows.get(top, me) != me:
            clash.append(f"alias {top!r} is already a subflow of {subflows[top]}")
        clash += [
            f"config alias {a!r} is already held by {configs[a]}"
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
    namespaces: AbstractSet[str] | None = None,
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
    scope.plan.updates.sort(key=lambda op: op.key)
    return scope


# --- the writes ---------------------------------------------------------------------------------------------


def create_body(content: Obj, realm: str, key: ObjectKey, slot: int = 0) -> dict[str, Any]:
    """The flow's POST: its fields, with the id that marks it ours. Executions are added after it
    (`build_steps`)."""
    body = {k: v for k, v in content.items() if k != EXECUTIONS}
    return {**body, "id": flow_id(realm, key, slot)}


def update_body(content: Obj, remote_id: str) -> dict[str, Any]:
    return {**{k: v for k, v in content.items() if k != EXECUTIONS}, "id": remote_id}


def staged(content: Obj, slot: int) -> dict[str, Any]:
    """The content to build a new flow from beside the old one: every alias (flow, subflows, configs) with
    the slot's staging suffix, so none collides with the old flow's."""

    def name(alias: object) -> str:
        return f"{alias}{STAGED}{slot}"

    steps = []
    for s in content.get(EXECUTIONS) or []:
        step = dict(s)
        if "subflow" in step:
            step["subflow"] = name(step["subflow"])
        if step.get("config"):
            step["config"] = {**step["config"], "alias": name(step["config"]["alias"])}
        steps.append(step)
    return {**content, "alias": name(content["alias"]), "description": build_tag(content), EXECUTIONS: steps}


@dataclass(frozen=True)
class BuildStep:
    """Add one execution to `parent` (a flow alias), at its end; its requirement and config come later."""

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


def requirement_order(count: int) -> list[int]:
    """The order requirements are set in, by position in the depth-first listing: from the last up, so a
    subflow's own steps are set before the subflow itself is enabled, and a later step before an earlier
    one (each added DISABLED: an authenticator that needs a user finds none until the first is enabled)."""
    return list(reversed(range(count)))


@dataclass(frozen=True)
class Rename:
    """After a swap: a subflow (`what` flow) or config of the new flow given its declared alias."""

    what: Literal["flow", "config"]
    remote_id: str
    body: Mapping[str, Any]


def renames(listing: Sequence[Obj], content: Obj) -> list[Rename]:
    """The writes that give a built (staged) flow's subflows and configs their declared aliases; `listing`:
    its executions as Keycloak lists them (a subflow's row names its flow's id, `flowId`)."""
    out: list[Rename] = []
    for seen, want in zip(listing, content.get(EXECUTIONS) or [], strict=False):
        if "subflow" in want and seen.get("flowId") and seen.get("displayName") != want["subflow"]:
            body = {
                "id": seen["flowId"],
                "alias": want["subflow"],
                "description": want.get("description", ""),
                "providerId": want.get("providerId", "basic-flow"),
                "topLevel": False,
                "builtIn": False,
            }
            out.append(Rename("flow", str(seen["flowId"]), body))
        config = want.get("config")
        if config and seen.get("authenticationConfig"):
            remote = str(seen["authenticationConfig"])
            out.append(Rename("config", remote, {"id": remote, **config}))
    return out
