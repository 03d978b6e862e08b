"""The cnpg tier's database copy on the real control plane (kwok's pods, no real Keycloak or PostgreSQL).

CloudNativePG cannot run on simulated nodes: THIS TEST PLAYS CLOUDNATIVEPG'S PART. It installs stand-in
Backup and Cluster CRDs (fixtures/backup-crds.yaml), makes the spec's Cluster object itself, completes the
pre-upgrade Backup the operator asks for, and, once the operator has created the Cluster to recover from that
Backup, makes its `-app` Secret and reports it healthy, as CloudNativePG would after the recovery. What is
tested is the operator's side: the Cluster it asks for, and which Cluster each colour's pods use.
"""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from keycloak_operator.core import cnpg_copy
from keycloak_operator.kernel import names
from localcluster import manifests
from localcluster.operator_process import OperatorProcess
from tests.integration.support.kubectl import Kubectl, events, wait_for

pytestmark = pytest.mark.integration

KC = f"keycloaks.{names.GROUP}"
CLUSTERS = "clusters.postgresql.cnpg.io"
BACKUPS = "backups.postgresql.cnpg.io"
IMAGE = "quay.io/keycloak/keycloak"
OLD, MINOR = f"{IMAGE}:26.5.6", f"{IMAGE}:26.7.3"
PG_IMAGE = "ghcr.io/cloudnative-pg/postgresql:17.2"


def status(kubectl: Kubectl, ns: str) -> dict:
    return dict((kubectl.get(KC, "kc", ns) or {}).get("status") or {})


def keycloak(ns: str, image: str, copy_timeout: str = "2m") -> dict:
    return manifests.keycloak(
        "kc",
        ns,
        image=image,
        replicas=2,
        database={"cnpg": {"clusterName": "kcdb", "database": "keycloak"}},
        cacheIsolation={"autoRevision": True},
        upgradePolicy={
            "strategy": "BlueGreen",
            "drainDelay": "1s",
            "greenReadyTimeout": "2m",
            "databaseCopy": {"timeout": copy_timeout},  # no image: CloudNativePG restores the copy
        },
    )


def source_cluster(ns: str) -> dict:
    """The spec's Cluster, as a user would have made it (no controller here gives it a status)."""
    return {
        "apiVersion": "postgresql.cnpg.io/v1",
        "kind": "Cluster",
        "metadata": {"name": "kcdb", "namespace": ns},
        "spec": {
            "instances": 2,
            "imageName": PG_IMAGE,
            "storage": {"size": "2Gi"},
            "bootstrap": {"initdb": {"database": "keycloak", "owner": "kc_owner"}},
        },
    }


def db_host(kubectl: Kubectl, ns: str, deployment: str) -> str | None:
    dep = kubectl.get("deployment", deployment, ns)
    if dep is None:
        return None
    (container,) = [c for c in dep["spec"]["template"]["spec"]["containers"] if c["name"] == "keycloak"]
    return next(e["value"] for e in container["env"] if e["name"] == "KC_DB_URL_HOST")


def patch_status(kubectl: Kubectl, kind: str, name: str, ns: str, body: dict) -> None:
    kubectl.run("patch", kind, name, "-n", ns, "--subresource=status", "--type=merge", "-p", json.dumps(body))


