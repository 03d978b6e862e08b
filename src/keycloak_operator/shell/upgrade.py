"""The blue-green machine's I/O: observe its world, then perform its actions, each idempotent."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from keycloak_operator.core import (
    backups,
    child_ownership,
    children,
    cnpg_copy,
    compatibility_check,
    database_copy,
    durations,
    upgrade_plan,
)
from keycloak_operator.core import bluegreen as bg
from keycloak_operator.core import discovery as dsc
from keycloak_operator.core.bluegreen import writes
from keycloak_operator.core.reconcile import canonical_database, owner_of
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import BlueGreenStatus, PreflightStatus
from keycloak_operator.shell.kube import (
    CNPG_BACKUPS,
    CNPG_CLUSTERS,
    DEPLOYMENTS,
    ENDPOINT_SLICES,
    JOBS,
    SERVICES,
    VOLUME_SNAPSHOTS,
    Kube,
    Resource,
    operator_namespace,
    resource_of,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Green:
    """What stands under green's names, whoever made it: the reconcile reports another owner's object."""

    deployment: dict[str, Any] | None
    discovery_service: dict[str, Any] | None


async def read_green(kube: Kube, ns: str, name: str) -> Green:
    return Green(
        deployment=await kube.get(DEPLOYMENTS, ns, names.deployment(name, green=True)),
        discovery_service=await kube.get(SERVICES, ns, names.discovery_service(name, green=True)),
    )


def wanted(spec: KeycloakSpec, stored: BlueGreenStatus | None) -> bool:
    """Only Keycloaks that use blue-green (or are still in or after one) pay for its extra reads."""
    return spec.upgrade_policy.strategy == "BlueGreen" or (stored is not None and stored.state != bg.IDLE)


async def observe(
    kube: Kube,
    keycloak: dict[str, Any],
    spec: KeycloakSpec,
    canonical: dict[str, Any] | None,
    public: dict[str, Any] | None,
    green: Green,
    stored: BlueGreenStatus | None,
    check: compatibility_check.Answer | None = None,
) -> bg.Observed:
    ns, name = keycloak["metadata"]["namespace"], keycloak["metadata"]["name"]
    # The machine sees only this Keycloak's own objects: another owner's Deployment is no green to wait
    # for, nor its Service a selector to read (core/child_ownership).
    owner = owner_of(keycloak)
    canonical = child_ownership.ours(canonical, owner)
    public = child_ownership.ours(public, owner)
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
        green=child_ownership.ours(green.deployment, owner),
        public_selector_track=selector.get(names.LABEL_TRACK),
        backup_phase=backup_phase,
        green_serving_endpoints=green_serving,
        upgrade_path=_path(spec, name, canonical, check or compatibility_check.Answer()),
        database=canonical_database(keycloak, spec, canonical, stored).name,
        spec_database=database_copy.spec_database(spec),
        copy_timeout_s=durations.parse(copy.timeout) if copy is not None else 600.0,
        copy_phase=copy_phase,
        green_discovery_exists=child_ownership.ours(green.discovery_service, owner) is not None,
    )


async def perform(
    kube: Kube,
    keycloak: dict[str, Any],
    spec: KeycloakSpec,
    action: bg.Action,
    proof: PreflightStatus | None = None,
) -> None:
    owner = owner_of(keycloak)
    ns, name = owner.namespace, owner.name
    log.info("blue-green %s/%s: %s", ns, name, action)
    source = (
        await kube.get(CNPG_CLUSTERS, ns, action.source)
        if isinstance(action, bg.CopyDatabase) and action.tier == "cnpg"
        else None
    )
    for intent in writes.intents(action, owner, spec, operator_namespace(), proof, source):
        match intent:
            case writes.Create(obj=obj):
                await kube.create(obj)
            case writes.Apply(obj=obj):
                await _apply(kube, owner, obj)
            case writes.Delete(kind=kind, name=child, uid=uid, orphan=orphan):
                await _delete(kube, owner, _RESOURCES[kind], child, uid=uid, orphan=orphan)


_RESOURCES = {"Deployment": DEPLOYMENTS, "Service": SERVICES}


async def _apply(kube: Kube, owner: children.Owner, obj: dict[str, Any]) -> None:
    """Server-side apply with force takes every field it sets: only over nothing, or over this Keycloak's
    own object. Another owner's is left alone (the reconcile reports it, having read the same name)."""
    meta = obj["metadata"]
    existing = await kube.get(resource_of(obj), owner.namespace, meta["name"])
    if not child_ownership.may_write(existing, owner):
        log.warning("left %s %s/%s alone: not this Keycloak's", obj["kind"], owner.namespace, meta["name"])
        return
    await kube.apply(obj)


async def _delete(
    kube: Kube,
    owner: children.Owner,
    res: Resource,
    name: str,
    *,
    uid: str | None = None,
    orphan: bool = False,
) -> None:
    """Delete this Keycloak's own object under `name`, on condition it is still the one read (its uid)."""
    existing = await kube.get(res, owner.namespace, name)
    if existing is None or not child_ownership.may_write(existing, owner):
        if existing is not None:
            log.warning("left %s %s/%s alone: not this Keycloak's", res.plural, owner.namespace, name)
        return
    await kube.delete(
        res,
        owner.namespace,
        name,
        propagation="Orphan" if orphan else "Background",
        uid=uid or existing["metadata"].get("uid"),
    )


def _path(
    spec: KeycloakSpec, name: str, canonical: dict[str, Any] | None, check: compatibility_check.Answer
) -> str | None:
    """The planner's path for the change at hand; None with no blue, or while the compatibility check runs
    (the machine then waits at rest, as the reconcile does)."""
    if canonical is None or check.pending:
        return None
    return upgrade_plan.for_deployment(spec, name, canonical, check.exit).path
