"""The upgrade part of `reconcile.decide`: how the canonical Deployment moves to the spec's image.

Pure. `plan` chooses the path before any child is rendered (roll, recreate, refuse, or wait for Keycloak's
compatibility check and the image's preflight); `progress` follows the change once chosen: the version
slots, the Jobs that answer for it, the recorded plan and its measured downtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core import (
    children,
    compatibility_check,
    downtime,
    preflight,
    preflight_gate,
    rollout,
    upgrade_plan,
    versions,
)
from keycloak_operator.core.common import conditions
from keycloak_operator.core.decide_inputs import Facts, Observed
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel.events import Event
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import UpgradePlanStatus, Versions


@dataclass(frozen=True)
class Planning:
    plan: upgrade_plan.Plan | None  # None: nothing is planned this pass
    checking: bool  # Keycloak's own compatibility check has not answered for this change
    problems: list[conditions.Wanted] = field(default_factory=list)


@dataclass(frozen=True)
class Progress:
    versions: Versions  # status.versions as this pass leaves them
    revision: dict[str, Any] | None  # a ControllerRevision to record (the spec that just rolled out)
    planned: UpgradePlanStatus | None  # status.upgradePlan
    create: list[dict[str, Any]]  # the Jobs that answer for the change (made once, never applied over)
    events: list[Event]
    problems: list[conditions.Wanted]


def plan(facts: Facts) -> Planning:
    """The path the canonical Deployment takes to the spec's image, and the problems that holds back."""
    spec, owner, canonical = facts.spec, facts.owner, facts.canonical
    in_flight, pre = facts.in_flight, facts.observed.preflight
    problems: list[conditions.Wanted] = []
    # The planner decides how the canonical Deployment moves to a new image: roll, recreate, or refuse and
    # keep the running version. Blue-green's own path is taken by the machine, which started this very pass
    # (and froze blue); it is planned here once more only to be recorded.
    plan = None
    stored_bg = facts.previous.blue_green
    just_started = in_flight and (stored_bg is None or stored_bg.state in bg.AT_REST)
    check = facts.observed.compatibility
    # Keycloak's own compatibility check has not answered for this change: nothing moves until it does.
    checking = False
    if canonical is not None and not facts.kept and (just_started or not (facts.blue_frozen or in_flight)):
        checking = check.pending or pre.holds
        verified = preflight_gate.verified_version(facts.proof, spec.image)
        plan = (
            None
            if checking
            else upgrade_plan.for_deployment(spec, owner.name, canonical, check.exit, verified)
        )
        if plan is not None and plan.path == upgrade_plan.REFUSE:
            problems.append(conditions.Wanted(conditions.DEGRADED, "True", "UpgradeRefused", plan.reason))
    problems.extend(p for p in [preflight_gate.problem(pre, facts.proof)] if p is not None)
    return Planning(plan=plan, checking=checking, problems=problems)


def progress(facts: Facts, planning: Planning, now: str) -> Progress:
    """Where the change stands after this pass: its version slots, the ControllerRevision of a rollout
    that completed, the Jobs to make, and the plan to record."""
    spec, owner, previous = facts.spec, facts.owner, facts.previous
    # nextVersion is recorded with this pass's status, which the shell writes before any child.
    slots = versions.begin(previous.versions, facts.observed.version)
    stalled = _stalled(facts.observed, slots.next_version)
    events: list[Event] = []
    revision = None
    if slots.next_version and _rolled_out(spec, facts.serving, slots.next_version):
        slots = versions.complete(slots)
        revision = children.controller_revision(owner, slots.current_version, spec, facts.generation)
        previous_text = f" (last good: {slots.last_version})" if slots.last_version else ""
        events.append(Event("Normal", "VersionRolledOut", f"running {slots.current_version}{previous_text}"))
    elif slots.next_version and slots.next_version != previous.versions.next_version:
        events.append(Event("Normal", "VersionStarted", f"rolling out {slots.next_version}"))
    create, planned = _jobs_and_plan(facts, planning, events)
    if planned is not None:
        measured = downtime.measure(planned, facts.canonical, slots.next_version, spec.replicas, now)
        planned = measured.plan
        if measured.message:
            events.append(Event("Normal", downtime.REASON, measured.message))
    return Progress(
        versions=slots,
        revision=revision,
        planned=planned,
        create=create,
        events=events,
        problems=[stalled] if stalled is not None else [],
    )


