"""The downtime of a recreate, measured by the operator (core/downtime.py) and reported in
status.upgradePlan and a DowntimeMeasured event."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from keycloak_operator.core import downtime, reconcile, upgrade_plan, versions
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.models.upgrade_status import UpgradePlanStatus
from tests.unit import builders

KC = "quay.io/keycloak/keycloak"
OLD, NEW = f"{KC}:26.5.6", f"{KC}:26.7.3"
PLAN = UpgradePlanStatus(path=upgrade_plan.RECREATE, from_image=OLD, to_image=NEW, reason="a minor upgrade")
T0, T1 = "2026-01-01T00:00:00Z", "2026-01-01T00:00:42Z"


def deployment(image: str, ready: int, *, version: str = "v2", generation: int = 2, seen: int = 2) -> dict:
    return {
        "metadata": {"generation": generation, "annotations": {names.ANNOTATION_VERSION: version}},
        "spec": {"template": {"spec": {"containers": [{"image": image}]}}},
        "status": {"observedGeneration": seen, "readyReplicas": ready},
    }


def test_the_gap_starts_when_no_pod_is_ready_on_the_new_version() -> None:
    started = downtime.measure(PLAN, deployment(NEW, 0), "v2", 2, T0)
    assert started.plan.downtime_started == T0 and started.plan.downtime_seconds is None
    assert started.message == ""


def test_it_ends_when_a_pod_of_the_new_image_is_ready() -> None:
    plan = PLAN.model_copy(update={"downtime_started": T0})
    done = downtime.measure(plan, deployment(NEW, 1), "v2", 2, T1)
    assert done.plan.downtime_seconds == 42 and done.plan.downtime_started == T0
    assert "no pod was ready for 42 s" in done.message and OLD in done.message and NEW in done.message
    # Measured once: later passes change nothing and announce nothing.
    again = downtime.measure(done.plan, deployment(NEW, 2), "", 2, "2026-01-01T00:05:00Z")
    assert again.plan == done.plan and again.message == ""


def test_nothing_is_measured_outside_a_recreate_or_before_the_controller_saw_the_change() -> None:
    cases = [
        (PLAN.model_copy(update={"path": upgrade_plan.ROLL}), deployment(NEW, 0), "v2", 2),
        (PLAN, deployment(NEW, 0, seen=1), "v2", 2),  # status of the previous generation
        (PLAN, {**deployment(NEW, 0), "status": {}}, "v2", 2),  # no status yet
        (PLAN, deployment(OLD, 2, version="v1"), "v2", 2),  # old pods still serving
        (PLAN, deployment(NEW, 0, version="v1"), "v2", 2),  # not yet the new version
        (PLAN, deployment(NEW, 0), "", 2),  # no rollout under way
        (PLAN, deployment(NEW, 0), "v2", 0),  # scaled to zero: nobody expects a pod
        (PLAN, None, "v2", 2),
    ]
    for plan, dep, rolling, replicas in cases:
        assert downtime.measure(plan, dep, rolling, replicas, T0).plan == plan, (plan, dep, rolling)


def test_it_does_not_end_on_a_ready_pod_of_the_old_image() -> None:
    plan = PLAN.model_copy(update={"downtime_started": T0})
    assert downtime.measure(plan, deployment(OLD, 1), "v2", 2, T1).plan == plan


@given(
    st.datetimes(min_value=dt.datetime(2020, 1, 1), max_value=dt.datetime(2040, 1, 1)),
    st.integers(min_value=0, max_value=10**6),
)
def test_the_figure_is_the_whole_seconds_between_the_two_passes(start: dt.datetime, gap: int) -> None:
    fmt = "%Y-%m-%dT%H:%M:%SZ"
    begin = start.replace(microsecond=0)
    plan = PLAN.model_copy(update={"downtime_started": begin.strftime(fmt)})
    end = (begin + dt.timedelta(seconds=gap)).strftime(fmt)
    assert downtime.measure(plan, deployment(NEW, 1), "v2", 1, end).plan.downtime_seconds == gap


# --- through the reconcile ---------------------------------------------------------------------------------


def _spec(image: str) -> Any:
    return builders.spec(image=image, replicas=2, cacheIsolation={"autoRevision": True})


def _rendered(image: str, ready: int, generation: int) -> dict[str, Any]:
    s = _spec(image)
    dep = render_deployment(
        builders.OWNER, s, image=image, track="a", version=versions.version_of(s).format()
    )
    dep["metadata"]["generation"] = generation
    dep["status"] = {"observedGeneration": generation, "readyReplicas": ready, "replicas": ready}
    return dep


def test_a_recreate_reports_its_downtime_in_status_and_one_event_and_survives_a_restart() -> None:
    wanted = _spec(NEW)

    def step(dep: dict[str, Any], status: dict[str, Any], now: str) -> reconcile.Decision:
        seen = builders.observed(wanted, deployment=dep, generation=2, status=status)
        return reconcile.decide(wanted, seen, now=now)

    planned = step(_rendered(OLD, 2, 1), {}, "2026-01-01T00:00:00Z")
    assert planned.status is not None
    assert planned.status["upgradePlan"]["path"] == upgrade_plan.RECREATE
    assert (
        "downtimeStarted" not in planned.status["upgradePlan"]
        or not planned.status["upgradePlan"]["downtimeStarted"]
    )
    # The old pods stopped: Recreate leaves none ready on the new version's Deployment.
    stopped = step(_rendered(NEW, 0, 2), planned.status, "2026-01-01T00:00:05Z")
    assert stopped.status is not None
    assert stopped.status["upgradePlan"]["downtimeStarted"] == "2026-01-01T00:00:05Z"
    # The operator restarts here: everything it knows is in status.
    ready = step(_rendered(NEW, 1, 2), stopped.status, "2026-01-01T00:00:51Z")
    assert ready.status is not None
    assert ready.status["upgradePlan"]["downtimeSeconds"] == 46
    assert ready.status["upgradePlan"]["path"] == upgrade_plan.RECREATE  # the plan itself stays
    reported = [e for e in ready.events if e.reason == downtime.REASON]
    assert len(reported) == 1 and "46 s" in reported[0].message
    later = step(_rendered(NEW, 2, 2), ready.status, "2026-01-01T00:01:30Z")
    assert not [e for e in later.events if e.reason == downtime.REASON]
    assert (later.status or ready.status)["upgradePlan"]["downtimeSeconds"] == 46


def test_a_roll_measures_nothing() -> None:
    wanted = _spec(f"{KC}:26.7.5")
    seen = builders.observed(wanted, deployment=_rendered(f"{KC}:26.7.3", 2, 1), generation=2, status={})
    first = reconcile.decide(wanted, seen, now=T0)
    assert first.status is not None and first.status["upgradePlan"]["path"] == upgrade_plan.ROLL
    seen = builders.observed(
        wanted, deployment=_rendered(f"{KC}:26.7.5", 0, 2), generation=2, status=first.status
    )
    rolling = reconcile.decide(wanted, seen, now=T1)
    assert not (rolling.status or first.status)["upgradePlan"].get("downtimeStarted")


def test_a_hand_edited_start_is_dropped_never_an_error() -> None:
    """status is writable through the status subresource: a start that is not a time must neither stop the
    reconcile nor give a figure."""
    edited = PLAN.model_copy(update={"downtime_started": "yesterday"})
    ready = downtime.measure(edited, deployment(NEW, 1), "v2", 2, T1)
    assert ready.plan.downtime_started == "" and ready.plan.downtime_seconds is None and ready.message == ""
    down = downtime.measure(edited, deployment(NEW, 0), "v2", 2, T1)
    assert down.plan.downtime_started == T1  # measured afresh from this pass
