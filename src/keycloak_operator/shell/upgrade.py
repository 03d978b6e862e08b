"""The blue-green machine's I/O: observe its world, then perform its actions, each idempotent."""

from __future__ import annotations

import logging
from typing import Any

from keycloak_operator.core import (
    backups,
    children,
    cnpg_copy,
    compatibility_check,
    database_copy,
    durations,
    names,
    network_policy,
    upgrade_plan,
)
from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core import discovery as dsc
from keycloak_operator.core.cache_cluster import resolve_cache_cluster
from keycloak_operator.core.reconcile import canonical_database, owner_of, render_deployment
from keycloak_operator.core.versions import version_of
from keycloak_operator.models.keycloak import BlueGreenStatus, KeycloakSpec
from keycloak_operator.shell.kube import (
    CNPG_BACKUPS,
    CNPG_CLUSTERS,
    DEPLOYMENTS,
    ENDPOINT_SLICES,
    JOBS,
    SERVICES,
    VOLUME_SNAPSHOTS,
    Kube,
    operator_namespace,
)

log = logging.getLogger(__name__)


def wanted(spec: KeycloakSpec, stored: BlueGreenStatus | None) -> bool:
    """Only Keycloaks that use blue-green (or are still in or after one) pay for its extra reads."""
    return spec.upgrade_policy.strategy == "BlueGreen" or (stored is not None and stored.state != bg.IDLE)


async def observe(
    kube: Kube,
    keycloak: dict[str, Any],
    spec: KeycloakSpec,
    canonical: dict[str, Any] | None,
    public: dict[str, Any] | None,
    stored: BlueGreenStatus | None,
    check: compatibility_check.Answer | None = None,
) -> bg.Observed:
    ns, name = keycloak["metadata"]["namespace"], keycloak["metadata"]["name"]
    tier = spec.database.tier
    backup_phase = None
    if stored is not None and stored.backup_name and tier in ("cnpg", "managed"):
        res = CNPG_BACKUPS if tier == "cnpg" else VOLUME_SNAPSHOTS
        backup_phase = backups.phase(await kube.get(res, ns, stored.backup_name))
    selector = ((public or {}).get("spec") or {}).get("selector") or {}
    green_serving = None
    if stored is not None and stored.state in (bg.WAITING_FOR_GREEN, bg.CUTTING_OVER):
        discovery = dsc.green_view(name, stored)
        slices = await kube.list(
            ENDPOINT_SLICES, ns, label_selector=f"{names.LABEL_SERVICE_NAME}={discovery}"
        )
        green_serving = bg.serving_pods(slices)
    copy_phase = None
    if stored is not None and stored.state == bg.COPYING_DATABASE and stored.copy_job:
        if tier == "cnpg":
            copy_phase = cnpg_copy.phase(await kube.get(CNPG_CLUSTERS, ns, stored.copy_job))
        else:
            copy_phase = database_copy.job_phase(await kube.get(JOBS, ns, stored.copy_job))
    policy = spec.upgrade_policy
    copy = policy.database_copy
    return bg.Observed(
        name=name,
        spec_image=spec.image,
        strategy=policy.strategy,
        auto_teardown=policy.auto_teardown,
        green_ready_timeout_s=durations.parse(policy.green_ready_timeout),
        backup_timeout_s=durations.parse(policy.backup_timeout),
        drain_delay_s=durations.parse(policy.drain_delay),
        replicas=spec.replicas,
        tier=tier,  # type: ignore[arg-type]
        managed_pvc=bool(spec.database.managed and spec.database.managed.pvc_name),
        blue=canonical,
        green=await kube.get(DEPLOYMENTS, ns, names.deployment(name, green=True)),
        public_selector_track=selector.get(names.LABEL_TRACK),
        backup_phase=backup_phase,
        green_serving_endpoints=green_serving,
        upgrade_path=_path(spec, name, canonical, check or compatibility_check.Answer()),
        database=canonical_database(keycloak, spec, canonical, stored).name,
        spec_database=database_copy.spec_database(spec),
        copy_timeout_s=durations.parse(copy.timeout) if copy is not None else 600.0,
        copy_phase=copy_phase,
        green_discovery_exists=await kube.get(SERVICES, ns, names.discovery_service(name, green=True))
        is not None,
    )


