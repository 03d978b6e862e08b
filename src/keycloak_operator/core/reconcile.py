"""The steady-state reconcile decision: observed world in, writes, status and events out.

Pure. The shell observes (reads the Keycloak and its children), calls `decide`, then performs exactly the
writes returned. Nothing here knows about kopf or any client.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from keycloak_operator.core import (
    children,
    conditions,
    drift,
    durations,
    keycloak_config,
    names,
    rollout,
    versions,
)
from keycloak_operator.core.cache_cluster import CacheClusterResolution, resolve_cache_cluster
from keycloak_operator.models.keycloak import CacheClusterStatus, KeycloakSpec, KeycloakStatus

EventType = Literal["Normal", "Warning"]


@dataclass(frozen=True)
class Event:
    type: EventType
    reason: str
    message: str


@dataclass(frozen=True)
class Observed:
    """What the shell read for one Keycloak. `keycloak` is the stored object, status included."""

    keycloak: dict[str, Any]
    deployment: dict[str, Any] | None
    public_service: dict[str, Any] | None
    discovery_service: dict[str, Any] | None
    existing_secrets: frozenset[str]
    version: str = ""


@dataclass(frozen=True)
class Decision:
    apply: list[dict[str, Any]] = field(default_factory=list)
    create_admin_secret: bool = False
    status: dict[str, Any] | None = None  # the full new status, or None when unchanged
    events: list[Event] = field(default_factory=list)
    revision: dict[str, Any] | None = None  # a ControllerRevision to record (the spec that just rolled out)


def owner_of(keycloak: dict[str, Any]) -> children.Owner:
    meta = keycloak["metadata"]
    return children.Owner(name=meta["name"], namespace=meta["namespace"], uid=meta["uid"])


def stored_status(keycloak: dict[str, Any]) -> KeycloakStatus:
    return KeycloakStatus.model_validate(keycloak.get("status") or {})


def admin_secret_name(owner: children.Owner, spec: KeycloakSpec) -> str:
    return spec.admin_secret.name if spec.admin_secret is not None else names.admin_secret(owner.name)


def _problems(
    spec: KeycloakSpec, observed: Observed, owner: children.Owner, secret: str
) -> list[conditions.Wanted]:
    """What only the operator can judge; any of these blocks rolling pods that could not start."""
    problems = []
    generated = spec.admin_secret is None
    missing = [
        s
        for s in keycloak_config.referenced_secrets(spec, secret)
        if s not in observed.existing_secrets and not (generated and s == secret)
    ]
    if missing:
        problems.append(
            conditions.Wanted(
                conditions.DEGRADED,
                "True",
                "SecretNotFound",
                f"Secret(s) {', '.join(sorted(missing))} not found in namespace {owner.namespace}; "
                "pods are not rolled until they exist",
            )
        )
    reserved = keycloak_config.reserved_env_conflicts(spec)
    if reserved:
        problems.append(
            conditions.Wanted(
                conditions.DEGRADED,
                "True",
                "ReservedEnv",
                f"spec.env sets {', '.join(reserved)}, which the operator manages; remove them",
            )
        )
    return problems


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


def decide(spec: KeycloakSpec, observed: Observed, *, now: str) -> Decision:
    owner = owner_of(observed.keycloak)
    generation = int(observed.keycloak["metadata"].get("generation", 0))
    previous = stored_status(observed.keycloak)
    observed_track = rollout.track_of(observed.deployment) if observed.deployment else None
    track = observed_track or previous.track or names.TRACKS[0]
    cache = resolve_cache_cluster(owner.name, spec.cache_isolation, spec.image)
    secret = admin_secret_name(owner, spec)
    problems = _problems(spec, observed, owner, secret)

    # nextVersion is recorded with this pass's status, which the shell writes before any child.
    slots = versions.begin(previous.versions, observed.version)
    desired_services = [
        children.public_service(owner, track),
        children.discovery_service(owner, track, cache.name),
    ]
    observed_services = [observed.public_service, observed.discovery_service]
    writes = [
        obj
        for obj, actual in zip(desired_services, observed_services, strict=True)
        if drift.needs_apply(obj, actual)
    ]
    if not problems:
        desired_deployment = children.deployment(
            children.WorkloadInputs(
                owner=owner,
                spec=spec,
                track=track,
                cache_cluster=cache.name,
                admin_secret=secret,
                version=observed.version,
                recreate=rollout.use_recreate(observed.deployment, spec.image, cache.name),
                progress_deadline_seconds=max(1, int(durations.parse(spec.upgrade_policy.rollout_timeout))),
            )
        )
        # The Deployment goes first: with Recreate its old pods stop before the discovery selector moves on.
        if drift.needs_apply(desired_deployment, observed.deployment):
            writes.insert(0, desired_deployment)
    stalled = _stalled(observed, slots.next_version)
    if stalled is not None:
        problems.append(stalled)

    events: list[Event] = []
    revision = None
    if slots.next_version and _rolled_out(spec, observed, slots.next_version):
        slots = versions.complete(slots)
        revision = children.controller_revision(owner, slots.current_version, spec, generation)
        previous_text = f" (last good: {slots.last_version})" if slots.last_version else ""
        events.append(Event("Normal", "VersionRolledOut", f"running {slots.current_version}{previous_text}"))
    elif slots.next_version and slots.next_version != previous.versions.next_version:
        events.append(Event("Normal", "VersionStarted", f"rolling out {slots.next_version}"))

    if cache.warning and previous.cache_cluster.reason != cache.reason:
        events.append(Event("Warning", "CacheIsolationDisabled", cache.reason))
    for problem in problems:
        already = conditions.find(previous.conditions, conditions.DEGRADED)
        if already is None or already.message != problem.message:
            events.append(Event("Warning", problem.reason, problem.message))

    status = _status(spec, observed, previous, cache, problems, track=track, now=now, generation=generation)
    new_status = status.model_copy(update={"versions": slots}).wire()
    changed = new_status != previous.wire() or not observed.keycloak.get("status")
    return Decision(
        apply=writes,
        create_admin_secret=spec.admin_secret is None and secret not in observed.existing_secrets,
        status=new_status if changed else None,
        events=events,
        revision=revision,
    )


def _rolled_out(spec: KeycloakSpec, observed: Observed, version: str) -> bool:
    """Every replica Ready on the Deployment rendered for `version`."""
    dep = observed.deployment
    return (
        dep is not None
        and rollout.version_of(dep) == version
        and rollout.rollout_complete(dep)
        and int(dep.get("spec", {}).get("replicas", -1)) == spec.replicas
    )


def _status(
    spec: KeycloakSpec,
    observed: Observed,
    previous: KeycloakStatus,
    cache: CacheClusterResolution,
    problems: list[conditions.Wanted],
    *,
    track: str,
    now: str,
    generation: int,
) -> KeycloakStatus:
    dep = observed.deployment
    ready = rollout.ready_replicas(dep)
    done = rollout.rollout_complete(dep) and rollout.image_of(dep or {}) == spec.image
    done = done and int((dep or {}).get("spec", {}).get("replicas", -1)) == spec.replicas
    if problems:
        phase = "Degraded"
    elif done:
        phase = "Running"
    elif previous.phase in ("Running", "Upgrading") and dep is not None:
        phase = "Upgrading"
    else:
        phase = "Pending"

    wanted = [
        conditions.Wanted(
            conditions.READY,
            "True" if done else "False",
            "AllReplicasReady" if done else "ReplicasNotReady",
            f"{ready}/{spec.replicas} replicas ready",
        ),
        conditions.Wanted(
            conditions.PROGRESSING,
            "False" if done else "True",
            "RolloutComplete" if done else "RollingOut",
            f"image {spec.image}" if done else f"rolling out image {spec.image}",
        ),
        problems[0] if problems else conditions.Wanted(conditions.DEGRADED, "False", "AsExpected", ""),
        conditions.Wanted(
            conditions.CACHE_ISOLATED,
            "True" if cache.isolated else "False",
            {"clusterName": "ExplicitName", "autoRevision": "AutoRevision", "autoSuffix": "AutoSuffix"}.get(
                cache.source, "NotConfigured"
            )
            if cache.isolated
            else ("IsolationUnavailable" if cache.warning else "NotConfigured"),
            cache.reason or (f"cache cluster {cache.name}" if cache.name else "cache isolation is off"),
        ),
    ]
    return previous.model_copy(
        update={
            "observed_generation": generation,
            "phase": phase,
            "replicas": int((dep or {}).get("status", {}).get("replicas", 0) or 0),
            "ready_replicas": ready,
            "selector": ",".join(
                f"{k}={v}" for k, v in names.server_selector(owner_of(observed.keycloak).name, track).items()
            ),
            "track": track,
            "image": rollout.image_of(dep) if dep else "",
            "conditions": conditions.merge(previous.conditions, wanted, now=now, generation=generation),
            "cache_cluster": CacheClusterStatus(
                name=cache.name or "", source=cache.source, isolated=cache.isolated, reason=cache.reason
            ),
        }
    )


def change_in_flight(status: dict[str, Any]) -> bool:
    """A Keycloak in the middle of a change goes first after a restart (resume before routine work)."""
    parsed = KeycloakStatus.model_validate(status)
    blue_green = parsed.blue_green
    upgrading = blue_green is not None and blue_green.state not in ("", "Idle", "Completed", "Failed")
    return upgrading or bool(parsed.versions.next_version)
