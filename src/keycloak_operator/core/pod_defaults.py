"""What a Keycloak's pods get when its spec leaves `scheduling` or `resources` unset (ADR 0028).

A new Keycloak gets the `ha` defaults: a soft spread over nodes and zones, and the memory the official
Keycloak operator gives by default (a request of 1700Mi, a limit of 2Gi, so the JVM sizes its heap from the
limit and not from the node). A Keycloak that ran before the operator had defaults keeps running without
them: a default appearing in its pod template would roll every such Keycloak on an operator upgrade, for
something nobody asked for. Which profile a Keycloak has is recorded in its status at its first pass and
never changes; set `spec.scheduling` or `spec.resources` to choose for yourself.
"""

from __future__ import annotations

from typing import Literal

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


def profile(previous: KeycloakStatus, has_deployment: bool) -> Profile:
    """The recorded profile; else `none` for a Keycloak whose pods already run (made by an operator without
    defaults), `ha` for a new one. Only the values this module writes are believed: anyone able to write
    the status could write anything there, and an unknown value reads as not recorded."""
    recorded = previous.pod_defaults
    if recorded == HA:
        return HA
    if recorded == NONE:
        return NONE
    return NONE if has_deployment else HA


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
        update["resources"] = ResourceRequirements(
            requests={"memory": MEMORY_REQUEST}, limits={"memory": MEMORY_LIMIT}
        )
    return spec.model_copy(update=update) if update else spec