async def perform(kube: Kube, keycloak: dict[str, Any], spec: KeycloakSpec, action: bg.Action) -> None:
    owner = owner_of(keycloak)
    ns, name = owner.namespace, owner.name
    log.info("blue-green %s/%s: %s", ns, name, action)
    match action:
        case bg.CreateBackup(name=backup, database=database):
            # Of what blue runs on: after a promoted cnpg copy that Cluster, not the stale one the spec names.
            await kube.create(
                backups.backup_object(owner, database_copy.with_database(spec, database), backup)
            )
        case bg.CopyDatabase(job=job, source=source, target=target, backup=backup, tier="cnpg"):
            # Shaped like the source Cluster as it is now (None if unreadable: CloudNativePG's defaults).
            made = cnpg_copy.recovery_cluster(
                owner, spec, name=target, backup=backup, source=await kube.get(CNPG_CLUSTERS, ns, source)
            )
            await kube.create(made)
        case bg.CopyDatabase(job=job, source=source, target=target):
            await kube.create(database_copy.job(owner, spec, name=job, source=source, target=target))
        case bg.ApplyGreen(image=image, track=track, database=database, apart=apart):
            # The version is the spec's as written: which database the pods use is status, not spec.
            version = version_of(spec.model_copy(update={"image": image})).format()
            cluster = _cache_cluster_of(owner, spec, image)
            # Green's NetworkPolicy before green's pods: they start inside their own cache cluster's policy.
            # The reconcile keeps it from then on, while green's Deployment exists.
            policy = network_policy.policy(
                spec, owner, track=track, cache_cluster=cluster, operator_namespace=operator_namespace()
            )
            if policy is not None:
                await kube.apply(policy)
            # Green's track's membership Service before green's pods, which query only it (ADR 0018).
            await kube.apply(children.membership_service(owner, track, cluster, apart=apart))
            await kube.apply(
                render_deployment(
                    owner, spec, image=image, track=track, version=version, green=True, database=database
                )
            )
            if not apart:  # how the machine sees green's pods serving; on a copy: dsc.green_view
                await kube.apply(children.discovery_service(owner, track, cluster, green=True))
        case bg.SwitchTraffic(track=track):
            await kube.apply(children.public_service(owner, track, spec))
        case bg.DeleteGreen():
            await kube.delete(DEPLOYMENTS, ns, names.deployment(name, green=True))
        case bg.DeleteBlue(uid=uid):
            await kube.delete(DEPLOYMENTS, ns, names.deployment(name), uid=uid)
        case bg.OrphanGreen(uid=uid):
            # The ReplicaSet and its pods stay: the canonical Deployment adopts them.
            await kube.delete(
                DEPLOYMENTS, ns, names.deployment(name, green=True), propagation="Orphan", uid=uid
            )
        case bg.AdoptAsCanonical(image=image, track=track, database=database):
            version = version_of(spec.model_copy(update={"image": image})).format()
            await kube.apply(
                render_deployment(owner, spec, image=image, track=track, version=version, database=database)
            )
        case bg.DeleteGreenDiscovery():
            await kube.delete(SERVICES, ns, names.discovery_service(name, green=True))


def _path(
    spec: KeycloakSpec, name: str, canonical: dict[str, Any] | None, check: compatibility_check.Answer
) -> str | None:
    """The planner's path for the change at hand; None with no blue, or while the compatibility check runs
    (the machine then waits at rest, as the reconcile does)."""
    if canonical is None or check.pending:
        return None
    return upgrade_plan.for_deployment(spec, name, canonical, check.exit).path


def _cache_cluster_of(owner: children.Owner, spec: KeycloakSpec, image: str) -> str | None:
    return resolve_cache_cluster(owner.name, spec.cache_isolation, image).name
