"""Where a Keycloak's pods run and how many may be evicted at once: `spec.scheduling` and
`spec.podDisruptionBudget`. Field names follow the pod spec's (and the official Keycloak operator's
`spec.scheduling`), so a user moving over copies them as they are.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, JsonValue, field_validator

from keycloak_operator.kernel import patterns as pt
from keycloak_operator.models.base import CrdModel

NODE_SELECTOR_MAX = 32
TOLERATIONS_MAX = 32
SPREAD_MAX = 8
# A free-form affinity term list is still bounded: the API server refuses nothing for being long.
AFFINITY_PART_MAX_PROPERTIES = 4

LabelValue = Annotated[str, Field(max_length=pt.LABEL_MAX, pattern=pt.LABEL_VALUE)]
_FREE_FORM: dict[str, JsonValue] = {"x-kubernetes-preserve-unknown-fields": True}


def check_label_keys(value: dict[str, str] | None, what: str) -> dict[str, str] | None:
    """Label and annotation keys (nodeSelector, matchLabels, an Ingress's annotations, a ServiceMonitor's
    labels) are checked by the models only: a CEL rule over every key of such a map, each as long as a label
    key may be, costs more than the API server lets one CRD spend (it refused the CRD); the values have a
    schema pattern. A key the model refuses is reported as Degraded (InvalidSpec)."""
    for key in value or {}:
        if len(key) > pt.LABEL_KEY_MAX or not re.fullmatch(pt.LABEL_KEY, key):
            raise ValueError(f"{key!r} is not {what} key (example.com/name, name)")
    return value


def _label_key(description: str, **extra: Any) -> Any:
    return Field(
        min_length=1, max_length=pt.LABEL_KEY_MAX, pattern=pt.LABEL_KEY, description=description, **extra
    )


class Toleration(CrdModel):
    """A pod toleration, as in the pod spec."""

    key: str | None = _label_key(
        "Taint key to tolerate; empty with operator Exists tolerates every taint.", default=None
    )
    operator: Literal["Exists", "Equal"] | None = Field(
        default=None, description="Exists or Equal (default)."
    )
    value: str | None = Field(
        default=None, max_length=pt.LABEL_MAX, pattern=pt.LABEL_VALUE, description="Taint value (Equal)."
    )
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        default=None, description="Taint effect to tolerate; empty tolerates every effect."
    )
    toleration_seconds: int | None = Field(
        default=None,
        ge=0,
        le=2**31 - 1,
        description="NoExecute: how long the pod stays bound after the taint.",
    )


class TopologySpreadConstraint(CrdModel):
    """Spread the pods of one Deployment over a topology. The operator fills in the label selector (this
    Keycloak's server pods of the same Deployment), so blue and green are each spread on their own."""

    max_skew: int = Field(
        ge=1, le=1000, description="Largest allowed difference in pod count between domains."
    )
    topology_key: str = _label_key("Node label that names a domain, e.g. topology.kubernetes.io/zone.")
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"] = Field(
        default="ScheduleAnyway",
        description="DoNotSchedule keeps a pod Pending rather than break the spread; ScheduleAnyway "
        "(default) only prefers it, so an upgrade's extra pod can always start.",
    )
    min_domains: int | None = Field(
        default=None, ge=1, le=1000, description="DoNotSchedule: domains to count."
    )
    node_affinity_policy: Literal["Honor", "Ignore"] | None = Field(
        default=None, description="Whether nodeSelector/affinity limit the domains counted."
    )
    node_taints_policy: Literal["Honor", "Ignore"] | None = Field(
        default=None, description="Whether tainted nodes the pod does not tolerate are counted."
    )


class Affinity(CrdModel):
    """A pod affinity as in the pod spec. Its terms are passed to the pods as written; the API server checks
    them when the Deployment is written, and a refusal is reported as Degraded (ChildRejected)."""

    node_affinity: dict[str, Any] | None = Field(
        default=None,
        max_length=AFFINITY_PART_MAX_PROPERTIES,
        description="Node affinity (requiredDuringSchedulingIgnoredDuringExecution, "
        "preferredDuringSchedulingIgnoredDuringExecution).",
        json_schema_extra=_FREE_FORM,
    )
    pod_affinity: dict[str, Any] | None = Field(
        default=None,
        max_length=AFFINITY_PART_MAX_PROPERTIES,
        description="Pod affinity terms.",
        json_schema_extra=_FREE_FORM,
    )
    pod_anti_affinity: dict[str, Any] | None = Field(
        default=None,
        max_length=AFFINITY_PART_MAX_PROPERTIES,
        description="Pod anti-affinity terms.",
        json_schema_extra=_FREE_FORM,
    )


class SchedulingSpec(CrdModel):
    """Placement of the Keycloak's pods, green's included. Part of the pod template, so a change rolls the
    pods and is a new version (as a Deployment revision would be); a rollback restores it too."""

    node_selector: dict[str, LabelValue] | None = Field(
        default=None,
        max_length=NODE_SELECTOR_MAX,
        description="Node labels the pods require (label key -> value). A key that is not a label key is "
        "reported as Degraded (InvalidSpec) and no pod is rolled.",
    )
    tolerations: list[Toleration] | None = Field(
        default=None, max_length=TOLERATIONS_MAX, description="Taints the pods tolerate."
    )
    affinity: Affinity | None = Field(default=None, description="Node and pod (anti-)affinity.")
    topology_spread_constraints: list[TopologySpreadConstraint] | None = Field(
        default=None, max_length=SPREAD_MAX, description="How the pods spread over zones or nodes."
    )
    priority_class_name: str | None = pt.object_name("PriorityClass of the pods.", default=None)

    @field_validator("node_selector")
    @classmethod
    def _label_keys(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        return check_label_keys(value, "a label")


class PodDisruptionBudgetSpec(CrdModel):
    """The PodDisruptionBudget over every server pod of this Keycloak (blue and green alike)."""

    enabled: bool = Field(
        default=True, description="Made whenever replicas > 1 (a budget on one pod would only block drains)."
    )
    max_unavailable: int = Field(
        default=1,
        ge=1,
        le=100,
        description="Pods a drain may take at once. Unhealthy pods (a green that never got Ready) may always "
        "be evicted, so a broken upgrade never blocks a node drain.",
    )
