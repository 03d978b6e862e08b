"""What a Keycloak's pods get when its spec leaves `scheduling` or `resources` unset (ADR 0028).

A new Keycloak gets the `ha` defaults: a soft spread over nodes and zones, and the memory the official
Keycloak operator gives by default (a request of 1700Mi, a limit of 2Gi, so the JVM sizes its heap from the
limit and not from the node). A Keycloak that ran before the operator had defaults keeps running without
them: a default appearing in its pod template would roll every such Keycloak on an operator upgrade, for
something nobody asked for. Which profile a Keycloak has is recorded in its status at its first pass and
never changes; set `spec.scheduling` or `spec.resources` to choose for yourself. The profile is applied to the
spec before anything is derived from it (the version, the Jobs' names, every rendering), so the spec a pass
works from is one and the same everywhere.
"""

from __future__ import annotations

from typing import Any, Literal

from keycloak_operator.models.keycloak import KeycloakSpec, KeycloakStatus, ResourceRequirements
from keycloak_operator.models.scheduling import SchedulingSpec, TopologySpreadConstraint

Profile = Literal["ha", "none"]
HA: Profile = "ha"
NONE: Profile = "none"
PROFILES: frozenset[str] = frozenset({HA, NONE})

# Soft: a spread Kubernetes cannot satisfy (one node, one zone, an upgrade's extra pod) never keeps a pod
# Pending. Each Deployment's pods are spread on their own (core/scheduling.py fills in the selector).
SPREAD_KEYS = ("kubernetes.io/hostname", "topology.kubernetes.io/zone")
MEMORY_REQUEST = "1700Mi"
MEMORY_LIMIT = "2Gi"
_RESOURCES_WIRE = {"requests": {"memory": MEMORY_REQUEST}, "limits": {"memory": MEMORY_LIMIT}}


def profile(previous: KeycloakStatus, deployment: dict[str, Any] | None, spec: KeycloakSpec) -> Profile:
    """The profile recorded in status; else read from what ran before: the Keycloak's own Deployment
    (`deployment`, None when it has none of its own) carries a default where `spec` (as written, before any
    default) leaves the field unset, or not; a Keycloak with versions or an upgrade in its status but no
    Deployment (mid-promotion, between blue and green) ran without a recorded profile, so under an operator
    without defaults; else, a new Keycloak: `ha`.

    Only the values this module writes are believed: anyone able to write the status could write anything
    there, and an unknown value reads as not recorded. A status lost (restored without it) is read back
    from the Deployment, so an `ha` Keycloak is not rolled to lose its defaults."""
    recorded = previous.pod_defaults
    if recorded == HA:
        return HA
    if recorded == NONE:
        return NONE
    if deployment is not None:
        return HA if rendered_with_defaults(deployment, spec) else NONE
    versions = previous.versions
    ran = versions.current_version or versions.next_version or previous.blue_green is not None
    return NONE if ran else HA


def rendered_with_defaults(deployment: dict[str, Any], spec: KeycloakSpec) -> bool:
    """Whether the pods of `deployment` carry a default in a field `spec` leaves unset: a value the spec
    sets itself, equal to a default or not, says nothing of the profile."""
    pod = ((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}
    containers = [c for c in pod.get("containers") or [] if c.get("name") == "keycloak"]
    if spec.resources is None and containers and containers[0].get("resources") == _RESOURCES_WIRE:
        return True
    spreads = [
        (c.get("topologyKey"), c.get("maxSkew"), c.get("whenUnsatisfiable"))
        for c in pod.get("topologySpreadConstraints") or []
    ]
    return spec.scheduling is None and spreads == [(key, 1, "ScheduleAnyway") for key in SPREAD_KEYS]


def applied(spec: KeycloakSpec, chosen: Profile) -> KeycloakSpec:
    """`spec` with the profile's defaults in the fields it leaves unset; unchanged under `none`."""
    if chosen != HA:
        return spec
    update: dict[str, object] = {}
    if spec.scheduling is None:
        update["scheduling"] = SchedulingSpec(
            topology_spread_constraints=[
                TopologySpreadConstraint(max_skew=1, topology_key=key, when_unsatisfiable="ScheduleAnyway")
                for key in SPREAD_KEYS
            ]
        )
    if spec.resources is None:
        update["resources"] = ResourceRequirements.model_validate(_RESOURCES_WIRE)
    return spec.model_copy(update=update) if update else spec
