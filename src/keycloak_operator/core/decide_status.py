"""The status part of `reconcile.decide`: the status to write and the events that tell what changed.

Pure. The problems come from the other parts and the spec; each is told by an event once, when it
appears, and the Degraded condition lists every one.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core import children, monitoring, optimized, preflight_gate, status
from keycloak_operator.core.common import conditions
from keycloak_operator.core.decide_inputs import Facts
from keycloak_operator.core.decide_upgrade import Progress
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names
from keycloak_operator.kernel.events import Event
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import DatabaseStatus, PreflightStatus


def events(facts: Facts, problems: list[conditions.Wanted]) -> list[Event]:
    """The Warnings of this pass: monitoring that became unavailable, what the preflight found, cache
    isolation turned off, and every problem the Degraded condition did not hold yet."""
    previous, cache, proof = facts.previous, facts.cache, facts.proof
    told: list[Event] = []
    monitored = monitoring.condition(
        facts.spec, facts.owner.name, crd_served=facts.observed.service_monitor_served
    )
    before = conditions.find(previous.conditions, conditions.MONITORED)
    if (
        monitored is not None
        and monitored.status == "False"
        and (before is None or (before.status, before.reason) != ("False", monitored.reason))
    ):
        told.append(Event("Warning", monitoring.UNAVAILABLE, monitored.message))
    told.extend(
        Event("Warning", f.reason, f.message) for f in preflight_gate.findings(previous.preflight, proof)
    )
    if cache.warning and previous.cache_cluster.reason != cache.reason:
        told.append(Event("Warning", "CacheIsolationDisabled", cache.reason))
    # Each problem is told once, when it appears: the Degraded condition lists every one it held.
    already = conditions.find(previous.conditions, conditions.DEGRADED)
    held = already.message.split(status.ALSO) if already is not None and already.status == "True" else []
    for problem in problems:
        if problem.message not in held:
            told.append(Event("Warning", problem.reason, problem.message))
    return told


def new_status(
    facts: Facts, problems: list[conditions.Wanted], progress: Progress, now: str
) -> dict[str, Any] | None:
    """The full new status, or None when it is unchanged."""
    spec, owner, previous, image = facts.spec, facts.owner, facts.previous, facts.image
    new = status.compute(
        status.StatusInputs(
            keycloak=owner.name,
            spec=spec,
            previous=previous,
            serving=facts.serving,
            serving_image=image,
            cache=facts.cache,
            problems=problems,
            track=bg.serving_track(facts.blue_green, facts.track),
            blue_green=facts.blue_green,
            now=now,
            generation=facts.generation,
            service_monitor_served=facts.observed.service_monitor_served,
            optimized=optimized_condition(owner, spec, image, facts.proof),
        )
    )
    wire = new.model_copy(
        update={
            "versions": progress.versions,
            "upgrade_plan": progress.planned,
            "database": _database(facts),
            "preflight": facts.proof,
            "pod_defaults": facts.observed.pod_defaults or previous.pod_defaults,
        }
    ).wire()
    changed = wire != previous.wire() or not facts.observed.keycloak.get("status")
    return wire if changed else None


def optimized_condition(
    owner: children.Owner, spec: KeycloakSpec, image: str, proof: PreflightStatus | None
) -> conditions.Wanted | None:
    """The Optimized condition of the pods running `image` (None while nothing is known of its build)."""
    pod = render_deployment(owner, spec, image=image, track=names.TRACKS[0], version="")
    return optimized.condition(optimized.verdict(proof, image, pod["spec"]["template"]["spec"]))


def _database(facts: Facts) -> DatabaseStatus | None:
    """status.database: the database the canonical pods use, and the one the serving pods use."""
    blue_green, database = facts.blue_green, facts.database
    serving_database = database.name
    if (
        blue_green is not None
        and blue_green.green_database
        and bg.serving_track(blue_green, facts.track) == (blue_green.green_track)
    ):
        serving_database = blue_green.green_database
    recorded = database.model_copy(update={"serving": serving_database})
    # Recorded only once a copy is involved: a Keycloak that never had one keeps the status it had.
    database_status = (
        recorded if recorded != DatabaseStatus(name=database.name, serving=database.name) else None
    )
    if facts.previous.database is not None:
        database_status = recorded
    return database_status
