"""The children each blue-green action writes or deletes, rendered from the spec as finished objects.

Pure. `intents` is what an action does, whole: the shell performs each intent as it stands
(shell/upgrade.perform), and the reconcile reports any name `touched` lists that another owner's object
holds (core/child_ownership): both read the one rendering, so what is performed is what is checked. Green's
pods are rendered by core/deployment, as the canonical ones are.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from keycloak_operator.core import (
    backups,
    child_ownership,
    children,
    cnpg_copy,
    database_copy,
    network_policy,
    preflight_gate,
)
from keycloak_operator.core.bluegreen import model as bg
from keycloak_operator.core.cache_cluster import resolve_cache_cluster
from keycloak_operator.core.deployment import render_deployment
from keycloak_operator.core.versions import version_of
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec
from keycloak_operator.models.upgrade_status import PreflightStatus


@dataclass(frozen=True)
class Apply:
    """Server-side apply, with force: only over nothing, or over this Keycloak's own object."""

    obj: dict[str, Any]


@dataclass(frozen=True)
class Create:
    """Create; one already there under the name is kept (a backup, a copy, a Job: asked for once)."""

    obj: dict[str, Any]


@dataclass(frozen=True)
class Delete:
    """Delete this Keycloak's own object under the name, on condition it is the one read (`uid`, else the
    uid read); `orphan`: its ReplicaSet and pods stay, for the canonical Deployment to adopt."""

    kind: str
    name: str
    uid: str | None = None
    orphan: bool = False


Intent = Apply | Create | Delete


def intents(
    action: bg.Action,
    owner: children.Owner,
    spec: KeycloakSpec,
    operator_namespace: str | None,
    proof: PreflightStatus | None = None,
    source_cluster: dict[str, Any] | None = None,
) -> list[Intent]:
    """What `action` does, in order. `source_cluster`: for a cnpg copy, the Cluster the copy is shaped like,
    as read now (None if unreadable: CloudNativePG's defaults)."""
    match action:
        case bg.CreateBackup(name=backup, database=database):
            # Of what blue runs on: after a promoted cnpg copy that Cluster, not the stale one the spec names.
            return [Create(backups.backup_object(owner, database_copy.with_database(spec, database), backup))]
        case bg.CopyDatabase(target=target, backup=backup, tier="cnpg"):
            made = cnpg_copy.recovery_cluster(owner, spec, name=target, backup=backup, source=source_cluster)
            return [Create(made)]
        case bg.CopyDatabase(job=job, source=source, target=target):
            return [Create(database_copy.job(owner, spec, name=job, source=source, target=target))]
    uid = action.uid if isinstance(action, bg.DeleteBlue | bg.OrphanGreen) else None
    orphan = isinstance(action, bg.OrphanGreen)
    return [
        *(Apply(obj) for obj in applied(action, owner, spec, operator_namespace, proof)),
        *(Delete(kind, name, uid, orphan) for kind, name in deleted(action, owner.name)),
    ]


def applied(
    action: bg.Action,
    owner: children.Owner,
    spec: KeycloakSpec,
    operator_namespace: str | None,
    proof: PreflightStatus | None = None,
) -> list[dict[str, Any]]:
    """What `action` applies, in order (server-side apply, with force). `proof`: the wanted image's
    preflight (core/preflight_gate): green runs the digest it resolved, as the canonical pods then do."""
    match action:
        case bg.ApplyGreen(image=image, track=track, database=database, apart=apart):
            # The version is the spec's as written: which database the pods use is status, not spec.
            version = version_of(spec.model_copy(update={"image": image})).format()
            verified = preflight_gate.verified_version(proof, image)
            cluster = resolve_cache_cluster(owner.name, spec.cache_isolation, image, verified).name
            # Green's NetworkPolicy before green's pods: they start inside their own cache cluster's policy.
            # The reconcile keeps it from then on, while green's Deployment exists.
            policy = network_policy.policy(
                spec, owner, track=track, cache_cluster=cluster, operator_namespace=operator_namespace
            )
            green = render_deployment(
                owner,
                spec,
                image=image,
                track=track,
                version=version,
                green=True,
                database=database,
                proof=proof,
            )
            return [
                *([policy] if policy is not None else []),
                # Green's track's membership Service before green's pods, which query only it (ADR 0018).
                children.membership_service(owner, track, cluster, apart=apart),
                green,
                # How the machine sees green's pods serving; on a copy: discovery.green_view.
                *([] if apart else [children.discovery_service(owner, track, cluster, green=True)]),
            ]
        case bg.SwitchTraffic(track=track):
            return [children.public_service(owner, track, spec)]
        case bg.AdoptAsCanonical(image=image, track=track, database=database):
            version = version_of(spec.model_copy(update={"image": image})).format()
            return [
                render_deployment(
                    owner, spec, image=image, track=track, version=version, database=database, proof=proof
                )
            ]
        case _:
            return []


def deleted(action: bg.Action, keycloak: str) -> list[child_ownership.Key]:
    """What `action` deletes, by kind and name."""
    match action:
        case bg.DeleteGreen() | bg.OrphanGreen():
            return [("Deployment", names.deployment(keycloak, green=True))]
        case bg.DeleteBlue():
            return [("Deployment", names.deployment(keycloak))]
        case bg.DeleteGreenDiscovery():
            return [("Service", names.discovery_service(keycloak, green=True))]
        case _:
            return []


def touched(
    actions: Iterable[bg.Action],
    owner: children.Owner,
    spec: KeycloakSpec,
    operator_namespace: str | None,
    proof: PreflightStatus | None = None,
) -> frozenset[child_ownership.Key]:
    """Every child name `actions` apply or delete (their creations, of backups and copies, never write over
    an object: a create under a taken name is refused by the API server)."""
    keys: set[child_ownership.Key] = set()
    for action in actions:
        keys.update(child_ownership.key(o) for o in applied(action, owner, spec, operator_namespace, proof))
        keys.update(deleted(action, owner.name))
    return frozenset(keys)
