"""While blue serves an image the spec no longer names, blue's Deployment is never re-rendered from the
new spec: a change that comes with the upgrade (a new cache cluster name, new variables, new resources) is
green's, and applying it to blue would restart the pods serving every sign-in (found on the real node: a
new cache cluster name recreated blue's pods mid-upgrade)."""

from __future__ import annotations

from typing import Any

import pytest

from keycloak_operator.core import reconcile, versions
from keycloak_operator.core.bluegreen import model as bg
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import BlueGreenStatus
from tests.unit.builders import NOW, OWNER, observed

OLD, NEW = "quay.io/keycloak/keycloak:26.7.0", "quay.io/keycloak/keycloak:26.7.3"
BLUE_SPEC = KeycloakSpec.model_validate(
    {
        "image": OLD,
        "replicas": 2,
        "database": {"cnpg": {"clusterName": "db"}},
        "cacheIsolation": {"clusterName": "kc-blue"},
        "upgradePolicy": {"strategy": "BlueGreen"},
    }
)
GREEN_SPEC = BLUE_SPEC.model_copy(
    update={
        "image": NEW,
        "cache_isolation": BLUE_SPEC.cache_isolation.model_copy(update={"cluster_name": "kc-green"}),
        "replicas": 3,
    }
)


def blue() -> dict[str, Any]:
    version = versions.version_of(BLUE_SPEC).format()
    deployment = render_deployment(OWNER, BLUE_SPEC, image=OLD, track="a", version=version)
    deployment["metadata"]["uid"] = "blue-uid"
    return deployment


def decide(spec: KeycloakSpec, status: BlueGreenStatus) -> reconcile.Decision:
    return reconcile.decide(spec, observed(spec, deployment=blue(), generation=2), now=NOW, blue_green=status)


def status(state: str) -> BlueGreenStatus:
    return BlueGreenStatus(state=state, blue_image=OLD, green_image=NEW, blue_track="a", green_track="b")


def deployments(decision: reconcile.Decision) -> list[dict[str, Any]]:
    return [o for o in decision.apply if o["kind"] == "Deployment"]


def discovery_selector(decision: reconcile.Decision) -> dict[str, str]:
    """Blue's track's membership Service: what blue's pods query (ADR 0018)."""
    service = next(o for o in decision.apply if o["metadata"]["name"] == names.membership_service("kc", "a"))
    return dict(service["spec"]["selector"])


@pytest.mark.parametrize(
    "state",
    [bg.BACKING_UP, bg.PROVISIONING_GREEN, bg.WAITING_FOR_GREEN, bg.CUTTING_OVER, bg.DRAINING, bg.FAILED],
)
def test_blue_is_not_rewritten_while_it_serves_another_image_than_the_spec(state: str) -> None:
    decision = decide(GREEN_SPEC, status(state))
    assert deployments(decision) == []
    assert discovery_selector(decision)[names.LABEL_CACHE_CLUSTER] == "kc-blue"


def test_without_an_upgrade_a_new_setting_rolls_the_deployment() -> None:
    changed = BLUE_SPEC.model_copy(update={"replicas": 3})
    [deployment] = deployments(decide(changed, status(bg.IDLE)))
    assert deployment["spec"]["replicas"] == 3
    assert deployment["spec"]["template"]["spec"]["containers"][0]["image"] == OLD
