"""The reconcile carries out the upgrade planner's path for the canonical Deployment: roll, recreate, or
refuse and keep the running version; the plan is in status and an event before anything changes."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from keycloak_operator.core import reconcile, upgrade_plan, versions
from keycloak_operator.core.decide_inputs import Observed
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from tests.unit import builders
from tests.unit.builders import NOW, OWNER

KC = "quay.io/keycloak/keycloak"


def spec(image: str, **policy: Any) -> KeycloakSpec:
    return KeycloakSpec.model_validate(
        {
            "image": f"{KC}:{image}",
            "replicas": 2,
            "database": {"cnpg": {"clusterName": "db"}},
            "cacheIsolation": {"autoRevision": True},
            "upgradePolicy": policy,
        }
    )


def observed(wanted: KeycloakSpec, deployment: dict[str, Any], **kw: Any) -> Observed:
    """Generation 2: the spec changed to `wanted` since the Deployment was rendered."""
    return builders.observed(wanted, deployment=deployment, generation=2, **kw)


def running(image: str) -> dict[str, Any]:
    s = spec(image)
    deployment = render_deployment(
        OWNER, s, image=s.image, track="a", version=versions.version_of(s).format()
    )
    deployment["metadata"]["uid"] = "blue-uid"
    return deployment


def decide(old: str, new: str, status: dict[str, Any] | None = None, **policy: Any) -> reconcile.Decision:
    wanted = spec(new, **policy)
    return reconcile.decide(wanted, observed(wanted, running(old), status=status or {}), now=NOW)


def deployment_written(d: reconcile.Decision) -> dict[str, Any] | None:
    return next((o for o in d.apply if o["kind"] == "Deployment"), None)


def plan_of(d: reconcile.Decision) -> dict[str, Any]:
    assert d.status is not None
    return dict(d.status["upgradePlan"])


def test_a_patch_on_a_rolling_line_rolls_and_says_so() -> None:
    d = decide("26.7.0", "26.7.3")
    written = deployment_written(d)
    assert written is not None and written["spec"]["strategy"]["type"] == "RollingUpdate"
    assert plan_of(d)["path"] == upgrade_plan.ROLL
    assert plan_of(d)["fromImage"] == f"{KC}:26.7.0" and plan_of(d)["toImage"] == f"{KC}:26.7.3"
    planned = [e for e in d.events if e.reason == "UpgradePlanned"]
    assert len(planned) == 1 and "Roll, because 26.7.0 -> 26.7.3 is a patch change" in planned[0].message


def test_a_minor_upgrade_in_one_cache_cluster_recreates() -> None:
    """autoRevision names both kc-v26: before the planner this rolled, old and new on one migrated schema."""
    d = decide("26.5.6", "26.7.3")
    written = deployment_written(d)
    assert written is not None and written["spec"]["strategy"]["type"] == "Recreate"
    assert written["spec"]["template"]["metadata"]["labels"][names.LABEL_CACHE_CLUSTER] == "kc-v26"
    assert plan_of(d)["path"] == upgrade_plan.RECREATE
    # Said before anything stops, in the plan and its event: cnpg takes no backup before a recreate.
    assert "no way back unless you take a backup first" in plan_of(d)["reason"]
    (planned,) = [e for e in d.events if e.reason == "UpgradePlanned"]
    assert "no way back unless you take a backup first" in planned.message


@pytest.mark.parametrize("policy", [{}, {"strategy": "BlueGreen", "allowDowntime": True}])
def test_a_downgrade_across_a_migration_is_refused_and_the_running_version_kept(policy: dict) -> None:
    d = decide("26.7.3", "26.5.6", **policy)
    assert deployment_written(d) is None
    assert d.status is not None and d.status["phase"] == "Degraded"
    degraded = next(c for c in d.status["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "UpgradeRefused" and "older minor line" in degraded["message"]
    assert plan_of(d)["path"] == upgrade_plan.REFUSE
    assert "UpgradeRefused" in [e.reason for e in d.events if e.type == "Warning"]
    assert not [e for e in d.events if e.reason == "UpgradePlanned"]


def test_blue_green_across_a_migration_without_a_copy_is_refused() -> None:
    d = decide("26.5.6", "26.7.3", strategy="BlueGreen")
    assert deployment_written(d) is None
    degraded = next(c for c in (d.status or {})["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "UpgradeRefused" and "allowDowntime" in degraded["message"]


def test_blue_green_across_a_migration_recreates_when_downtime_is_allowed() -> None:
    d = decide("26.5.6", "26.7.3", strategy="BlueGreen", allowDowntime=True)
    written = deployment_written(d)
    assert written is not None and written["spec"]["strategy"]["type"] == "Recreate"
    assert plan_of(d)["path"] == upgrade_plan.RECREATE


def test_the_last_plan_stays_in_status_once_the_image_runs_and_is_not_announced_again() -> None:
    first = decide("26.5.6", "26.7.3")
    assert first.status is not None
    again = decide("26.7.3", "26.7.3", status=first.status)
    assert again.status is None or again.status["upgradePlan"] == first.status["upgradePlan"]
    assert not [e for e in again.events if e.reason == "UpgradePlanned"]


def test_a_blue_green_upgrade_records_its_path_when_the_machine_starts() -> None:
    from keycloak_operator.core import bluegreen as bg
    from keycloak_operator.models.keycloak import BlueGreenStatus

    wanted = spec("26.7.3", strategy="BlueGreen")
    first = observed(wanted, running("26.7.0"))
    started = BlueGreenStatus(
        state=bg.BACKING_UP,
        blue_image=f"{KC}:26.7.0",
        green_image=f"{KC}:26.7.3",
        blue_track="a",
        green_track="b",
    )
    d = reconcile.decide(wanted, first, now=NOW, blue_green=started)
    assert deployment_written(d) is None  # blue stays as it is
    assert plan_of(d)["path"] == upgrade_plan.BLUE_GREEN_SHARED
    # Later passes in flight keep the record and do not plan again.
    later = dict(first.keycloak, status=d.status)
    waiting = started.model_copy(update={"state": bg.WAITING_FOR_GREEN})
    again = reconcile.decide(
        wanted,
        dataclasses.replace(first, keycloak=later),
        now="2026-01-01T00:00:05Z",
        blue_green=waiting,
    )
    assert again.status is None or again.status["upgradePlan"] == d.status["upgradePlan"]
    assert not [e for e in again.events if e.reason == "UpgradePlanned"]


def rendered(image: str, **isolation: Any) -> dict[str, Any]:
    s = spec(image).model_copy(
        update={"cache_isolation": spec(image).cache_isolation.model_validate(isolation)}
    )
    deployment = render_deployment(
        OWNER, s, image=s.image, track="a", version=versions.version_of(s).format()
    )
    deployment["metadata"]["uid"] = "blue-uid"
    return deployment


def test_a_change_of_jgroups_stack_alone_recreates() -> None:
    """Keycloak: a cache-stack change needs every node stopped; the same image rolls otherwise."""
    wanted = KeycloakSpec.model_validate(
        {**spec("26.7.3").wire(), "cacheIsolation": {"autoRevision": True, "stack": "jdbc-ping"}}
    )
    d = reconcile.decide(wanted, observed(wanted, rendered("26.7.3", autoRevision=True)), now=NOW)
    written = deployment_written(d)
    assert written is not None and written["spec"]["strategy"]["type"] == "Recreate"


def test_from_26_8_a_renamed_green_beside_jdbc_ping_blue_is_refused_by_the_reconcile() -> None:
    isolation = {"clusterName": "green", "stack": "jdbc-ping"}
    wanted = KeycloakSpec.model_validate(
        {**spec("26.8.1", strategy="BlueGreen").wire(), "cacheIsolation": isolation}
    )
    blue = rendered("26.8.0", clusterName="blue", stack="jdbc-ping")
    d = reconcile.decide(wanted, observed(wanted, blue), now=NOW)
    degraded = next(c for c in (d.status or {})["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "UpgradeRefused" and "report unhealthy" in degraded["message"]
    assert deployment_written(d) is None
