"""The downtime of a recreate, measured by the operator: from the pass that first sees no pod of the Keycloak
ready (the old pods stopped, as Recreate stops them all before the first new one starts) to the pass that
first sees a pod of the new version ready.

Readiness is the Deployment's `readyReplicas` once its controller has seen the change (terminating pods do
not count), which is what the Service's endpoints follow. The passes run on the Deployment's own events, so
the figure is the real gap to within the timestamps' second at each end, plus the reconcile's latency (a
pass that comes late, or an operator that was down while the pods went, makes it longer). Both ends are
stored in status as they happen, so an operator restarted in the middle still reports the whole gap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from keycloak_operator.core import rollout, upgrade_plan
from keycloak_operator.core.bluegreen import clock
from keycloak_operator.models.upgrade_status import UpgradePlanStatus

REASON = "DowntimeMeasured"


@dataclass(frozen=True)
class Measurement:
    plan: UpgradePlanStatus
    message: str = ""  # once measured: the text of the event that reports it


def _seconds(start: str, end: str) -> int | None:
    """Whole seconds from `start` to `end`; None when either cannot be read."""
    begin, finish = clock.parse(start), clock.parse(end)
    if begin is None or finish is None:
        return None
    return max(0, round((finish - begin).total_seconds()))


def _observed(deployment: dict[str, Any]) -> bool:
    """The Deployment's status describes its current spec: its controller has seen the change (a Deployment
    it has not seen at all has no status yet, and says nothing about pods)."""
    meta, status = deployment.get("metadata", {}), deployment.get("status", {}) or {}
    seen = int(status.get("observedGeneration", 0) or 0)
    return seen >= 1 and seen >= int(meta.get("generation", 0) or 0)


def measure(
    plan: UpgradePlanStatus, deployment: dict[str, Any] | None, rolling_to: str, replicas: int, now: str
) -> Measurement:
    """One pass's step of the measurement of a Recreate plan whose rollout to version `rolling_to` (the
    version being rolled out, empty when none) runs on `deployment`."""
    measuring = (
        plan.path == upgrade_plan.RECREATE
        and plan.downtime_seconds is None
        and deployment is not None
        and replicas > 0
        and _observed(deployment)
    )
    if not measuring or deployment is None:
        return Measurement(plan)
    if plan.downtime_started and clock.parse(plan.downtime_started) is None:
        # A start that cannot be read (a hand-edited status) is dropped, never trusted: no figure rather
        # than a wrong one, and never an error that would stop this Keycloak's reconcile.
        plan = plan.model_copy(update={"downtime_started": ""})
    ready = rollout.ready_replicas(deployment)
    if not plan.downtime_started:
        if ready == 0 and rolling_to and rollout.version_of(deployment) == rolling_to:
            return Measurement(plan.model_copy(update={"downtime_started": now}))
        return Measurement(plan)
    seconds = _seconds(plan.downtime_started, now)
    if ready > 0 and rollout.image_of(deployment) == plan.to_image and seconds is not None:
        text = (
            f"{plan.from_image} -> {plan.to_image} (Recreate): no pod was ready for {seconds} s, from "
            f"{plan.downtime_started} to {now}"
        )
        return Measurement(plan.model_copy(update={"downtime_seconds": seconds}), text)
    return Measurement(plan)
