"""The steady-state reconcile decision: observed world in, writes, status and events out.

Pure. The shell observes (reads the Keycloak and its children), calls `decide`, then performs exactly the
writes returned. Nothing here knows about kopf or any client. `decide` derives the pass's facts once
(core/decide_inputs.py), then asks its parts, one per job: the upgrade (core/decide_upgrade.py), the
children (core/decide_children.py) and the status (core/decide_status.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core import (
    build_options,
    child_ownership,
    children,
    database_copy,
    decide_children,
    decide_status,
    decide_upgrade,
    http_route,
    ingress_policy,
    preflight,
    preflight_gate,
    rollout,
    service_policy,
    spec_problems,
    versions,
)
from keycloak_operator.core.build_options import BuildOptions
from keycloak_operator.core.cache_cluster import resolve_cache_cluster
from keycloak_operator.core.common import conditions
from keycloak_operator.core.decide_inputs import Facts, Observed
from keycloak_operator.core.deployment import admin_secret_name, render_deployment
from keycloak_operator.core.images import parse_semver, release_of
from keycloak_operator.kernel import names
from keycloak_operator.kernel.events import Event
from keycloak_operator.models.keycloak import KeycloakSpec, KeycloakStatus
from keycloak_operator.models.upgrade_status import BlueGreenStatus, DatabaseStatus


@dataclass(frozen=True)
class Decision:
    apply: list[dict[str, Any]] = field(default_factory=list)
    create_admin_secret: bool = False
    create_operator_login: bool = False  # the operator's own login Secret (core/operator_login.py)
    status: dict[str, Any] | None = None  # the full new status, or None when unchanged
    events: list[Event] = field(default_factory=list)
    revision: dict[str, Any] | None = None  # a ControllerRevision to record (the spec that just rolled out)
    delete: list[dict[str, Any]] = field(
        default_factory=list
    )  # children no longer wanted (their stored form)
    create: list[dict[str, Any]] = field(default_factory=list)  # made once, never applied over (Jobs)


def owner_of(keycloak: dict[str, Any]) -> children.Owner:
    meta = keycloak["metadata"]
    return children.Owner(name=meta["name"], namespace=meta["namespace"], uid=meta["uid"])


def stored_status(keycloak: dict[str, Any]) -> KeycloakStatus:
    return KeycloakStatus.model_validate(keycloak.get("status") or {})


def decide(
    spec: KeycloakSpec,
    observed: Observed,
    *,
    now: str,
    blue_green: BlueGreenStatus | None = None,
    machine_writes: frozenset[child_ownership.Key] = frozenset(),
    allowed_ingress: ingress_policy.IngressPolicy = ingress_policy.DEFAULT_POLICY,
) -> Decision:
    """`blue_green` is the upgrade machine's status after this pass's step (None when never used);
    `machine_writes` the children its actions of this pass write or delete (bluegreen/writes.touched);
    `allowed_ingress` what the installation lets spec.ingress and spec.service ask for."""
    service_refused = service_policy.refusal(spec, allowed_ingress)
    spec = service_policy.within(spec, service_refused)
    owner = owner_of(observed.keycloak)
    # Objects under this Keycloak's child names that it did not make: the decision below sees only its own
    # children, and whatever it would write under one of those names is dropped at the end.
    foreign = child_ownership.foreign(_named_children(observed), owner)
    facts = _facts(spec, _own_children(observed, owner), owner, blue_green)
    problems = _spec_problems(facts)
    planning = decide_upgrade.plan(facts)
    problems.extend(planning.problems)
    wanted = decide_children.child_writes(
        facts, planning, held=bool(problems), allowed_ingress=allowed_ingress
    )
    progress = decide_upgrade.progress(facts, planning, now)
    problems.extend(progress.problems)
    problems.extend(wanted.problems)  # after the pods were rendered: each holds back only its own child
    if service_refused is not None:  # the Service serves without the refused settings
        problems.append(
            conditions.Wanted(conditions.DEGRADED, "True", service_policy.REASON, service_refused.message)
        )
    # Whatever this pass (or the upgrade machine's actions) would write under a name another owner holds is
    # not written, and said: first, as the Degraded condition shows one problem and this one needs a person.
    wanted, create, not_owned = decide_children.without_foreign(
        wanted, progress.create, facts, foreign, machine_writes
    )
    if not_owned is not None:
        problems.insert(0, not_owned)
    secret = admin_secret_name(owner, spec)
    return Decision(
        apply=wanted.apply,
        create_admin_secret=spec.admin_secret is None and secret not in observed.existing_secrets,
        # Made once and never applied over; one under its name that is not this Keycloak's is reported
        # (ChildNotOwned, from _named_children) and never used (core/operator_login.parse).
        create_operator_login=observed.operator_login is None,
        status=decide_status.new_status(facts, problems, progress, now),
        events=[*progress.events, *decide_status.events(facts, problems)],
        revision=progress.revision,
        delete=wanted.delete,
        create=create,
    )


def _facts(
    spec: KeycloakSpec, observed: Observed, owner: children.Owner, blue_green: BlueGreenStatus | None
) -> Facts:
    """The facts every part of `decide` reads, from `observed` as this Keycloak's own children only."""
    previous = stored_status(observed.keycloak)
    pre = observed.preflight
    proof = preflight_gate.record(previous.preflight, pre, spec.image, _preflight_pods(owner, spec, pre))
    canonical = observed.deployment
    image = bg.serving_image(blue_green, spec.image, canonical)
    track = _canonical_track(canonical, previous, blue_green)
    database = database_copy.canonical_database(
        spec,
        previous.database,
        blue_green,
        track,
        database_copy.running_database(canonical, spec.database.tier),
    )
    return Facts(
        spec=spec,
        observed=observed,
        owner=owner,
        generation=int(observed.keycloak["metadata"].get("generation", 0)),
        previous=previous,
        proof=proof,
        blue_green=blue_green,
        in_flight=bg.in_flight(blue_green),
        kept=bg.blue_kept(blue_green, canonical),
        image=image,
        track=track,
        database=database,
        cache=resolve_cache_cluster(
            owner.name, spec.cache_isolation, image, preflight_gate.verified_version(proof, image)
        ),
        # While blue serves an image the spec no longer names (an upgrade in flight, blue kept, a failed
        # upgrade), blue stays exactly as it was rolled out. Rendered from the new spec it would restart the
        # pods serving every sign-in, with settings meant for green (a new cache cluster name even recreates
        # them all at once); its track's membership Service keeps selecting blue's own cache cluster.
        blue_frozen=canonical is not None and image != spec.image,
    )