def test_a_minor_upgrade_on_cnpg_runs_green_on_a_cluster_recovered_from_the_backup(
    kubectl: Kubectl, operator: OperatorProcess, backup_crds: None, namespace: str
) -> None:
    ns = namespace
    kubectl.apply(source_cluster(ns))
    kubectl.apply(manifests.db_secret(ns, "kcdb-app"))
    kubectl.apply(keycloak(ns, OLD))
    wait_for(
        "blue running",
        lambda: status(kubectl, ns).get("phase") == "Running" and status(kubectl, ns),
        timeout=90,
    )

    kubectl.apply(keycloak(ns, MINOR))
    # CloudNativePG's part, 1: the pre-upgrade Backup completes.
    backup = wait_for("the pre-upgrade Backup", lambda: kubectl.list(BACKUPS, ns), timeout=60)[0]
    assert backup["spec"]["cluster"]["name"] == "kcdb"
    patch_status(kubectl, BACKUPS, backup["metadata"]["name"], ns, {"status": {"phase": "completed"}})

    def the_copy() -> dict | None:
        made = [c for c in kubectl.list(CLUSTERS, ns) if c["metadata"]["name"] != "kcdb"]
        return made[0] if made else None

    copy = wait_for("the Cluster recovered for green", the_copy, timeout=60)
    name = copy["metadata"]["name"]
    upgrade = status(kubectl, ns)["blueGreen"]
    assert (upgrade["state"], upgrade["path"]) == ("CopyingDatabase", "BlueGreenCopy")
    assert name == upgrade["greenDatabase"] == upgrade["copyJob"]
    assert name == cnpg_copy.copy_name("kcdb", MINOR, upgrade["startedAt"])
    assert copy["spec"]["bootstrap"] == {
        "recovery": {
            "backup": {"name": backup["metadata"]["name"]},
            "database": "keycloak",
            "owner": "kc_owner",
        }
    }
    assert (copy["spec"]["instances"], copy["spec"]["imageName"]) == (2, PG_IMAGE)
    assert copy["spec"]["storage"] == {"size": "2Gi"}
    assert not copy["metadata"].get("ownerReferences")  # survives the Keycloak's deletion, like the backup
    assert kubectl.get("deployment", names.deployment("kc", green=True), ns) is None  # not before it is ready

    # CloudNativePG's part, 2: the recovery is done, the copy's app Secret made, the Cluster healthy.
    kubectl.apply(manifests.db_secret(ns, names.cnpg_credentials_secret(name)))
    healthy = {
        "phase": cnpg_copy.HEALTHY_PHASE,
        "readyInstances": 2,
        "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterIsReady", "message": ""}],
    }
    patch_status(kubectl, CLUSTERS, name, ns, {"status": healthy})

    green = names.deployment("kc", green=True)
    wait_for("green on the copy", lambda: db_host(kubectl, ns, green) == f"{name}-rw", timeout=60)
    assert db_host(kubectl, ns, names.deployment("kc")) == "kcdb-rw"  # blue stays on the original

    def completed() -> dict | None:
        s = status(kubectl, ns)
        done = (s.get("blueGreen") or {}).get("state") == "Completed" and s.get("image") == MINOR
        return s if done and s.get("phase") == "Running" else None

    done = wait_for("the upgrade completed", completed, timeout=180, interval=0.5)
    assert done["database"] == {"name": name, "copiedFrom": "kcdb", "serving": name}
    assert db_host(kubectl, ns, names.deployment("kc")) == f"{name}-rw"  # promoted onto the copy
    assert kubectl.get("deployment", green, ns) is None
    passed = [h["state"] for h in done["blueGreen"]["history"]]
    expected = [
        "BackingUp",
        "CopyingDatabase",
        "ProvisioningGreen",
        "WaitingForGreen",
        "Promoting",
        "Completed",
    ]
    assert [s for s in passed if s in expected] == expected, passed
    # One copy, however many passes ran; the spec still names the Cluster the user wrote.
    assert sorted(c["metadata"]["name"] for c in kubectl.list(CLUSTERS, ns)) == sorted(["kcdb", name])
    assert kubectl.get(KC, "kc", ns)["spec"]["database"]["cnpg"]["clusterName"] == "kcdb"


def start_upgrade(kubectl: Kubectl, ns: str, copy_timeout: str = "2m") -> str:
    """Blue running on `kcdb`, then the minor upgrade; plays CloudNativePG's Backup. The Backup's name."""
    kubectl.apply(source_cluster(ns))
    kubectl.apply(manifests.db_secret(ns, "kcdb-app"))
    kubectl.apply(keycloak(ns, OLD, copy_timeout))
    wait_for("blue running", lambda: status(kubectl, ns).get("phase") == "Running", timeout=90)
    kubectl.apply(keycloak(ns, MINOR, copy_timeout))
    backup = wait_for("the pre-upgrade Backup", lambda: kubectl.list(BACKUPS, ns), timeout=60)[0]
    patch_status(kubectl, BACKUPS, backup["metadata"]["name"], ns, {"status": {"phase": "completed"}})
    return str(backup["metadata"]["name"])


def copies(kubectl: Kubectl, ns: str) -> list[str]:
    return sorted(
        c["metadata"]["name"] for c in kubectl.list(CLUSTERS, ns) if c["metadata"]["name"] != "kcdb"
    )


