"""spec.service under an installation that limits what tenants ask shared controllers for (ADR 0012)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import reconcile, service_policy
from keycloak_operator.core.common import conditions
from keycloak_operator.core.ingress_policy import DEFAULT_POLICY, IngressPolicy
from tests.unit.builders import NOW, observed, spec

SHARED = IngressPolicy(classes=("nginx",), annotation_keys=("service.beta.kubernetes.io/*",))
CLASSES_ONLY = IngressPolicy(classes=("nginx",))


def service(**kw: Any) -> dict[str, Any]:
    return {"service": kw}


@pytest.mark.parametrize("kind", ["LoadBalancer", "NodePort"])
def test_an_exposed_type_is_refused_where_ingresses_are_limited(kind: str) -> None:
    refused = service_policy.refusal(spec(**service(type=kind)), SHARED)
    assert refused is not None and refused.field == "spec.service.type" and kind in refused.message


def test_a_gateway_allow_list_alone_restricts_the_service_too() -> None:
    """A Gateway-only installation: a LoadBalancer or an external-dns annotation would get round it."""
    gateways_only = IngressPolicy(gateways=("gateways/shared",))
    exposed = service_policy.refusal(spec(**service(type="LoadBalancer")), gateways_only)
    assert exposed is not None and exposed.field == "spec.service.type"
    named = service(annotations={"external-dns.alpha.kubernetes.io/hostname": "victim.example.com"})
    refused = service_policy.refusal(spec(**named), gateways_only)
    assert refused is not None and refused.field == "spec.service.annotations"


@pytest.mark.parametrize(
    ("policy", "key", "allowed"),
    [
        (SHARED, "service.beta.kubernetes.io/aws-load-balancer-internal", True),
        (SHARED, "external-dns.alpha.kubernetes.io/hostname", False),
        (CLASSES_ONLY, "external-dns.alpha.kubernetes.io/hostname", False),  # no key list: no annotation
        (DEFAULT_POLICY, "external-dns.alpha.kubernetes.io/hostname", True),  # unrestricted, as before
    ],
)
def test_annotations_pass_the_ingress_annotation_key_list(
    policy: IngressPolicy, key: str, allowed: bool
) -> None:
    refused = service_policy.refusal(spec(**service(annotations={key: "x"})), policy)
    assert (refused is None) == allowed
    if refused is not None:
        assert refused.field == "spec.service.annotations" and key in refused.message


@given(kind=st.sampled_from([None, "ClusterIP", "NodePort", "LoadBalancer"]))
def test_an_unrestricted_installation_keeps_what_the_spec_asks(kind: str | None) -> None:
    assert (
        service_policy.refusal(spec(**service(type=kind, annotations={"a.example/x": "y"})), DEFAULT_POLICY)
        is None
    )


def test_labels_and_a_cluster_ip_are_never_refused() -> None:
    assert service_policy.refusal(spec(**service(type="ClusterIP", labels={"team": "a"})), SHARED) is None


def public_service(decision: reconcile.Decision) -> dict[str, Any]:
    return next(
        o for o in decision.apply if o["kind"] == "Service" and o["metadata"]["name"].endswith("-service")
    )


def test_a_refused_service_still_serves_as_cluster_ip_without_the_annotations_and_the_keycloak_says_why() -> (
    None
):
    s = spec(
        **service(
            type="LoadBalancer",
            annotations={"external-dns.alpha.kubernetes.io/hostname": "x"},
            labels={"team": "a"},
        )
    )
    decision = reconcile.decide(s, observed(s), now=NOW, allowed_ingress=SHARED)
    svc = public_service(decision)
    assert svc["spec"]["type"] == "ClusterIP"
    assert "annotations" not in svc["metadata"]
    assert svc["metadata"]["labels"]["team"] == "a"
    assert "Deployment" in [o["kind"] for o in decision.apply]  # the rest of the Keycloak goes on
    assert decision.status is not None
    c = next(c for c in decision.status["conditions"] if c["type"] == conditions.DEGRADED)
    assert (c["status"], c["reason"]) == ("True", service_policy.REASON)
    assert c["message"].startswith("spec.service.type: 'LoadBalancer'")


def test_the_version_does_not_change_when_the_service_is_refused() -> None:
    s = spec(**service(type="LoadBalancer"))
    refused = reconcile.decide(s, observed(s), now=NOW, allowed_ingress=SHARED)
    free = reconcile.decide(s, observed(s), now=NOW)
    assert refused.status is not None and free.status is not None
    assert refused.status["versions"] == free.status["versions"]
