"""The Keycloak's status: phase, replica counts and conditions, computed from what was observed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from keycloak_operator.core import monitoring, rollout
from keycloak_operator.core.bluegreen import AT_REST, FAILED
from keycloak_operator.core.cache_cluster import CacheClusterResolution
from keycloak_operator.core.common import conditions
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import CacheClusterStatus, KeycloakSpec, KeycloakStatus
from keycloak_operator.models.upgrade_status import BlueGreenStatus

_CACHE_REASONS = {"clusterName": "ExplicitName", "autoRevision": "AutoRevision", "autoSuffix": "AutoSuffix"}


@dataclass(frozen=True)
class StatusInputs:
    keycloak: str
    spec: KeycloakSpec
    previous: KeycloakStatus
    serving: dict[str, Any] | None  # the Deployment that serves traffic now
    serving_image: str
    cache: CacheClusterResolution
    problems: list[conditions.Wanted]
    track: str
    blue_green: BlueGreenStatus | None
    now: str
    generation: int
    service_monitor_served: bool = False  # the cluster serves ServiceMonitors (observed by the shell)
    optimized: conditions.Wanted | None = None  # core/optimized.py


# Between problems in the Degraded condition's message: the first gives the reason, every one is listed.
ALSO = "; also: "


def degraded(problems: list[conditions.Wanted]) -> conditions.Wanted:
    """One Degraded condition naming every problem (the first one's reason): a problem not shown would be
    reported again by an event on every pass (core/decide_status.py reports those the condition did not
    hold)."""
    if not problems:
        return conditions.Wanted(conditions.DEGRADED, "False", "AsExpected", "")
    first = problems[0]
    return conditions.Wanted(
        conditions.DEGRADED, "True", first.reason, ALSO.join(p.message for p in problems)
    )


def compute(i: StatusInputs) -> KeycloakStatus:
    dep = i.serving
    ready = rollout.ready_replicas(dep)
    upgrading = i.blue_green is not None and i.blue_green.state not in AT_REST
    failed = i.blue_green is not None and i.blue_green.state == FAILED and i.serving_image != i.spec.image
    done = (
        rollout.rollout_complete(dep)
        and rollout.image_of(dep or {}) == i.serving_image
        and int((dep or {}).get("spec", {}).get("replicas", -1)) == i.spec.replicas
    )
    problems = list(i.problems)
    if failed and i.blue_green is not None:
        problems.append(conditions.Wanted(conditions.DEGRADED, "True", "UpgradeFailed", i.blue_green.message))
    if problems:
        phase = "Degraded"
    elif upgrading or (not done and i.previous.phase in ("Running", "Upgrading") and dep is not None):
        phase = "Upgrading"
    elif done:
        phase = "Running"
    else:
        phase = "Pending"

    if upgrading and i.blue_green is not None:
        progressing = conditions.Wanted(
            conditions.PROGRESSING, "True", f"BlueGreen{i.blue_green.state}", i.blue_green.message
        )
    elif done:
        progressing = conditions.Wanted(
            conditions.PROGRESSING, "False", "RolloutComplete", f"image {i.serving_image}"
        )
    else:
        progressing = conditions.Wanted(
            conditions.PROGRESSING, "True", "RollingOut", f"rolling out image {i.serving_image}"
        )
    wanted = [
        conditions.Wanted(
            conditions.READY,
            "True" if done else "False",
            "AllReplicasReady" if done else "ReplicasNotReady",
            f"{ready}/{i.spec.replicas} replicas ready",
        ),
        progressing,
        degraded(problems),
        _cache_condition(i.cache),
        _hostname_condition(i.spec),
    ]
    monitored = monitoring.condition(i.spec, i.keycloak, crd_served=i.service_monitor_served)
    if monitored is not None:
        wanted.append(monitored)
    if i.optimized is not None:
        wanted.append(i.optimized)
    return i.previous.model_copy(
        update={
            "observed_generation": i.generation,
            "phase": phase,
            "replicas": int((dep or {}).get("status", {}).get("replicas", 0) or 0),
            "ready_replicas": ready,
            "selector": names.selector_string(names.server_selector(i.keycloak, i.track)),
            "track": i.track,
            "image": rollout.image_of(dep) if dep else "",
            "conditions": conditions.merge(i.previous.conditions, wanted, now=i.now, generation=i.generation),
            "cache_cluster": CacheClusterStatus(
                name=i.cache.name or "",
                source=i.cache.source,
                isolated=i.cache.isolated,
                reason=i.cache.reason,
            ),
            "blue_green": i.blue_green,
        }
    )


def _cache_condition(cache: CacheClusterResolution) -> conditions.Wanted:
    if cache.isolated:
        return conditions.Wanted(
            conditions.CACHE_ISOLATED,
            "True",
            _CACHE_REASONS.get(cache.source, "Isolated"),
            f"cache cluster {cache.name}" + (f"; {cache.reason}" if cache.reason else ""),
        )
    reason = "IsolationUnavailable" if cache.warning else "NotConfigured"
    return conditions.Wanted(
        conditions.CACHE_ISOLATED, "False", reason, cache.reason or "cache isolation is off"
    )


def _hostname_condition(spec: KeycloakSpec) -> conditions.Wanted:
    if spec.hostname is None:
        return conditions.Wanted(
            conditions.HOSTNAME_FIXED,
            "False",
            "NoHostname",
            "spec.hostname is unset: token issuers and the links Keycloak sends (password reset, redirects) "
            "follow each request's Host header; set spec.hostname.hostname in production",
        )
    return conditions.Wanted(conditions.HOSTNAME_FIXED, "True", "Configured", spec.hostname.hostname)