def test_a_copy_never_ready_within_the_timeout_rolls_back_to_blue_on_the_original(
    kubectl: Kubectl, operator: OperatorProcess, backup_crds: None, namespace: str
) -> None:
    """CloudNativePG (played here) never reports the recovered Cluster healthy."""
    ns = namespace
    start_upgrade(kubectl, ns, copy_timeout="5s")

    def failed() -> dict | None:
        s = status(kubectl, ns)
        return s if (s.get("blueGreen") or {}).get("state") == "Failed" else None

    done = wait_for("the upgrade rolled back", failed, timeout=60, interval=0.5)
    (made,) = copies(kubectl, ns)
    assert f"database copy (Cluster {made}) not completed within 5s" in done["blueGreen"]["message"]
    passed = [h["state"] for h in done["blueGreen"]["history"]]
    assert passed[-3:] == ["CopyingDatabase", "RollingBack", "Failed"], passed
    assert kubectl.get("deployment", names.deployment("kc", green=True), ns) is None  # green never started
    assert db_host(kubectl, ns, names.deployment("kc")) == "kcdb-rw"
    assert done["image"] == OLD and not (done.get("database") or {}).get("copiedFrom")
    assert events(kubectl, ns, reason="BlueGreenRollingBack")
    assert copies(kubectl, ns) == [made]  # left for the user: the operator never deletes a Cluster


def test_a_restart_in_copying_database_asks_for_the_cluster_once(
    kubectl: Kubectl, operator: OperatorProcess, backup_crds: None, namespace: str
) -> None:
    """The operator SIGKILLs itself right after storing CopyingDatabase, before creating the Cluster; the
    restarted one creates the Cluster named in the stored status, and the upgrade walks on from there (its
    later passes find that Cluster and ask for no other) once CloudNativePG (played here) reports it."""
    ns = namespace
    operator.stop()
    operator.start("--all-namespaces", env={"KCOP_FAILPOINT": "after-persist:CopyingDatabase"})
    armed = True
    try:
        start_upgrade(kubectl, ns)
        wait_for("the operator killing itself", lambda: not operator.alive(), timeout=60, interval=0.1)
        assert status(kubectl, ns)["blueGreen"]["state"] == "CopyingDatabase" and copies(kubectl, ns) == []
        operator.start("--all-namespaces")
        armed = False
        (made,) = wait_for("the Cluster asked for after the restart", lambda: copies(kubectl, ns), timeout=60)
        assert made == status(kubectl, ns)["blueGreen"]["copyJob"]  # the name stored before the kill
    finally:
        if armed:  # never leave the session's later tests an operator that kills itself
            operator.stop()
        if not operator.alive():
            operator.start("--all-namespaces")
    kubectl.apply(manifests.db_secret(ns, names.cnpg_credentials_secret(made)))
    healthy = {
        "phase": cnpg_copy.HEALTHY_PHASE,
        "readyInstances": 2,
        "conditions": [{"type": "Ready", "status": "True", "reason": "ClusterIsReady", "message": ""}],
    }
    patch_status(kubectl, CLUSTERS, made, ns, {"status": healthy})
    wait_for(
        "the upgrade completed on the copy",
        lambda: (
            (status(kubectl, ns).get("database") or {}).get("name") == made
            and status(kubectl, ns)["blueGreen"]["state"] == "Completed"
        ),
        timeout=180,
        interval=0.5,
    )
    assert copies(kubectl, ns) == [made]
    history = [h["state"] for h in status(kubectl, ns)["blueGreen"]["history"]]
    assert history.count("CopyingDatabase") == 1 and "RollingBack" not in history, history


def test_the_api_server_wants_a_copy_image_on_the_job_tiers_only(
    kubectl: Kubectl, crds: None, namespace: str
) -> None:
    def dry_run(obj: dict) -> subprocess.CompletedProcess[str]:  # the CRD's rules, nothing stored
        return kubectl.run("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump(obj), check=False)

    assert dry_run(keycloak(namespace, OLD)).returncode == 0  # cnpg: no image, CloudNativePG restores
    external = manifests.keycloak("ext", namespace, upgradePolicy={"databaseCopy": {"timeout": "5m"}})
    refused = dry_run(external)
    assert refused.returncode != 0
    assert "spec.upgradePolicy.databaseCopy.image is required on the managed and external tiers" in (
        refused.stderr
    )
