"""Which JGroups discovery Services a Keycloak needs now, and in what order they are written (ADR 0018).

Pure. A pod queries only its track's membership Service, `<name>-discovery-<track>`, which selects this
Keycloak's server pods of that track's cache cluster, whatever their track. So membership, not the cluster
name, keeps cache clusters apart, on every Keycloak version (before 26.7 the name is ignored), and a
promoted green, which keeps its track, keeps a correct query without a restart.

Rules: a track in use gets its Service before its pods start (a pod that finds no peer forms a cluster of
its own); a re-pointed Service is written after the Deployment (with Recreate the old pods stop first); a
Service is deleted only when its track has no Deployment, and only when this Keycloak made it. The
colour-named `<name>-discovery` that pods rendered before ADR 0018 query is kept, as it always was
reconciled, while such pods may still run, then deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from keycloak_operator.core import child_ownership, children, drift, rollout, upgrade_plan
from keycloak_operator.kernel import names
from keycloak_operator.models.upgrade_status import BlueGreenStatus

_QUERY = "-Djgroups.dns.query="


@dataclass(frozen=True)
class Writes:
    before_pods: list[dict[str, Any]] = field(default_factory=list)  # created: before any Deployment write
    after_pods: list[dict[str, Any]] = field(default_factory=list)  # changed: after the Deployment
    delete: list[dict[str, Any]] = field(default_factory=list)


def tracks_apart(blue_green: BlueGreenStatus | None) -> bool:
    """Blue and green run versions that must never share a cache cluster, whatever their names: an upgrade
    on a database copy (a minor or major one: Keycloak's caches differ between such versions, and before
    26.7 every name is ignored). Kept after it ends: one track is left then, and changing a Service's
    selector restarts no pod. A shared-database upgrade brings the tracks together again."""
    return blue_green is not None and blue_green.path == upgrade_plan.BLUE_GREEN_COPY


def green_view(keycloak: str, blue_green: BlueGreenStatus) -> str:
    """The Service whose EndpointSlices show the blue-green machine green's pods serving. On a copy upgrade
    (tracks_apart), green's track's membership Service, which then lists green's pods only; no colour-named
    Service is made for green at all, since pods rendered before ADR 0018 query `<name>-green-discovery`
    and a blue of that template must not find green's pods. Otherwise `<name>-green-discovery`."""
    if tracks_apart(blue_green) and blue_green.green_track:
        return names.membership_service(keycloak, blue_green.green_track)
    return names.discovery_service(keycloak, green=True)


def membership(
    owner: children.Owner,
    tracks: Mapping[str, str | None],
    existing: Iterable[dict[str, Any]],
    *,
    apart: bool = False,
) -> Writes:
    """`tracks`: track -> its pods' cache cluster, for every track that has (or is getting) a Deployment.
    `existing`: the membership Services observed (by name). `apart`: see tracks_apart."""
    by_name = {s["metadata"]["name"]: s for s in existing}
    out = Writes()
    for track in names.TRACKS:
        actual = by_name.get(names.membership_service(owner.name, track))
        if not child_ownership.may_write(actual, owner):
            continue  # someone else's object under our name: neither taken over nor deleted
        if track not in tracks:
            if actual is not None:
                out.delete.append(actual)
            continue
        desired = children.membership_service(owner, track, tracks[track], apart=apart)
        if actual is None:
            out.before_pods.append(desired)
        elif drift.needs_apply(desired, actual):
            out.after_pods.append(desired)
    return out


def queries(deployment: dict[str, Any]) -> list[str]:
    """The DNS names a Deployment's pods query for JGroups peers (from JAVA_OPTS_APPEND)."""
    containers = deployment.get("spec", {}).get("template", {}).get("spec", {}).get("containers") or []
    for container in containers:
        for env in container.get("env") or []:
            if env.get("name") == "JAVA_OPTS_APPEND":
                for option in str(env.get("value", "")).split():
                    if option.startswith(_QUERY):
                        return [q.strip() for q in option[len(_QUERY) :].split(",") if q.strip()]
    return []


def legacy_in_use(
    owner: children.Owner, deployments: Iterable[dict[str, Any] | None], *, upgrade_in_flight: bool
) -> bool:
    """Whether a pod may still query the colour-named `<name>-discovery` (rendered before ADR 0018): a
    Deployment whose template queries it, one still rolling (its old ReplicaSet's pods may), or an upgrade
    in flight (during promotion green's pods run for a moment with no Deployment at all)."""
    legacy = names.discovery_dns(names.discovery_service(owner.name), owner.namespace)
    return upgrade_in_flight or any(
        d is not None and (legacy in queries(d) or not rollout.rollout_complete(d)) for d in deployments
    )