def _spec_problems(facts: Facts) -> list[conditions.Wanted]:
    """What is wrong with the spec or what it references."""
    spec, observed, owner = facts.spec, facts.observed, facts.owner
    # The Secrets the pods will use: on a promoted cnpg copy, the copy's, not the original Cluster's (which
    # the user may delete once it is no longer a way back).
    serving_spec = database_copy.with_database(spec, facts.database.name)
    return spec_problems.problems(
        serving_spec,
        observed.keycloak,
        observed.existing_secrets,
        observed.existing_config_maps,
        owner,
        admin_secret_name(owner, spec),
    )


def _preflight_pods(
    owner: children.Owner, spec: KeycloakSpec, found: preflight.Answer
) -> BuildOptions | None:
    """The build options of the pods a passed preflight that asked Keycloak proved (the track and database
    change no build option)."""
    if found.state != "passed" or found.rebuild is None:
        return None
    pod = render_deployment(owner, spec, image=spec.image, track=names.TRACKS[0], version="")
    return build_options.of_pod(
        pod["spec"]["template"]["spec"], parse_semver(found.version) or release_of(spec.image)
    )


def _named_children(observed: Observed) -> dict[child_ownership.Key, dict[str, Any] | None]:
    """Every name this Keycloak writes a child under that the shell read, with what it found there."""
    name = observed.keycloak["metadata"]["name"]
    found: dict[child_ownership.Key, dict[str, Any] | None] = {
        ("Deployment", names.deployment(name)): observed.deployment,
        ("Deployment", names.deployment(name, green=True)): observed.green,
        ("Service", names.public_service(name)): observed.public_service,
        ("Service", names.discovery_service(name)): observed.discovery_service,
        ("Service", names.discovery_service(name, green=True)): observed.green_discovery_service,
        ("PodDisruptionBudget", names.pod_disruption_budget(name)): observed.pod_disruption_budget,
        ("Ingress", names.ingress(name)): observed.ingress,
        (http_route.KIND, names.http_route(name)): observed.http_route,
        ("ServiceMonitor", names.service_monitor(name)): observed.service_monitor,
        ("Secret", names.operator_login_secret(name)): observed.operator_login,
    }
    for service in observed.membership_services:
        found["Service", service["metadata"]["name"]] = service
    for policy in observed.network_policies:
        found["NetworkPolicy", policy["metadata"]["name"]] = policy
    return found


def _own_children(observed: Observed, owner: children.Owner) -> Observed:
    """`observed` with another owner's objects taken out, as if nothing stood under their names."""

    def own(obj: dict[str, Any] | None) -> dict[str, Any] | None:
        return child_ownership.ours(obj, owner)

    return dataclasses.replace(
        observed,
        deployment=own(observed.deployment),
        green=own(observed.green),
        public_service=own(observed.public_service),
        discovery_service=own(observed.discovery_service),
        green_discovery_service=own(observed.green_discovery_service),
        pod_disruption_budget=own(observed.pod_disruption_budget),
        ingress=own(observed.ingress),
        http_route=own(observed.http_route),
        service_monitor=own(observed.service_monitor),
        membership_services=tuple(s for s in observed.membership_services if own(s) is not None),
        network_policies=tuple(p for p in observed.network_policies if own(p) is not None),
    )


def _canonical_track(
    canonical: dict[str, Any] | None, previous: KeycloakStatus, blue_green: BlueGreenStatus | None
) -> str:
    """The canonical Deployment's track: its own label, or green's once green is being promoted into it."""
    if canonical is not None and rollout.track_of(canonical):
        return str(rollout.track_of(canonical))
    if blue_green is not None and blue_green.state in (bg.PROMOTING, bg.COMPLETED) and blue_green.green_track:
        return blue_green.green_track
    if blue_green is not None and blue_green.blue_track:
        return blue_green.blue_track
    return previous.track or names.TRACKS[0]


def canonical_database(
    keycloak: dict[str, Any],
    spec: KeycloakSpec,
    canonical: dict[str, Any] | None,
    blue_green: BlueGreenStatus | None,
) -> DatabaseStatus:
    """The database the canonical Deployment's pods use (core/database_copy.canonical_database)."""
    previous = stored_status(keycloak)
    track = _canonical_track(canonical, previous, blue_green)
    return database_copy.canonical_database(
        spec,
        previous.database,
        blue_green,
        track,
        database_copy.running_database(canonical, spec.database.tier),
    )


def change_in_flight(stored: dict[str, Any]) -> bool:
    """A Keycloak in the middle of a change goes first after a restart (resume before routine work)."""
    parsed = KeycloakStatus.model_validate(stored)
    return bg.in_flight(parsed.blue_green) or versions.pending(parsed.versions)
