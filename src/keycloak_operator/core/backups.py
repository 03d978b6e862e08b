"""Pre-upgrade backups: the object each database tier uses, and how to read its outcome.

cnpg: a CloudNativePG `Backup` of the cluster; managed: a `VolumeSnapshot` of the database's PVC. The name
comes from the upgrade (status.blueGreen.backupName), so a retry finds the backup it already asked for.
"""

from __future__ import annotations

from typing import Any

from keycloak_operator.core.bluegreen import BackupPhase
from keycloak_operator.core.children import Owner
from keycloak_operator.kernel import names
from keycloak_operator.models.keycloak import KeycloakSpec

CNPG_API_VERSION = names.CNPG_API_VERSION
SNAPSHOT_API_VERSION = "snapshot.storage.k8s.io/v1"


def backup_object(owner: Owner, spec: KeycloakSpec, name: str) -> dict[str, Any]:
    # Not owned by the Keycloak: a backup must survive the deletion of what it protects.
    metadata = {"name": name, "namespace": owner.namespace, "labels": names.instance_labels(owner.name)}
    db = spec.database
    if db.cnpg is not None:
        return {
            "apiVersion": CNPG_API_VERSION,
            "kind": "Backup",
            "metadata": metadata,
            "spec": {"cluster": {"name": db.cnpg.cluster_name}},
        }
    if db.managed is not None and db.managed.pvc_name:
        snapshot: dict[str, Any] = {"source": {"persistentVolumeClaimName": db.managed.pvc_name}}
        if db.managed.volume_snapshot_class_name:
            snapshot["volumeSnapshotClassName"] = db.managed.volume_snapshot_class_name
        return {
            "apiVersion": SNAPSHOT_API_VERSION,
            "kind": "VolumeSnapshot",
            "metadata": metadata,
            "spec": snapshot,
        }
    raise ValueError("this database tier takes no backup")


def phase(obj: dict[str, Any] | None) -> BackupPhase | None:
    """None when absent; otherwise pending until the backup controller says completed or failed."""
    if obj is None:
        return None
    status = obj.get("status") or {}
    if obj.get("kind") == "Backup":
        value = str(status.get("phase", "")).lower()
        if value == "completed":
            return "completed"
        if value == "failed":
            return "failed"
        return "pending"
    if status.get("error"):
        return "failed"
    return "completed" if status.get("readyToUse") is True else "pending"
