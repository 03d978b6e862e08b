"""How a flow of the authentication flow kind is built and rebuilt: the steps that build its executions, the
staged copy a rebuild makes beside the old flow, the renames that follow the swap, and what an interrupted or
refused build leaves (the planner, authentication_flow.py, says which flow is ours and what to write).

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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Final, Literal

from keycloak_operator.core.replication.authentication_flow import flow_id, slot_of
from keycloak_operator.core.replication.flow_content import EXECUTIONS, config_aliases, subflow_aliases
from keycloak_operator.core.replication.identity import ObjectKey
from keycloak_operator.core.replication.marker import content_hash
from keycloak_operator.core.replication.sync import Resource, Verdict

# A staged (being built) flow's aliases end with this: '~' is allowed by Keycloak (ReservedCharValidator, read
# from 26.7.3's jar) and by no declared alias (models.authentication_flow.ALIAS), so no resource holds one.
STAGED: Final = " ~"

Obj = Mapping[str, Any]


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
