"""The cnpg tier's database copy: a new CloudNativePG `Cluster` recovered from the pre-upgrade `Backup`.

On the managed and external tiers green's copy is a new database on blue's server, filled by a Job
(core/database_copy.py). On the cnpg tier the pre-upgrade backup already is a full physical copy, and
CloudNativePG can start a new Cluster from it (`spec.bootstrap.recovery.backup.name`): green's pods then use
that Cluster's `-rw` Service and `-app` Secret, blue keeps the spec's Cluster untouched. So on this tier "the
database" the copy machinery tracks (status.blueGreen.blueDatabase/greenDatabase, status.database) is the
Cluster's name; the database inside keeps the spec's name.

What the new Cluster takes from the spec's (read when the copy is asked for, so a resumed upgrade that
finds the Cluster made never reads it again):
- instances, storage and walStorage: the same shape of cluster;
- the PostgreSQL image (spec.imageName, else spec.imageCatalogRef, else the image status reports): a
  physical backup restores only into the same PostgreSQL major version;
- postgresql.parameters: a recovering server refuses settings such as max_connections below the source's.
Not taken: backup configuration (an object store path is the source's own; the copy gets none, so the
next upgrade's Backup needs one added), monitoring, affinity, resources and managed roles.

The copy is not owned by the Keycloak: like the backup, data that may have served must survive a delete.

Pure: the shell reads the source Cluster, creates this object and reads it back.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from keycloak_operator.core import rollout
from keycloak_operator.core.children import Owner
from keycloak_operator.core.images import release_of
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec

CopyPhase = Literal["pending", "completed", "failed"]  # the same words as database_copy's Job phases

COMPONENT: Final = "database-copy"
ANNOTATION_COPIED_FROM: Final = f"{names.GROUP}/copied-from"
ANNOTATION_BACKUP: Final = f"{names.GROUP}/backup"
# CloudNativePG's own words (api/v1 cluster_types.go): the phase of a cluster doing nothing, and the
# condition it keeps beside it.
HEALTHY_PHASE: Final = "Cluster in healthy state"
READY_CONDITION: Final = "Ready"
# Phases from which CloudNativePG does not get on by itself: waiting out the copy's timeout would only delay
# the rollback. Others (setting up the primary, a recovery Job retrying) may still end well.
STUCK_PHASES: Final = (
    "Cluster is unrecoverable and needs manual intervention",
    "Invalid cluster definition",
)


def copy_name(cluster: str, green_image: str, started: str) -> str:
    """The new Cluster's name, from the spec's Cluster, green's release and the upgrade's start."""
    release = release_of(green_image)
    parts = None
    if release is not None and not release.prerelease:
        parts = (release.major, release.minor, release.patch)
    return names.cnpg_copy_cluster(cluster, parts, green_image, started)


def _image_of(source_spec: dict[str, Any], source_status: dict[str, Any]) -> dict[str, Any]:
    if source_spec.get("imageName"):
        return {"imageName": source_spec["imageName"]}
    if source_spec.get("imageCatalogRef"):
        return {"imageCatalogRef": source_spec["imageCatalogRef"]}
    if source_status.get("image"):
        return {"imageName": source_status["image"]}
    return {}  # CloudNativePG's default image, as the source had when it was made


def _owner_of(source_spec: dict[str, Any], database: str) -> str:
    """The application database's owner: the recovered catalog keeps the source's, so the new Cluster's
    app Secret must name the same role (CloudNativePG's default owner is the database's name)."""
    initdb = (source_spec.get("bootstrap") or {}).get("initdb") or {}
    if initdb.get("database") == database and initdb.get("owner"):
        return str(initdb["owner"])
    recovery = (source_spec.get("bootstrap") or {}).get("recovery") or {}
    if recovery.get("database") == database and recovery.get("owner"):
        return str(recovery["owner"])
    return database


def recovery_cluster(
    owner: Owner, spec: KeycloakSpec, *, name: str, backup: str, source: dict[str, Any] | None
) -> dict[str, Any]:
    """The Cluster `name` recovered from Backup `backup`, shaped like `source` (the spec's Cluster as the
    API server returned it; None when it could not be read: CloudNativePG's defaults, one instance)."""
    cnpg = spec.database.cnpg
    if cnpg is None:
        raise ValueError("not the cnpg tier")
    if not backup:
        raise ValueError("a cnpg copy is recovered from the pre-upgrade Backup, and none is named")
    if name == cnpg.cluster_name:
        raise ValueError("a Cluster is never recovered onto the spec's own")
    source_spec = (source or {}).get("spec") or {}
    source_status = (source or {}).get("status") or {}
    cluster_spec: dict[str, Any] = {"instances": int(source_spec.get("instances") or 1)}
    cluster_spec.update(_image_of(source_spec, source_status))
    for volume in ("storage", "walStorage"):
        if source_spec.get(volume):
            cluster_spec[volume] = source_spec[volume]
    if "storage" not in cluster_spec:
        cluster_spec["storage"] = {"size": "1Gi"}  # CloudNativePG requires a size; the source named none
    parameters = (source_spec.get("postgresql") or {}).get("parameters")
    if parameters:
        cluster_spec["postgresql"] = {"parameters": dict(parameters)}
    cluster_spec["bootstrap"] = {
        "recovery": {
            "backup": {"name": backup},
            "database": cnpg.database,
            "owner": _owner_of(source_spec, cnpg.database),
        }
    }
    return {
        "apiVersion": names.CNPG_API_VERSION,
        "kind": "Cluster",
        "metadata": {
            "name": name,
            "namespace": owner.namespace,
            "labels": names.component_labels(owner.name, COMPONENT),
            "annotations": {ANNOTATION_COPIED_FROM: cnpg.cluster_name, ANNOTATION_BACKUP: backup},
        },
        "spec": cluster_spec,
    }


def phase(obj: dict[str, Any] | None) -> CopyPhase | None:
    """None when absent; completed once CloudNativePG reports the Cluster healthy, Ready and with every
    instance ready; failed in a phase it does not leave by itself; pending otherwise."""
    if obj is None:
        return None
    status = obj.get("status") or {}
    if status.get("phase") in STUCK_PHASES:
        return "failed"
    conditions = status.get("conditions") or []
    ready = any(c.get("type") == READY_CONDITION and c.get("status") == "True" for c in conditions)
    wanted = int((obj.get("spec") or {}).get("instances") or 1)
    instances_ready = int(status.get("readyInstances") or 0) >= wanted
    return "completed" if status.get("phase") == HEALTHY_PHASE and ready and instances_ready else "pending"


def running_cluster(deployment: dict[str, Any] | None) -> str:
    """The Cluster a Deployment's Keycloak container uses, from its host `<cluster>-rw`; "" when none."""
    host = rollout.keycloak_env(deployment, "KC_DB_URL_HOST") or ""
    suffix = names.cnpg_host("")
    return host[: -len(suffix)] if host.endswith(suffix) else ""