def _jobs_and_plan(
    facts: Facts, planning: Planning, events: list[Event]
) -> tuple[list[dict[str, Any]], UpgradePlanStatus | None]:
    """The preflight and compatibility-check Jobs this change still needs, and the plan to record (before
    its downtime is measured); what starts is told in `events`."""
    spec, owner, canonical, track = facts.spec, facts.owner, facts.canonical, facts.track
    observed, database, plan = facts.observed, facts.database, planning.plan
    pre, check = observed.preflight, observed.compatibility
    planned = facts.previous.upgrade_plan
    create: list[dict[str, Any]] = []
    checked = compatibility_check.describe(check.job, check.exit) if check.job else ""
    if pre.state == "pending" and not pre.exists:
        target = render_deployment(
            owner, spec, image=spec.image, track=track, version=observed.version, database=database.name
        )
        create.append(preflight.job(owner, target, pre.job, rollout.version_of(canonical or {})))
        events.append(Event("Normal", "PreflightStarted", f"Job {pre.job} proves {spec.image} first"))
    if planning.checking and canonical is not None:
        planned = UpgradePlanStatus(
            from_image=rollout.image_of(canonical),
            to_image=spec.image,
            reason=preflight_gate.waiting_reason(pre)
            or "waiting for Keycloak's compatibility check before choosing a path",
            compatibility_check=checked,
        )
        if check.pending and not check.exists:
            desired = render_deployment(
                owner, spec, image=spec.image, track=track, version=observed.version, database=database.name
            )
            create.append(compatibility_check.job(owner, canonical, desired, check.job))
            events.append(Event("Normal", "CompatibilityCheckStarted", checked))
    if plan is not None and plan.path != upgrade_plan.NONE:
        planned = UpgradePlanStatus(
            path=plan.path,
            from_image=rollout.image_of(canonical or {}),
            to_image=spec.image,
            reason=plan.reason,
            compatibility_check=checked,
        )
        if facts.previous.upgrade_plan is not None and _same_plan(planned, facts.previous.upgrade_plan):
            planned = facts.previous.upgrade_plan  # planned again before it started: its measurement goes on
        elif plan.path != upgrade_plan.REFUSE:  # a refusal is Degraded
            text = f"{planned.from_image} -> {planned.to_image}: {plan.path}, because {plan.reason}"
            events.append(Event("Normal", "UpgradePlanned", text))
    return create, planned


def _stalled(observed: Observed, pending_version: str) -> conditions.Wanted | None:
    """The Deployment controller gave up waiting for the new pods (progressDeadlineSeconds)."""
    dep = observed.deployment
    if dep is None or not pending_version or rollout.version_of(dep) != pending_version:
        return None
    if not rollout.progress_deadline_exceeded(dep):
        return None
    name = observed.keycloak["metadata"]["name"]
    return conditions.Wanted(
        conditions.DEGRADED,
        "True",
        "RolloutStalled",
        f"new pods of version {pending_version} did not become Ready in time; it stays in nextVersion. "
        f"Fix the spec, or run `keycloak-operator rollback {name}` to restore the last good version",
    )


def _rolled_out(spec: KeycloakSpec, dep: dict[str, Any] | None, version: str) -> bool:
    """Every replica Ready on the Deployment rendered for `version`."""
    return (
        dep is not None
        and rollout.version_of(dep) == version
        and rollout.rollout_complete(dep)
        and int(dep.get("spec", {}).get("replicas", -1)) == spec.replicas
    )


def _same_plan(a: UpgradePlanStatus, b: UpgradePlanStatus) -> bool:
    """The same change planned the same way (a measurement in progress is not part of the plan)."""
    return (a.path, a.from_image, a.to_image, a.reason) == (b.path, b.from_image, b.to_image, b.reason)
