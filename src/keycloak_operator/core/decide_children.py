"""The children part of `reconcile.decide`: which of a Keycloak's children to apply and which to delete.

Pure. The Jobs an image change needs are the upgrade's (core/decide_upgrade.py); what goes under a name
another owner holds is dropped here (`without_foreign`), whichever part wanted it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core import (
    child_ownership,
    children,
    discovery,
    drift,
    http_route,
    ingress,
    ingress_policy,
    monitoring,
    network_policy,
    rollout,
    scheduling,
    spec_problems,
    upgrade_plan,
)
from keycloak_operator.core.common import conditions
from keycloak_operator.core.decide_inputs import Facts, Observed
from keycloak_operator.core.decide_upgrade import Planning
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.kernel import names


@dataclass(frozen=True)
class ChildWrites:
    apply: list[dict[str, Any]] = field(default_factory=list)  # in the order they are applied
    delete: list[dict[str, Any]] = field(default_factory=list)  # their stored form
    # What the installation holds back (the Ingress, the HTTPRoute): nothing else waits for it.
    problems: list[conditions.Wanted] = field(default_factory=list)


def child_writes(
    facts: Facts, planning: Planning, *, held: bool, allowed_ingress: ingress_policy.IngressPolicy
) -> ChildWrites:
    """What to apply and delete this pass. `held`: a problem holds the canonical Deployment back."""
    owner, spec, observed, track = facts.owner, facts.spec, facts.observed, facts.track
    canonical, blue_green, in_flight = facts.canonical, facts.blue_green, facts.in_flight
    blue_frozen, cache = facts.blue_frozen, facts.cache
    blue_cache = rollout.cache_cluster_of(canonical) if blue_frozen and canonical is not None else cache.name
    writes: list[dict[str, Any]] = []
    if not in_flight:  # while an upgrade runs, the machine alone moves traffic
        public = children.public_service(owner, bg.serving_track(blue_green, track), spec)
        if drift.needs_apply(public, observed.public_service):
            writes.append(public)
    # Children outside the pods. A child of the same name that this Keycloak did not make is someone
    # else's: neither taken over nor deleted.
    removals: list[dict[str, Any]] = []
    # Pods rendered before ADR 0018 query `{name}-discovery`: it stays, as it was always reconciled (the
    # canonical track, blue's cache cluster), while such pods may run; then it goes. It is never created.
    legacy = observed.discovery_service is not None and discovery.legacy_in_use(
        owner, [canonical, observed.green], upgrade_in_flight=in_flight
    )
    legacy_service = children.discovery_service(owner, track, blue_cache) if legacy else None
    _reconcile_child(legacy_service, observed.discovery_service, owner, writes, removals)
    refused = _outside_pods(facts, allowed_ingress, writes, removals)
    rendered = _deployment(facts, planning, held=held)
    # The Deployment goes first: with Recreate its old pods stop before a discovery selector moves on.
    if rendered is not None:
        writes.insert(0, rendered)
    tracks = _tracks_in_use(observed, track, rendered or canonical, blue_cache)
    # A track's membership Service is created before anything else, so its pods find their peers when
    # they start; one re-pointed goes after the Deployment; one whose track has no Deployment goes.
    membership = discovery.membership(
        owner, tracks, observed.membership_services, apart=discovery.tracks_apart(blue_green)
    )
    writes = [*membership.before_pods, *writes, *membership.after_pods]
    removals.extend(membership.delete)
    policies = {
        p["metadata"]["name"]: p
        for p in network_policy.policies(spec, owner, tracks, observed.operator_namespace)
    }
    existing_policies = {p["metadata"]["name"]: p for p in observed.network_policies}
    for name in sorted({names.network_policy(owner.name, t) for t in names.TRACKS}):
        _reconcile_child(policies.get(name), existing_policies.get(name), owner, writes, removals)
    if spec_problems.rejected_child(facts.previous, facts.generation) is not None:
        writes, removals = [], []
    return ChildWrites(apply=writes, delete=removals, problems=refused)


def without_foreign(
    wanted: ChildWrites,
    create: list[dict[str, Any]],
    facts: Facts,
    foreign: frozenset[child_ownership.Key],
    machine_writes: frozenset[child_ownership.Key],
) -> tuple[ChildWrites, list[dict[str, Any]], conditions.Wanted | None]:
    """`wanted` and `create` without what would go under a name another owner holds, and the condition that
    names those names (None when there is none)."""
    owner, check, pre = facts.owner, facts.observed.compatibility, facts.observed.preflight
    # Every Keycloak wants its operator-login Secret (created by the shell, never applied over).
    wanted_login = ("Secret", names.operator_login_secret(owner.name))
    touched = (
        {child_ownership.key(o) for o in [*wanted.apply, *wanted.delete, *create]}
        | machine_writes
        | {wanted_login}
    )
    refused = (foreign & touched) | ({("Job", check.job)} if check.foreign else set())
    refused |= {("Job", pre.job)} if pre.state == "foreign" else set()
    kept = dataclasses.replace(
        wanted,
        apply=child_ownership.allowed(wanted.apply, refused),
        delete=child_ownership.allowed(wanted.delete, refused),
    )
    return kept, child_ownership.allowed(create, refused), child_ownership.condition(refused, owner.namespace)


def _outside_pods(
    facts: Facts,
    allowed_ingress: ingress_policy.IngressPolicy,
    writes: list[dict[str, Any]],
    removals: list[dict[str, Any]],
) -> list[conditions.Wanted]:
    """The PodDisruptionBudget, Ingress, ServiceMonitor and HTTPRoute into `writes` and `removals`; the
    problems of those the installation does not allow."""
    spec, owner, observed = facts.spec, facts.owner, facts.observed
    budget = scheduling.pod_disruption_budget(spec, owner.name, owner.namespace, owner.reference())
    monitor = monitoring.service_monitor(spec, owner, crd_served=observed.service_monitor_served)
    # An Ingress the installation does not allow is neither written nor deleted: the one this Keycloak made
    # before keeps serving (deleting it would take the sign-in page down over a policy change), and nothing
    # else of the Keycloak waits for it.
    ingress_refused = ingress_policy.refusal(spec, allowed_ingress)
    pairs = [(budget, observed.pod_disruption_budget), (monitor, observed.service_monitor)]
    if ingress_refused is None:
        pairs.insert(1, (ingress.ingress(spec, owner), observed.ingress))
    # The HTTPRoute likewise; where the cluster does not serve the kind there is none to write or delete.
    route_problem = http_route.problem(
        spec, allowed_ingress, owner.namespace, served=observed.http_route_served
    )
    if route_problem is None:
        pairs.append((http_route.http_route(spec, owner), observed.http_route))
    for child, existing in pairs:
        _reconcile_child(child, existing, owner, writes, removals)
    problems: list[conditions.Wanted] = []
    if ingress_refused is not None:  # it holds back only the Ingress, not the pods
        problems.append(
            conditions.Wanted(conditions.DEGRADED, "True", ingress_policy.REASON, ingress_refused.message)
        )
    if route_problem is not None:  # likewise: it holds back only the HTTPRoute
        problems.append(route_problem)
    return problems


def _deployment(facts: Facts, planning: Planning, *, held: bool) -> dict[str, Any] | None:
    """The canonical Deployment when it is to be applied: rendered and different from the one there."""
    spec, observed, canonical, blue_green = facts.spec, facts.observed, facts.canonical, facts.blue_green
    plan, image = planning.plan, facts.image
    may_render = (
        (not facts.blue_frozen and not planning.checking)
        if canonical is not None
        else not (facts.in_flight or facts.kept)
    )
    may_render = may_render and not observed.preflight.holds
    if held or not may_render or (blue_green is not None and blue_green.state == bg.PROMOTING):
        return None
    # The canonical Deployment carries the version it runs: the spec's, or the last one while blue serves.
    version = observed.version if image == spec.image else facts.previous.versions.current_version
    desired = render_deployment(
        facts.owner,
        spec,
        image=image,
        track=facts.track,
        version=version,
        recreate=rollout.use_recreate(canonical, facts.cache.name, spec.cache_isolation.stack_in_use)
        or (plan is not None and plan.path == upgrade_plan.RECREATE),
        database=facts.database.name,
        proof=facts.proof,
    )
    return desired if drift.needs_apply(desired, canonical) else None


def _reconcile_child(
    desired: dict[str, Any] | None,
    existing: dict[str, Any] | None,
    owner: children.Owner,
    writes: list[dict[str, Any]],
    removals: list[dict[str, Any]],
) -> None:
    """Apply `desired` when it differs, delete `existing` when nothing is desired; either only when the
    existing object is this Keycloak's (or there is none)."""
    ours = child_ownership.may_write(existing, owner)
    if desired is not None and ours and drift.needs_apply(desired, existing):
        writes.append(desired)
    elif desired is None and existing is not None and ours:
        removals.append(existing)


def _tracks_in_use(
    observed: Observed, track: str, canonical: dict[str, Any] | None, cache_cluster: str | None
) -> dict[str, str | None]:
    """Track -> the cache cluster of its pods, for every Deployment there is (or is being made): the
    canonical one (as this pass leaves it: rendered, else as observed, else the cluster it will have), and
    green while it exists. A track with no Deployment has no pods to let in."""
    tracks = {track: rollout.cache_cluster_of(canonical) if canonical is not None else cache_cluster}
    green = observed.green
    green_track = rollout.track_of(green) if green is not None else None
    if green is not None and green_track and green_track not in tracks:
        tracks[green_track] = rollout.cache_cluster_of(green)
    return tracks
