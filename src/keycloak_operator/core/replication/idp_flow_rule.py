"""Which authentication flow an identity provider may choose as its first-login flow.

KeycloakIdentityProvider spec.firstBrokerLoginFlowAlias names a flow by alias (Keycloak's representation has
no other way), and a first-login flow decides how an outside identity is linked to a user of the realm: a
flow that links without checking (idp-auto-link) hands every account to whoever controls the provider. The
realm owner may allow other namespaces to declare flows (spec.flowNamespaces), so an alias alone says nothing
about who wrote the flow behind it: another team can hold the alias while the owner's flow is absent or
renamed. So the flow holding the alias in Keycloak is checked on every write of a provider (drift repair
too): Keycloak's built-ins and flows the operator did not make (a realm admin's, by hand) are allowed, and of
the operator's flows only those owned by a KeycloakAuthenticationFlow of the realm's own namespace. A flow of
any other namespace refuses the provider (Forbidden, nothing written), and so does a flow that looks like the
operator's but has no declared owner: another team can create a flow, then remove its resource's finalizer
and delete the resource, leaving the flow (and its alias) orphaned. Keycloak gives the flows it creates
random (version 4) ids, the operator's are uuid5 (authentication_flow.flow_id), so a version-5 id, or a
description or alias carrying the operator's build tag, is never taken for a hand-made flow.
An alias no flow holds is left to Keycloak (it refuses it).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from keycloak_operator.core.replication.authentication_flow import owner_of
from keycloak_operator.core.replication.flow_build import STAGED, build_tag
from keycloak_operator.core.replication.identity import ObjectKey, told_to
from keycloak_operator.core.replication.sync import Resource, Verdict

FIELD: Final = "firstBrokerLoginFlowAlias"

Obj = Mapping[str, Any]


def chosen_flow(content: Obj) -> str | None:
    """The first-login flow alias a provider's content names, if any."""
    alias = content.get(FIELD)
    return alias if isinstance(alias, str) and alias else None


def flow_refusals(
    providers: Iterable[Resource],
    flows: Sequence[Obj],
    flow_resources: Sequence[Resource],
    realm: str,
    realm_key: ObjectKey,
) -> dict[ObjectKey, Verdict]:
    """The providers (not deleting, without a problem) whose first-login flow alias is held in Keycloak by a
    flow of the operator's declared from a namespace other than the realm's; `flows`: the realm's top-level
    flows as listed; `flow_resources`: every KeycloakAuthenticationFlow declared for the realm."""
    holder = {str(f.get("alias")): f for f in flows}
    out: dict[ObjectKey, Verdict] = {}
    for r in providers:
        alias = chosen_flow(r.content) if not r.deleting and r.problem is None else None
        flow = holder.get(alias) if alias is not None else None
        if flow is None or flow.get("builtIn"):
            continue
        owner = owner_of(realm, flow_resources, flow.get("id"))
        if owner is None and not looks_like_ours(flow):
            continue  # hand-made
        if owner is not None and owner.namespace == realm_key.namespace:
            continue
        whose = (
            f"is {told_to(owner, r.key.namespace)}'s"
            if owner is not None
            else "was made by the operator for a KeycloakAuthenticationFlow that no longer exists"
        )
        message = (
            f"spec.{FIELD}: flow {alias!r} {whose}; a provider may use a built-in flow, a hand-made one or "
            f"one declared in the realm's namespace ({realm_key.namespace}); nothing was written"
        )
        out[r.key] = Verdict("Forbidden", "FlowNotAllowed", message, revocable=False)
    return out


_TAGS: Final = tuple(build_tag({}, failed=f).split(":")[0] for f in (False, True))


def looks_like_ours(flow: Obj) -> bool:
    """Whether a flow carries any sign of having been made by the operator: a version-5 id (Keycloak's own
    ids are random, version 4), the build tag in its description or the staged mark in its alias."""
    try:
        if uuid.UUID(str(flow.get("id"))).version == 5:
            return True
    except ValueError:
        pass
    description = str(flow.get("description") or "")
    return any(t in description for t in _TAGS) or STAGED in str(flow.get("alias"))


# A provider's fields naming a flow by alias: Keycloak refuses to delete a flow one of them names.
USES: Final = (FIELD, "postBrokerLoginFlowAlias")


def _users(providers: Iterable[Obj]) -> dict[str, list[str]]:
    """Flow alias -> the providers naming it, each as "'alias' (field)"."""
    users: dict[str, list[str]] = {}
    for p in providers:
        for use in USES:
            alias = p.get(use)
            if isinstance(alias, str) and alias:
                users.setdefault(alias, []).append(f"{p.get('alias')!r} ({use})")
    return users


def rebuild_refusals(needing: Mapping[ObjectKey, str], providers: Iterable[Obj]) -> dict[ObjectKey, Verdict]:
    """The flows whose rebuild must not start: `needing`, the flows a rebuild would replace (their resource
    -> their alias now), of which those an identity provider uses. A rebuild deletes the old flow, which
    Keycloak refuses while a provider names it, so the swap would leave two flows and fail each round."""
    users = _users(providers)
    out: dict[ObjectKey, Verdict] = {}
    for key, alias in needing.items():
        if alias in users:
            message = (
                f"its executions changed, but flow {alias!r} is used by identity provider "
                f"{', '.join(users[alias])} and Keycloak refuses to delete a flow in use, so it is not "
                "rebuilt (the old flow stays as it is): point the provider at another flow (such as the "
                "built-in 'first broker login'), let this one be rebuilt, then point it back"
            )
            out[key] = Verdict("Error", "FlowInUse", message)
    return out


def deletion_blocks(deleting: Mapping[ObjectKey, str], providers: Iterable[Obj]) -> dict[ObjectKey, str]:
    """The deleting flows (their resource -> their alias in Keycloak) an identity provider names, with why.
    Keycloak refuses to delete a flow in use, so deleting it anyway fails every round until the provider
    lets go; the flow waits instead (Deleting), naming the provider, and goes once none names it. Any
    provider counts, declared or made by hand: Keycloak refuses for each."""
    users = _users(providers)
    return {
        key: (
            f"identity provider {', '.join(users[alias])} uses flow {alias!r}: it is deleted once no "
            "provider names it"
        )
        for key, alias in deleting.items()
        if alias in users
    }
