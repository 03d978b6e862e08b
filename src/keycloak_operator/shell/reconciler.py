"""One reconcile pass for one Keycloak: observe, decide (pure), act.

Always reads the stored Keycloak fresh, so a decision never rests on the operator's memory of it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import secrets as pysecrets
from typing import Any

from pydantic import ValidationError

from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core import (
    children,
    compatibility_check,
    database_copy,
    http_route,
    ingress_policy,
    keycloak_config,
    monitoring,
    pod_defaults,
    preflight,
    preflight_gate,
    reconcile,
    rollout,
    service_policy,
    spec_problems,
    versions,
)
from keycloak_operator.core.bluegreen import writes
from keycloak_operator.core.bluegreen.milestones import transition
from keycloak_operator.core.common import conditions, merge_patch
from keycloak_operator.core.decide_inputs import Observed
from keycloak_operator.core.deployment import admin_secret_name
from keycloak_operator.kernel import names
from keycloak_operator.kernel.events import Event
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.shell import events, hooks_for_tests, metrics, upgrade
from keycloak_operator.shell.kube import (
    CONFIG_MAPS,
    DEPLOYMENTS,
    HTTP_ROUTES,
    INGRESSES,
    JOBS,
    KEYCLOAKS,
    NETWORK_POLICIES,
    POD_DISRUPTION_BUDGETS,
    PODS,
    SECRETS,
    SERVICE_MONITORS,
    SERVICES,
    ApiError,
    Kube,
    operator_namespace,
    resource_of,
)

log = logging.getLogger(__name__)
CHECK_POLL_S = 5.0


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def canonical_deployment(kube: Kube, keycloak: dict[str, Any]) -> dict[str, Any] | None:
    ns, name = keycloak["metadata"]["namespace"], keycloak["metadata"]["name"]
    return await kube.get(DEPLOYMENTS, ns, names.deployment(name))


def with_pod_defaults(
    spec: KeycloakSpec, keycloak: dict[str, Any], canonical: dict[str, Any] | None
) -> tuple[KeycloakSpec, pod_defaults.Profile]:
    """The spec a pass works from: the defaults of the Keycloak's profile filled in (ADR 0028), before the
    version, the Jobs' names or any rendering is derived from it; and that profile, which decide records."""
    owner = reconcile.owner_of(keycloak)
    own = canonical if canonical is not None and owner.owns(canonical) else None
    chosen = pod_defaults.profile(reconcile.stored_status(keycloak), own, spec)
    return pod_defaults.applied(spec, chosen), chosen


async def observe(
    kube: Kube,
    keycloak: dict[str, Any],
    spec: KeycloakSpec,
    canonical: dict[str, Any] | None,
    profile: pod_defaults.Profile | None = None,
) -> Observed:
    """What a pass reads, for `spec` (with the defaults of `profile`) and the `canonical` Deployment
    already read."""
    ns, name = keycloak["metadata"]["namespace"], keycloak["metadata"]["name"]
    admin = admin_secret_name(reconcile.owner_of(keycloak), spec)
    # The spec's Secrets, and those of the database the pods run on (a promoted cnpg copy has its own).
    running = database_copy.running_database(canonical, spec.database.tier)
    wanted_secrets = set(keycloak_config.referenced_secrets(spec, admin)) | set(
        keycloak_config.referenced_secrets(database_copy.with_database(spec, running), admin)
    )
    existing = {s for s in wanted_secrets if await kube.get(SECRETS, ns, s) is not None}
    maps = {m for m in keycloak_config.referenced_config_maps(spec) if await kube.get(CONFIG_MAPS, ns, m)}
    # By name, not by label: an object under one of these names that this Keycloak did not make must be seen
    # (and left alone), not applied over (core/child_ownership).
    membership = [await kube.get(SERVICES, ns, names.membership_service(name, t)) for t in names.TRACKS]
    policies = [await kube.get(NETWORK_POLICIES, ns, names.network_policy(name, t)) for t in names.TRACKS]
    version = versions.version_of(spec).format()
    # The ServiceMonitor and the HTTPRoute are read whether wanted or not (one this Keycloak made may have
    # to go; where the kind is not served the read is a 404); discovery is asked only when one is wanted.
    return Observed(
        keycloak=keycloak,
        deployment=canonical,
        public_service=await kube.get(SERVICES, ns, names.public_service(name)),
        existing_secrets=frozenset(existing),
        membership_services=tuple(s for s in membership if s is not None),
        discovery_service=await kube.get(SERVICES, ns, names.discovery_service(name)),
        existing_config_maps=frozenset(maps),
        version=version,
        compatibility=await _compatibility(kube, keycloak, spec, canonical, version),
        preflight=await preflight_answer(kube, keycloak, spec, canonical, version),
        pod_disruption_budget=await kube.get(POD_DISRUPTION_BUDGETS, ns, names.pod_disruption_budget(name)),
        ingress=await kube.get(INGRESSES, ns, names.ingress(name)),
        http_route=await kube.get(HTTP_ROUTES, ns, names.http_route(name)),
        service_monitor=await kube.get(SERVICE_MONITORS, ns, names.service_monitor(name)),
        operator_login=await kube.get(SECRETS, ns, names.operator_login_secret(name)),
        network_policies=tuple(p for p in policies if p is not None),
        service_monitor_served=monitoring.wanted(spec) and await kube.serves(SERVICE_MONITORS),
        http_route_served=http_route.wanted(spec) and await kube.serves(HTTP_ROUTES),
        operator_namespace=operator_namespace(),
        pod_defaults=profile,
    )


