"""What an installation lets a Keycloak's `spec.service` ask for (ADR 0012).

A Service of type LoadBalancer or NodePort is served by what the whole cluster shares, as an Ingress is: node
ports, the cloud's or MetalLB's load balancers, and the controllers that read a Service's annotations
(external-dns publishes the host names they carry, load-balancer controllers pick addresses and share them).
An installation that restricts Ingresses (any of the operator's ingress allow-lists set) is one whose tenants
are not trusted with those; there the public Service stays ClusterIP, and its annotations pass the Ingress's
annotation-key allow-list (none when that list is empty). Unrestricted installations keep what the spec asks.
A refused Service keeps serving inside the cluster: only the refused settings are left out.
"""

from __future__ import annotations

from dataclasses import dataclass

from keycloak_operator.core.ingress_policy import IngressPolicy, annotation_allowed
from keycloak_operator.models.keycloak import KeycloakSpec

REASON = "ServiceNotAllowed"


@dataclass(frozen=True)
class Refusal:
    field: str
    value: str
    allowed: str

    @property
    def message(self) -> str:
        return (
            f"{self.field}: {self.value} is not allowed by this installation ({self.allowed}); the public "
            "Service is kept as a ClusterIP Service without the Service annotations until the spec or the "
            "installation's allow-lists change"
        )


def restricted(policy: IngressPolicy) -> bool:
    return bool(policy.classes or policy.annotation_keys or policy.host_suffixes or policy.gateways)


def refusal(spec: KeycloakSpec, policy: IngressPolicy) -> Refusal | None:
    """The first setting of `spec.service` the installation does not allow; None when it allows all."""
    wanted = spec.service
    if wanted is None or not restricted(policy):
        return None
    if (wanted.type or "ClusterIP") != "ClusterIP":
        return Refusal(
            "spec.service.type", repr(wanted.type), "only ClusterIP where Ingresses are restricted"
        )
    keys = policy.annotation_keys
    allowed = f"allowed annotation keys: {', '.join(keys)}" if keys else "no Service annotations allowed"
    for key in sorted(wanted.annotations or {}):
        if not keys or not annotation_allowed(key, keys):
            return Refusal("spec.service.annotations", f"key {key!r}", allowed)
    return None


def within(spec: KeycloakSpec, refused: Refusal | None) -> KeycloakSpec:
    """`spec` as the installation lets it be rendered: without the Service's type and annotations when any
    of them is refused (its labels are only the user's own metadata, and stay)."""
    if refused is None or spec.service is None:
        return spec
    return spec.model_copy(
        update={"service": spec.service.model_copy(update={"type": None, "annotations": None})}
    )
