"""The steady-state reconcile decision: observed world in, writes, status and events out.

Pure. The shell observes (reads the Keycloak and its children), calls `decide`, then performs exactly the
writes returned. Nothing here knows about kopf or any client.
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
    compatibility_check,
    database_copy,
    discovery,
    downtime,
    drift,
    durations,
    http_route,
    ingress,
    ingress_policy,
    monitoring,
    network_policy,
    optimized,
    preflight,
    preflight_gate,
    rollout,
    scheduling,
    service_policy,
    spec_problems,
    status,
    upgrade_plan,
    versions,
)
from keycloak_operator.core.build_options import BuildOptions
from keycloak_operator.core.cache_cluster import resolve_cache_cluster
from keycloak_operator.core.common import conditions
from keycloak_operator.core.images import parse_semver, release_of
from keycloak_operator.kernel import names
from keycloak_operator.kernel.events import Event
from keycloak_operator.models.keycloak import (
    BlueGreenStatus,
    DatabaseStatus,
    KeycloakSpec,
    KeycloakStatus,
    PreflightStatus,
    UpgradePlanStatus,
)


@dataclass(frozen=True)
class Observed:
    """What the shell read for one Keycloak. `keycloak` is the stored object, status included."""

    keycloak: dict[str, Any]
    deployment: dict[str, Any] | None
    public_service: dict[str, Any] | None
    existing_secrets: frozenset[str]
    version: str = ""
    green: dict[str, Any] | None = None  # `{name}-green-keycloak`, read only when blue-green is in use
    green_discovery_service: dict[str, Any] | None = None  # `{name}-green-discovery`, likewise
    # The per-track membership Services that exist (`{name}-discovery-<track>`, read by name), and the
    # colour-named `{name}-discovery` that pods rendered before ADR 0018 query.
    membership_services: tuple[dict[str, Any], ...] = ()
    discovery_service: dict[str, Any] | None = None
    pod_disruption_budget: dict[str, Any] | None = None
    ingress: dict[str, Any] | None = None
    http_route: dict[str, Any] | None = None  # `{name}-keycloak`, read whether wanted or not
    service_monitor: dict[str, Any] | None = None
    operator_login: dict[str, Any] | None = None  # `{name}-operator-login`, whoever's
    network_policies: tuple[dict[str, Any], ...] = ()  # those that exist under its names, whoever's
    existing_config_maps: frozenset[str] = frozenset()  # of those the spec references
    # The compatibility check for the image change at hand, when one is wanted (core/compatibility_check).
    compatibility: compatibility_check.Answer = field(default_factory=compatibility_check.Answer)
    # The preflight of the image change at hand (core/preflight): what its Job and pod say.
    preflight: preflight.Answer = field(default_factory=preflight.Answer)
    # Facts about the cluster and the operator, observed by the shell: whether the cluster serves the
    # ServiceMonitor and HTTPRoute kinds (each asked only when one is wanted), and the namespace the
    # operator runs in (None outside a cluster).
    service_monitor_served: bool = False
    http_route_served: bool = False
    operator_namespace: str | None = None
    # The profile the shell filled the spec's defaults from (core/pod_defaults.py), recorded in status; None:
    # not known here, the recorded one stays.
    pod_defaults: str | None = None


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


def admin_secret_name(owner: children.Owner, spec: KeycloakSpec) -> str:
    return spec.admin_secret.name if spec.admin_secret is not None else names.admin_secret(owner.name)


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


def render_deployment(
    owner: children.Owner,
    spec: KeycloakSpec,
    *,
    image: str,
    track: str,
    version: str,
    green: bool = False,
    recreate: bool = False,
    database: str = "",
    proof: PreflightStatus | None = None,
) -> dict[str, Any]:
    """The Deployment for `spec` running `image` on `track` (on `database`, empty: the spec's); green and
    canonical share one pod template. `proof`: what the image's preflight found (it pins the digest, and
    starts the pods `--optimized` when the image was built with their build options: core/optimized.py)."""
    verified = preflight_gate.verified_version(proof, image)
    cache = resolve_cache_cluster(owner.name, spec.cache_isolation, image, verified)
    spec = database_copy.with_database(spec, database)
    rendered = children.deployment(
        children.WorkloadInputs(
            owner=owner,
            spec=spec.model_copy(update={"image": image}),
            track=track,
            cache_cluster=cache.name,
            admin_secret=admin_secret_name(owner, spec),
            version=version,
            green=green,
            recreate=recreate,
            progress_deadline_seconds=max(1, int(durations.parse(spec.upgrade_policy.rollout_timeout))),
        )
    )
    found = optimized.verdict(proof, image, rendered["spec"]["template"]["spec"])
    return optimized.apply(preflight_gate.pin(rendered, proof, image), found)


def optimized_condition(
    owner: children.Owner, spec: KeycloakSpec, image: str, proof: PreflightStatus | None
) -> conditions.Wanted | None:
    """The Optimized condition of the pods running `image` (None while nothing is known of its build)."""
    pod = render_deployment(owner, spec, image=image, track=names.TRACKS[0], version="")
    return optimized.condition(optimized.verdict(proof, image, pod["spec"]["template"]["spec"]))


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
    observed = _own_children(observed, owner)
    generation = int(observed.keycloak["metadata"].get("generation", 0))
    previous = stored_status(observed.keycloak)
    pre = observed.preflight
    proof = preflight_gate.record(previous.preflight, pre, spec.image, _preflight_pods(owner, spec, pre))
    canonical = observed.deployment
    in_flight = bg.in_flight(blue_green)
    kept = bg.blue_kept(blue_green, canonical)
    image = bg.serving_image(blue_green, spec.image, canonical)
    track = _canonical_track(canonical, previous, blue_green)
    database = database_copy.canonical_database(
        spec,
        previous.database,
        blue_green,
        track,
        database_copy.running_database(canonical, spec.database.tier),
    )
    cache = resolve_cache_cluster(
        owner.name, spec.cache_isolation, image, preflight_gate.verified_version(proof, image)
    )
    # The Secrets the pods will use: on a promoted cnpg copy, the copy's, not the original Cluster's (which
    # the user may delete once it is no longer a way back).
    serving_spec = database_copy.with_database(spec, database.name)
    problems = spec_problems.problems(
        serving_spec,
        observed.keycloak,
        observed.existing_secrets,
        observed.existing_config_maps,
        owner,
        admin_secret_name(owner, spec),
    )
    # While blue serves an image the spec no longer names (an upgrade in flight, blue kept, a failed
    # upgrade), blue stays exactly as it was rolled out. Rendered from the new spec it would restart the
    # pods serving every sign-in, with settings meant for green (a new cache cluster name even recreates
    # them all at once); its track's membership Service keeps selecting blue's own cache cluster.
    blue_frozen = canonical is not None and image != spec.image
    # The planner decides how the canonical Deployment moves to a new image: roll, recreate, or refuse and
    # keep the running version. Blue-green's own path is taken by the machine, which started this very pass
    # (and froze blue); it is planned here once more only to be recorded.
    plan = None
    stored_bg = previous.blue_green
    just_started = in_flight and (stored_bg is None or stored_bg.state in bg.AT_REST)
    check = observed.compatibility
    # Keycloak's own compatibility check has not answered for this change: nothing moves until it does.
    checking = False
    if canonical is not None and not kept and (just_started or not (blue_frozen or in_flight)):
        checking = check.pending or pre.holds
        verified = preflight_gate.verified_version(proof, spec.image)
        plan = (
            None
            if checking
            else upgrade_plan.for_deployment(spec, owner.name, canonical, check.exit, verified)
        )
        if plan is not None and plan.path == upgrade_plan.REFUSE:
            problems.append(conditions.Wanted(conditions.DEGRADED, "True", "UpgradeRefused", plan.reason))
    problems.extend(p for p in [preflight_gate.problem(pre, proof)] if p is not None)
    blue_cache = rollout.cache_cluster_of(canonical) if blue_frozen and canonical is not None else cache.name

    # nextVersion is recorded with this pass's status, which the shell writes before any child.
    slots = versions.begin(previous.versions, observed.version)
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
    rendered: dict[str, Any] | None = None
    may_render = (not blue_frozen and not checking) if canonical is not None else not (in_flight or kept)
    may_render = may_render and not pre.holds
    if not problems and may_render and not (blue_green is not None and blue_green.state == bg.PROMOTING):
        # The canonical Deployment carries the version it runs: the spec's, or the last one while blue serves.
        version = observed.version if image == spec.image else previous.versions.current_version
        desired = render_deployment(
            owner,
            spec,
            image=image,
            track=track,
            version=version,
            recreate=rollout.use_recreate(canonical, cache.name, spec.cache_isolation.stack_in_use)
            or (plan is not None and plan.path == upgrade_plan.RECREATE),
            database=database.name,
            proof=proof,
        )
        # The Deployment goes first: with Recreate its old pods stop before a discovery selector moves on.
        if drift.needs_apply(desired, canonical):
            writes.insert(0, desired)
            rendered = desired
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
    if spec_problems.rejected_child(previous, generation) is not None:
        writes, removals = [], []
    stalled = _stalled(observed, slots.next_version)
    if stalled is not None:
        problems.append(stalled)
    if ingress_refused is not None:  # after the pods were rendered: it holds back only the Ingress
        problems.append(
            conditions.Wanted(conditions.DEGRADED, "True", ingress_policy.REASON, ingress_refused.message)
        )
    if route_problem is not None:  # likewise: it holds back only the HTTPRoute
        problems.append(route_problem)
    if service_refused is not None:  # the Service serves without the refused settings
        problems.append(
            conditions.Wanted(conditions.DEGRADED, "True", service_policy.REASON, service_refused.message)
        )

    serving = observed.green if kept else canonical
    events: list[Event] = []
    revision = None
    if slots.next_version and _rolled_out(spec, serving, slots.next_version):
        slots = versions.complete(slots)
        revision = children.controller_revision(owner, slots.current_version, spec, generation)
        previous_text = f" (last good: {slots.last_version})" if slots.last_version else ""
        events.append(Event("Normal", "VersionRolledOut", f"running {slots.current_version}{previous_text}"))
    elif slots.next_version and slots.next_version != previous.versions.next_version:
        events.append(Event("Normal", "VersionStarted", f"rolling out {slots.next_version}"))

    planned = previous.upgrade_plan
    create: list[dict[str, Any]] = []
    checked = compatibility_check.describe(check.job, check.exit) if check.job else ""
    if pre.state == "pending" and not pre.exists:
        target = render_deployment(
            owner, spec, image=spec.image, track=track, version=observed.version, database=database.name
        )
        create.append(preflight.job(owner, target, pre.job, rollout.version_of(canonical or {})))
        events.append(Event("Normal", "PreflightStarted", f"Job {pre.job} proves {spec.image} first"))
    if checking and canonical is not None:
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
        if previous.upgrade_plan is not None and _same_plan(planned, previous.upgrade_plan):
            planned = previous.upgrade_plan  # planned again before it started: its measurement goes on
        elif plan.path != upgrade_plan.REFUSE:  # a refusal is Degraded
            text = f"{planned.from_image} -> {planned.to_image}: {plan.path}, because {plan.reason}"
            events.append(Event("Normal", "UpgradePlanned", text))
    if planned is not None:
        measured = downtime.measure(planned, canonical, slots.next_version, spec.replicas, now)
        planned = measured.plan
        if measured.message:
            events.append(Event("Normal", downtime.REASON, measured.message))
    monitored = monitoring.condition(spec, owner.name, crd_served=observed.service_monitor_served)
    before = conditions.find(previous.conditions, conditions.MONITORED)
    if (
        monitored is not None
        and monitored.status == "False"
        and (before is None or (before.status, before.reason) != ("False", monitored.reason))
    ):
        events.append(Event("Warning", monitoring.UNAVAILABLE, monitored.message))
    events.extend(
        Event("Warning", f.reason, f.message) for f in preflight_gate.findings(previous.preflight, proof)
    )
    if cache.warning and previous.cache_cluster.reason != cache.reason:
        events.append(Event("Warning", "CacheIsolationDisabled", cache.reason))
    # Whatever this pass (or the upgrade machine's actions) would write under a name another owner holds is
    # not written, and said: first, as the Degraded condition shows one problem and this one needs a person.
    # Every Keycloak wants its operator-login Secret (created by the shell, never applied over).
    wanted_login = ("Secret", names.operator_login_secret(owner.name))
    touched = (
        {child_ownership.key(o) for o in [*writes, *removals, *create]} | machine_writes | {wanted_login}
    )
    refused = (foreign & touched) | ({("Job", check.job)} if check.foreign else set())
    refused |= {("Job", pre.job)} if pre.state == "foreign" else set()
    writes = child_ownership.allowed(writes, refused)
    removals = child_ownership.allowed(removals, refused)
    create = child_ownership.allowed(create, refused)
    not_owned = child_ownership.condition(refused, owner.namespace)
    if not_owned is not None:
        problems.insert(0, not_owned)
    # Each problem is told once, when it appears: the Degraded condition lists every one it held.
    already = conditions.find(previous.conditions, conditions.DEGRADED)
    held = already.message.split(status.ALSO) if already is not None and already.status == "True" else []
    for problem in problems:
        if problem.message not in held:
            events.append(Event("Warning", problem.reason, problem.message))

    new = status.compute(
        status.StatusInputs(
            keycloak=owner.name,
            spec=spec,
            previous=previous,
            serving=serving,
            serving_image=image,
            cache=cache,
            problems=problems,
            track=bg.serving_track(blue_green, track),
            blue_green=blue_green,
            now=now,
            generation=generation,
            service_monitor_served=observed.service_monitor_served,
            optimized=optimized_condition(owner, spec, image, proof),
        )
    )
    serving_database = database.name
    if (
        blue_green is not None
        and blue_green.green_database
        and bg.serving_track(blue_green, track) == (blue_green.green_track)
    ):
        serving_database = blue_green.green_database
    recorded = database.model_copy(update={"serving": serving_database})
    # Recorded only once a copy is involved: a Keycloak that never had one keeps the status it had.
    database_status = (
        recorded if recorded != DatabaseStatus(name=database.name, serving=database.name) else None
    )
    if previous.database is not None:
        database_status = recorded
    new_status = new.model_copy(
        update={
            "versions": slots,
            "upgrade_plan": planned,
            "database": database_status,
            "preflight": proof,
            "pod_defaults": observed.pod_defaults or previous.pod_defaults,
        }
    ).wire()
    changed = new_status != previous.wire() or not observed.keycloak.get("status")
    secret = admin_secret_name(owner, spec)
    return Decision(
        apply=writes,
        create_admin_secret=spec.admin_secret is None and secret not in observed.existing_secrets,
        # Made once and never applied over; one under its name that is not this Keycloak's is reported
        # (ChildNotOwned, from _named_children) and never used (core/operator_login.parse).
        create_operator_login=observed.operator_login is None,
        status=new_status if changed else None,
        events=events,
        revision=revision,
        delete=removals,
        create=create,
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


def _same_plan(a: UpgradePlanStatus, b: UpgradePlanStatus) -> bool:
    """The same change planned the same way (a measurement in progress is not part of the plan)."""
    return (a.path, a.from_image, a.to_image, a.reason) == (b.path, b.from_image, b.to_image, b.reason)


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


def _rolled_out(spec: KeycloakSpec, dep: dict[str, Any] | None, version: str) -> bool:
    """Every replica Ready on the Deployment rendered for `version`."""
    return (
        dep is not None
        and rollout.version_of(dep) == version
        and rollout.rollout_complete(dep)
        and int(dep.get("spec", {}).get("replicas", -1)) == spec.replicas
    )


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