async def _compatibility(
    kube: Kube, keycloak: dict[str, Any], spec: KeycloakSpec, canonical: dict[str, Any] | None, version: str
) -> compatibility_check.Answer:
    """The compatibility check Job for the image change at hand, read by name only when one is wanted."""
    if canonical is None or not compatibility_check.wanted(spec, rollout.image_of(canonical)):
        return compatibility_check.Answer()
    owner = reconcile.owner_of(keycloak)
    job = compatibility_check.job_name(owner.name, rollout.version_of(canonical), version)
    return compatibility_check.answer(job, await kube.get(JOBS, owner.namespace, job), owner)


async def preflight_answer(
    kube: Kube, keycloak: dict[str, Any], spec: KeycloakSpec, canonical: dict[str, Any] | None, version: str
) -> preflight.Answer:
    """The preflight of the image change at hand: its answer as recorded in status once passed, else read
    from its Job and the Job's pod (the only place the resolved digest, a failing pull and the report are)."""
    running = rollout.image_of(canonical) if canonical is not None else ""
    if not preflight.wanted(running, spec.image, preflight_gate.needs_version(spec)):
        return preflight.Answer()
    owner = reconcile.owner_of(keycloak)
    job = preflight.job_name(owner.name, rollout.version_of(canonical or {}), version)
    recorded = preflight_gate.from_record(job, reconcile.stored_status(keycloak).preflight, spec.image)
    if recorded is not None:
        return recorded
    obj = await kube.get(JOBS, owner.namespace, job)
    pods = []
    if obj is not None and owner.owns(obj):
        pods = await kube.list(PODS, owner.namespace, label_selector=f"{preflight.JOB_NAME_LABEL}={job}")
    return preflight.answer(job, obj, pods, owner, dt.datetime.now(dt.UTC))


