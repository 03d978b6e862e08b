"""`spec.unsupported.podTemplate`: the escape hatch for a pod setting no field has yet (docs/adr/0025).

Merged last into the pod template, but only at the keys listed here: every other key is refused with its
path named, so it can never change what cache isolation, upgrades or the operator's selectors depend on (the
labels, the image, the command, the environment, the volumes and mounts, the host's namespaces). What is
listed touches none of those.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, JsonValue, model_validator

from keycloak_operator.models.base import CrdModel

# Pod spec keys the escape hatch may set, over the operator's value when it has one. Not DNS (dnsPolicy,
# dnsConfig, hostAliases, setHostnameAsFQDN): JGroups finds its peers by resolving the membership Service's
# name, so a resolver of the user's choosing could hand it another cache cluster's pods. Not readinessGates:
# upgrades wait for the pods' readiness. Not the host's namespaces or anything a field of the spec sets. Not
# serviceAccountName: Kubernetes lets a pod use any ServiceAccount of its namespace, so whoever may write a
# Keycloak would get the token of any of them (the operator's own, where it runs in a watched namespace);
# automountServiceAccountToken only as false, which takes a token away and never gives one.
POD_KEYS = frozenset(
    {
        "runtimeClassName",
        "schedulerName",
        "automountServiceAccountToken",
        "os",
        "preemptionPolicy",
    }
)
FALSE_ONLY = frozenset({"automountServiceAccountToken"})
# Keys of the Keycloak container (`containers: [{name: keycloak, ...}]`) it may set.
CONTAINER_KEYS = frozenset({"imagePullPolicy", "terminationMessagePolicy", "resizePolicy"})
CONTAINER = "keycloak"
_FREE_FORM: dict[str, JsonValue] = {"x-kubernetes-preserve-unknown-fields": True}


class PodTemplate(CrdModel):
    spec: dict[str, Any] = Field(
        default_factory=dict,
        max_length=len(POD_KEYS) + 1,
        description="Pod spec keys merged last: "
        f"{', '.join(sorted(POD_KEYS))}; and `containers: [{{name: keycloak, ...}}]` with "
        f"{', '.join(sorted(CONTAINER_KEYS))}. Any other key is refused.",
        json_schema_extra=_FREE_FORM,
    )

    @model_validator(mode="after")
    def _only_listed_keys(self) -> PodTemplate:
        refused = refusals(self.spec)
        if refused:
            raise ValueError(
                f"unsupported.podTemplate: {', '.join(refused)} cannot be set here (isolation, upgrades or "
                "the operator's selectors depend on them, or a field of the spec sets them)"
            )
        return self

    def container(self) -> dict[str, Any]:
        for entry in self.spec.get("containers") or []:
            return {k: v for k, v in entry.items() if k != "name"}
        return {}


def refusals(spec: dict[str, Any]) -> list[str]:
    """The paths under podTemplate.spec that the escape hatch may not set."""
    out = [f"spec.{k}" for k in spec if k not in POD_KEYS and k != "containers"]
    out += [f"spec.{k} (false only)" for k in FALSE_ONLY if k in spec and spec[k] is not False]
    containers = spec.get("containers", [])
    if not isinstance(containers, list) or len(containers) > 1:
        return [*out, "spec.containers (one entry, the keycloak container)"]
    for entry in containers:
        if not isinstance(entry, dict) or entry.get("name") != CONTAINER:
            out.append("spec.containers[0].name (must be keycloak)")
            continue
        out += [f"spec.containers[0].{k}" for k in entry if k not in CONTAINER_KEYS and k != "name"]
    return out


class UnsupportedSpec(CrdModel):
    """Settings outside the supported surface: no guarantee across operator versions."""

    pod_template: PodTemplate | None = Field(
        default=None,
        description="UNSUPPORTED. Pod settings no field has yet, merged last into the pod template (green's "
        "too), only at the keys listed in spec's description. Prefer a field: this may change without "
        "notice.",
    )
