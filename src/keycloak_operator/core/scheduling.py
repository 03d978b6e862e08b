"""Placement of a Keycloak's pods and its PodDisruptionBudget: pure renderings of `spec.scheduling` and
`spec.podDisruptionBudget`.

Nothing is added to the pod template when `spec.scheduling` is unset: the defaults a new Keycloak gets are
filled into its spec before it reaches here (core/pod_defaults.py, ADR 0028).
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.scheduling import PodDisruptionBudgetSpec

# The pod spec keys this module may set: a key the operator set and no longer wants must be removed, which
# the drift check learns from here (core/drift.py).
POD_SPEC_KEYS = frozenset(
    {"nodeSelector", "tolerations", "affinity", "topologySpreadConstraints", "priorityClassName"}
)


def pod_placement(spec: KeycloakSpec, keycloak: str, track: str) -> dict[str, Any]:
    """The pod spec fields for `spec.scheduling`, for the pods of `keycloak` on `track`."""
    scheduling = spec.scheduling
    if scheduling is None:
        return {}
    out: dict[str, Any] = {}
    if scheduling.node_selector:
        out["nodeSelector"] = dict(sorted(scheduling.node_selector.items()))
    if scheduling.tolerations:
        out["tolerations"] = [t.wire() for t in scheduling.tolerations]
    if scheduling.affinity is not None and scheduling.affinity.wire():
        out["affinity"] = scheduling.affinity.wire()
    if scheduling.topology_spread_constraints:
        # Each Deployment spreads its own pods: during blue-green, green's must not count blue's.
        selector = {"matchLabels": names.server_selector(keycloak, track)}
        out["topologySpreadConstraints"] = [
            {**c.wire(), "labelSelector": selector} for c in scheduling.topology_spread_constraints
        ]
    if scheduling.priority_class_name:
        out["priorityClassName"] = scheduling.priority_class_name
    return out


def budget(spec: KeycloakSpec) -> PodDisruptionBudgetSpec | None:
    """The budget in force: the spec's, or the default; None when there is to be no PodDisruptionBudget."""
    wanted = spec.pod_disruption_budget or PodDisruptionBudgetSpec()
    return wanted if wanted.enabled and spec.replicas > 1 else None


def pod_disruption_budget(
    spec: KeycloakSpec, keycloak: str, namespace: str, owner_reference: dict[str, Any]
) -> dict[str, Any] | None:
    """One budget over every server pod of the Keycloak, both tracks: a drain during an upgrade counts blue
    and green together. Unhealthy pods may always be evicted (a crash-looping green never blocks a drain)."""
    wanted = budget(spec)
    if wanted is None:
        return None
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": names.pod_disruption_budget(keycloak),
            "namespace": namespace,
            "labels": names.component_labels(keycloak, names.COMPONENT_SERVER),
            "ownerReferences": [owner_reference],
        },
        "spec": {
            "maxUnavailable": wanted.max_unavailable,
            "selector": {"matchLabels": names.server_pods(keycloak)},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    }
