"""A realm's flow bindings (KeycloakRealm spec.flowBindings: browserFlow, directGrantFlow, ...): which of the
realm owner's KeycloakAuthenticationFlows runs for each purpose.

**Bindings name resources, never aliases.** A bound flow decides how every client of the realm signs in
(admin-cli's direct grant included), so only the realm owner's flows can be bound: spec.flowBindings names a
KeycloakAuthenticationFlow of the realm's own namespace, by resource name, and it is resolved to the flow
that resource owns in Keycloak (by its id: authentication_flow.py), never by alias lookup, so no other
namespace can take a binding by declaring (or renaming to) an alias first. A binding is moved to a flow only
once its resource is Ready (built complete); until then the realm keeps what it binds for that purpose (a
failed or cut-short rebuild keeps the old flow bound). A binding to one of the operator's flows returns to
Keycloak's built-in flow for that purpose only when spec.flowBindings no longer names that purpose or the
bound flow is being deleted, before any flow is deleted (Keycloak refuses to delete a bound flow). A binding
to a flow that is not the operator's (a built-in, a hand-made one) is left as it is when spec.flowBindings
names nothing for that purpose.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from keycloak_operator.core.replication.authentication_flow import KIND
from keycloak_operator.core.replication.identity import ObjectKey

Obj = Mapping[str, Any]

# spec.flowBindings field -> RealmRepresentation field.
BINDINGS: Final = {
    "browser": "browserFlow",
    "directGrant": "directGrantFlow",
    "registration": "registrationFlow",
    "resetCredentials": "resetCredentialsFlow",
    "clientAuthentication": "clientAuthenticationFlow",
    "firstBrokerLogin": "firstBrokerLoginFlow",
    "docker": "dockerAuthenticationFlow",
}
# Every binding Keycloak has: a flow bound by any of them cannot be deleted.
REALM_BINDINGS: Final = tuple(BINDINGS.values())
# The flow each binding returns to when no declared flow is bound there: Keycloak's own for that purpose.
DEFAULTS: Final = {
    "browserFlow": "browser",
    "directGrantFlow": "direct grant",
    "registrationFlow": "registration",
    "resetCredentialsFlow": "reset credentials",
    "clientAuthenticationFlow": "clients",
    "firstBrokerLoginFlow": "first broker login",
    "dockerAuthenticationFlow": "docker auth",
}


def declared_bindings(realm_obj: Obj) -> dict[str, str]:
    """spec.flowBindings of a KeycloakRealm (validated already, as its resource was built), by its own names;
    none when absent."""
    raw = (realm_obj.get("spec") or {}).get("flowBindings")
    if not isinstance(raw, Mapping):
        return {}
    return {k: v for k, v in raw.items() if k in BINDINGS and isinstance(v, str)}


FlowState = Literal["ready", "waiting", "deleting"]


@dataclass(frozen=True)
class OwnFlow:
    """A declared flow resource of the realm as a binding sees it: the alias its own flow (found by id) has in
    Keycloak, if any, and whether it may be bound: `ready` (its resource Ready this round), `waiting` (not
    Ready: no new binding to it is made, the realm keeps what it binds), `deleting`."""

    alias: str | None
    state: FlowState


@dataclass
class BindingPlan:
    body: dict[str, str] = field(default_factory=dict)  # the realm PUT's fields; empty: nothing to write
    missing: list[str] = field(default_factory=list)  # `spec.flowBindings.<name>: ...` why it is not bound


def plan_bindings(
    declared: Mapping[str, str],
    realm_namespace: str,
    current: Obj,
    flows: Mapping[ObjectKey, OwnFlow],
    ours: AbstractSet[str],
    *,
    going: AbstractSet[str] = frozenset(),
    reverts_only: bool = False,
) -> BindingPlan:
    """The realm bindings to write. `declared`: spec.flowBindings (resource names in `realm_namespace`);
    `current`: the realm as Keycloak returns it; `flows`: the flow resources declared in this realm; `ours`:
    the aliases of every flow of the operator's in the realm; `going`: those of flows being deleted. A binding
    moves only to a declared flow's own flow once it is Ready; while the flow a purpose names is not Ready
    (being built, failed, renamed, not there) the realm keeps what it binds now, so a failed or cut-short
    rebuild or a switch to a flow not yet built never puts the built-in in place. A binding returns to
    Keycloak's built-in only when it names a flow of ours and its purpose is no longer declared or that flow
    is being deleted. `reverts_only`: only those returns (before flows are deleted)."""
    plan = BindingPlan()
    for name, field_ in BINDINGS.items():
        now = current.get(field_)
        target: str | None = None
        resource = declared.get(name)
        if resource is not None:
            own = flows.get(ObjectKey(KIND, realm_namespace, resource))
            where = f"spec.flowBindings.{name}: KeycloakAuthenticationFlow {realm_namespace}/{resource}"
            if own is None or own.alias is None:
                plan.missing.append(f"{where} is not declared for this realm, or has no flow in Keycloak yet")
            elif own.state == "deleting":
                plan.missing.append(f"{where} is being deleted")
            elif own.state == "waiting":
                plan.missing.append(f"{where} is not Ready")
            else:
                target = own.alias
        if target is None and now in ours and (resource is None or now in going):
            target = DEFAULTS[field_]
        elif reverts_only:
            continue
        if target is not None and now != target:
            plan.body[field_] = target
    return plan


def bound_by(realm: Obj, alias: str) -> list[str]:
    """The realm's bindings naming the flow `alias`."""
    return [f for f in REALM_BINDINGS if realm.get(f) == alias]
