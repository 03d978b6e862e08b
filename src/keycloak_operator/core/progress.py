"""What `keycloak-operator status NAME` shows, built from what the API server holds: the Keycloak, its blue
and green Deployments and its Events. Pure, so every state's wording is tested without a cluster."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core.bluegreen import clock
from keycloak_operator.kernel import names

EVENTS_SHOWN = 8

# What the machine waits for in each state, in the words an on-call engineer needs.
WAITING_FOR: Mapping[str, str] = {
    bg.IDLE: "nothing: no upgrade in flight",
    bg.BACKING_UP: "the database backup {backup} to complete",
    bg.COPYING_DATABASE: "the copy of blue's database for green (Job {copy_job}) to complete",
    bg.PROVISIONING_GREEN: "green's Deployment and discovery Service to be created",
    bg.WAITING_FOR_GREEN: "every green replica to be Ready and listed as serving by green's EndpointSlices",
    bg.CUTTING_OVER: "the public Service to select green",
    bg.DRAINING: "the drain delay to pass, so requests in flight on blue finish",
    bg.TEARING_DOWN_BLUE: "blue's Deployment to be deleted",
    bg.PROMOTING: "the canonical Deployment to adopt green's pods",
    bg.COMPLETED: "nothing: the upgrade is complete",
    bg.ROLLING_BACK: "traffic to be back on blue and green removed",
    bg.CANCELLING: "green to be removed (the spec went back to blue's image)",
    bg.FAILED: "a change of spec.image (the failed image is not retried)",
}


@dataclass(frozen=True)
class Track:
    role: str  # blue or green
    deployment: str
    image: str
    ready: int
    desired: int


@dataclass(frozen=True)
class EventLine:
    age_seconds: float | None
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class Progress:
    namespace: str
    name: str
    phase: str
    image: str
    next_version: str
    current_version: str
    last_version: str
    state: str
    in_state_seconds: float | None
    waiting_for: str
    deadline_in_seconds: float | None
    message: str
    tracks: tuple[Track, ...]
    events: tuple[EventLine, ...]
    plan: str = ""  # the planner's last path and why (status.upgradePlan), empty before any image change
    database: str = ""  # which database serves, when a copy is or was involved (status.database, blueGreen)


def _age(stamp: str, now: datetime) -> float | None:
    try:
        return max((clock.utc(now) - clock.utc(datetime.fromisoformat(stamp))).total_seconds(), 0.0)
    except (TypeError, ValueError):
        return None


def _track(role: str, deployment: Mapping[str, Any] | None) -> Track | None:
    if deployment is None:
        return None
    spec, status = deployment.get("spec") or {}, deployment.get("status") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or [{}]
    return Track(
        role=role,
        deployment=str(deployment["metadata"]["name"]),
        image=str(containers[0].get("image", "")),
        ready=int(status.get("readyReplicas") or 0),
        desired=int(spec.get("replicas") or 0),
    )


def _events(events: Sequence[Mapping[str, Any]], now: datetime) -> tuple[EventLine, ...]:
    def when(e: Mapping[str, Any]) -> str:
        return str(e.get("lastTimestamp") or e.get("eventTime") or e.get("firstTimestamp") or "")

    newest = sorted(events, key=when)[-EVENTS_SHOWN:]
    return tuple(
        EventLine(
            _age(when(e), now),
            str(e.get("type") or ""),
            str(e.get("reason") or ""),
            str(e.get("message") or ""),
        )
        for e in newest
    )


def progress(
    keycloak: Mapping[str, Any],
    blue: Mapping[str, Any] | None,
    green: Mapping[str, Any] | None,
    events: Sequence[Mapping[str, Any]],
    now: datetime,
) -> Progress:
    meta, status = keycloak["metadata"], keycloak.get("status") or {}
    versions = status.get("versions") or {}
    upgrade = status.get("blueGreen") or {}
    state = str(upgrade.get("state") or bg.IDLE)
    history = upgrade.get("history") or []
    entered = next((h.get("at") for h in reversed(history) if h.get("state") == state), None)
    deadline = str(upgrade.get("deadline") or "")
    waiting = WAITING_FOR.get(state, "the operator (unknown state)").format(
        backup=upgrade.get("backupName") or "(not created yet)",
        copy_job=upgrade.get("copyJob") or "(not created yet)",
    )
    tracks = tuple(t for t in (_track("blue", blue), _track("green", green)) if t is not None)
    planned = status.get("upgradePlan") or {}
    plan = (
        f"{planned.get('path')}: {planned.get('fromImage', '')} -> {planned.get('toImage', '')}, because "
        f"{planned.get('reason', '')}"
        if planned.get("path")
        else ""
    )
    if plan and planned.get("compatibilityCheck"):
        plan += f" (Keycloak's compatibility check: {planned['compatibilityCheck']})"
    if planned.get("downtimeSeconds") is not None:
        plan += f"; no pod was ready for {planned['downtimeSeconds']} s"
    elif planned.get("downtimeStarted"):
        plan += f"; no pod ready since {planned['downtimeStarted']}"
    return Progress(
        database=_database(status.get("database") or {}, upgrade),
        namespace=str(meta["namespace"]),
        name=str(meta["name"]),
        phase=str(status.get("phase") or "Pending"),
        image=str((keycloak.get("spec") or {}).get("image", "")),
        next_version=str(versions.get("nextVersion") or ""),
        current_version=str(versions.get("currentVersion") or ""),
        last_version=str(versions.get("lastVersion") or ""),
        state=state,
        in_state_seconds=_age(entered, now) if entered else None,
        waiting_for=waiting,
        deadline_in_seconds=clock.remaining(deadline, now) if deadline and state not in bg.AT_REST else None,
        message=str(upgrade.get("message") or ""),
        tracks=tracks,
        events=_events(events, now),
        plan=plan,
    )


def _database(recorded: Mapping[str, Any], upgrade: Mapping[str, Any]) -> str:
    """`serving X (copy of Y)`, and the copy upgrade's databases and write window; empty when no copy."""
    parts = []
    if recorded.get("serving"):
        parts.append(f"serving {recorded['serving']}")
        if recorded.get("copiedFrom"):
            parts[-1] += f" (a copy standing in for {recorded['copiedFrom']})"
    if upgrade.get("path") == "BlueGreenCopy":
        parts.append(
            f"blue on {upgrade.get('blueDatabase') or '-'}, green on {upgrade.get('greenDatabase') or '-'}"
        )
        if upgrade.get("writeWindowSeconds") is not None:
            parts.append(f"write window {upgrade['writeWindowSeconds']} s (blue's writes after the copy)")
    return "; ".join(parts)


def deployments_of(name: str) -> tuple[str, str]:
    """The blue (canonical) and green Deployment names the view reads."""
    return names.deployment(name), names.deployment(name, green=True)


def duration(seconds: float | None) -> str:
    """A compact age: 42s, 3m05s, 2h07m."""
    if seconds is None:
        return "-"
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{(s % 3600) // 60:02d}m"