async def reconcile_once(
    kube: Kube,
    namespace: str,
    name: str,
    allowed_ingress: ingress_policy.IngressPolicy = ingress_policy.DEFAULT_POLICY,
) -> float | None:
    """One pass; returns seconds until the next pass is due (a blue-green wait), or None."""
    keycloak = await kube.get(KEYCLOAKS, namespace, name)
    if keycloak is None:
        # Deleted while this replica did not watch (a standby's paused watch, a re-list after 410 sends no
        # DELETED): the resync's pass is where the fleet gauges learn it (ADR 0027).
        metrics.FLEET.keycloak_gone((namespace, name))
        return None
    if keycloak["metadata"].get("deletionTimestamp"):
        return None
    try:
        spec = KeycloakSpec.model_validate(keycloak.get("spec") or {})
    except ValidationError as e:
        fields = "; ".join(f"spec.{'.'.join(str(p) for p in d['loc'])}: {d['msg']}" for d in e.errors())
        await _report_degraded(kube, keycloak, "InvalidSpec", fields)
        return None
    canonical = await canonical_deployment(kube, keycloak)
    spec, profile = with_pod_defaults(spec, keycloak, canonical)
    observed = await observe(kube, keycloak, spec, canonical, profile)
    # The upgrade machine renders the public Service too: as the installation lets it be (decide reports).
    allowed = service_policy.within(spec, service_policy.refusal(spec, allowed_ingress))
    stored = reconcile.stored_status(keycloak).blue_green  # read back from the stored object, every pass
    step = None
    if upgrade.wanted(spec, stored):
        green = await upgrade.read_green(kube, namespace, name)
        world = await upgrade.observe(
            kube,
            keycloak,
            allowed,
            observed.deployment,
            observed.public_service,
            green,
            stored,
            _hold(observed.compatibility, observed.preflight),
        )
        step = bg.step(stored, world, dt.datetime.now(dt.UTC))
        observed = dataclasses.replace(
            observed, green=green.deployment, green_discovery_service=green.discovery_service
        )
    owner = reconcile.owner_of(keycloak)
    proof = preflight_gate.record(reconcile.stored_status(keycloak).preflight, observed.preflight, spec.image)
    machine = (
        writes.touched(step.actions, owner, allowed, operator_namespace(), proof) if step else frozenset()
    )
    decision = reconcile.decide(
        spec,
        observed,
        now=now(),
        blue_green=step.status if step else stored,
        machine_writes=machine,
        allowed_ingress=allowed_ingress,
    )
    # Status first: nextVersion must be stored before any side effect of the change it names.
    if decision.status is not None:
        patch = merge_patch.merge_patch(keycloak.get("status") or {}, decision.status)
        if patch:
            if not await kube.patch_status(KEYCLOAKS, namespace, name, patch):
                return None  # deleted since it was read: its DELETED event forgets the key
            if (
                step is not None
                and step.status is not None
                and (stored is None or stored.state != step.status.state)
            ):
                metrics.upgrade_transition(transition(stored, step.status))
                hooks_for_tests.after_persist(step.status.state)
    if decision.create_admin_secret:
        made = await kube.create(children.admin_secret(owner, pysecrets.token_urlsafe(24)))
        if made is not None:
            created = Event("Normal", "AdminSecretCreated", f"generated Secret {names.admin_secret(name)}")
            decision.events.append(created)
    if decision.create_operator_login:
        # Stored before any Keycloak is told this secret (the replication round tells it: ADR 0023).
        login = children.operator_login_secret(owner, pysecrets.token_urlsafe(32))
        if await kube.create(login) is not None:
            log.info("created Secret %s/%s", namespace, login["metadata"]["name"])
    # The routine applies run before the upgrade's actions: a Service the machine deletes this pass is not
    # applied again by the routine after it.
    for obj in decision.apply:
        try:
            await kube.apply(obj)
        except ApiError as e:
            # 500 "duplicate entries" is how server-side apply refuses a list with one key twice.
            if e.status not in (400, 422) and not (e.status == 500 and "duplicate entries" in str(e)):
                raise
            # The API server refuses what the spec made (a value it validates and the CRD cannot): the user
            # must change the spec, so say so on the Keycloak instead of retrying the same object forever.
            # Reported over the status this pass wrote, not the one it read: that is stale by now.
            written = decision.status if decision.status is not None else keycloak.get("status")
            await _report_degraded(
                kube, {**keycloak, "status": written}, spec_problems.CHILD_REJECTED, f"{obj['kind']} {e}"
            )
            return None
        log.info("applied %s %s/%s", obj["kind"], namespace, obj["metadata"]["name"])
    for obj in decision.delete:
        meta = obj["metadata"]
        if await kube.delete(resource_of(obj), namespace, meta["name"], uid=meta.get("uid")):
            log.info("deleted %s %s/%s", obj["kind"], namespace, meta["name"])
    for obj in decision.create:
        if await kube.create(obj) is not None:
            log.info("created %s %s/%s", obj["kind"], namespace, obj["metadata"]["name"])
    if step is not None:
        for action in step.actions:
            await upgrade.perform(kube, keycloak, allowed, action, proof)
    if decision.revision is not None:
        await kube.create(decision.revision)  # already there after a restart: fine, it is the same spec
    upgrade_events = [Event(e.type, e.reason, e.message) for e in step.events] if step else []
    for event in [*upgrade_events, *decision.events]:
        await events.post(kube, keycloak, event)
    wait = step.requeue_after if step else None
    # Jobs are not watched: look again soon for the check's or the preflight's answer (or a pull recovering).
    polls = [CHECK_POLL_S] if observed.compatibility.pending else []
    polls += [preflight_gate.poll_after(observed.preflight)] if observed.preflight.holds else []
    if polls:
        wait = min([wait, *polls]) if wait is not None else min(polls)
    return wait


def _hold(check: compatibility_check.Answer, found: preflight.Answer) -> compatibility_check.Answer:
    """What the upgrade machine is told of the checks: while the preflight holds the change, a check that
    has not answered, so the machine gives it no path and stays at rest (shell/upgrade._path)."""
    return compatibility_check.Answer(found.job) if found.holds else check


async def _report_degraded(kube: Kube, keycloak: dict[str, Any], reason: str, message: str) -> None:
    """A spec that cannot be rolled out as written (the models refuse it, or the API server refuses a child
    made from it): Degraded with the reason and the message, once; the next spec change tries again."""
    previous = reconcile.stored_status(keycloak)
    old = conditions.find(previous.conditions, conditions.DEGRADED)
    if old is not None and old.reason == reason and old.message == message:
        return
    merged = conditions.merge(
        previous.conditions,
        [conditions.Wanted(conditions.DEGRADED, "True", reason, message)],
        now=now(),
        generation=int(keycloak["metadata"].get("generation", 0)),
    )
    keep = [c for c in previous.conditions if c.type != conditions.DEGRADED]
    status = previous.model_copy(update={"phase": "Degraded", "conditions": [*keep, *merged]}).wire()
    ns, name = keycloak["metadata"]["namespace"], keycloak["metadata"]["name"]
    # Only what this says: a diff of the whole status against what the caller read could undo what the pass
    # wrote since (nextVersion, the pod defaults' profile).
    said = {key: status[key] for key in ("phase", "conditions")}
    await kube.patch_status(KEYCLOAKS, ns, name, said)
    await events.post(kube, keycloak, Event("Warning", reason, message))
