"""Two operator replicas with kopf's peering on the real control plane: only the leader acts, and when it is
SIGKILLed in the middle of a blue-green upgrade the standby finishes it with no moment of downtime."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from keycloak_operator.models.peering_crd import peering_object
from localcluster import manifests, stages
from localcluster.operator_process import OperatorProcess
from tests.integration.support.kubectl import Kubectl, wait_for
from tests.integration.support.sampler import for_cluster
from tests.integration.test_blue_green import (
    CNPG,
    IMAGE,
    IN_FLIGHT,
    BackupController,
    assert_zero_downtime,
    bg_state,
    running,
    status,
    upgrade,
)

pytestmark = pytest.mark.integration

LIFETIME = "10"  # seconds a silent replica still counts as alive: the takeover delay


@pytest.fixture
def peering(kubectl: Kubectl, session_operator_stopped: None) -> Iterator[str]:
    name = f"ha-{uuid.uuid4().hex[:6]}"
    kubectl.apply(peering_object(name))
    yield name
    kubectl.run("delete", "clusterkopfpeering", name, "--wait=false", check=False)


def replica(cluster, tmp_path: Path, name: str) -> OperatorProcess:  # type: ignore[no-untyped-def]
    log_dir = tmp_path / name
    log_dir.mkdir()
    return OperatorProcess(cluster.kubeconfig, log_dir, extra_env={"KCOP_PEERING_LIFETIME": LIFETIME})


def test_standby_takes_over_a_blue_green_upgrade_when_the_leader_is_killed(
    cluster, kubectl: Kubectl, backup_crds: None, namespace: str, peering: str, tmp_path: Path
) -> None:
    old, new = f"{IMAGE}:26.7.0", f"{IMAGE}:26.7.3"
    stages.apply_ready_delay(cluster.kubeconfig, new, 4)
    kubectl.apply(manifests.db_secret(namespace))
    kubectl.apply(manifests.db_secret(namespace, "kcdb-app"))
    leader, standby = replica(cluster, tmp_path, "leader"), replica(cluster, tmp_path, "standby")
    backups = BackupController(kubectl, namespace, "backups.postgresql.cnpg.io", delay=1.0)
    try:
        # The leader SIGKILLs itself right after storing CuttingOver: traffic is between blue and green.
        leader.start(
            "--all-namespaces",
            "--peering",
            peering,
            "--priority",
            "200",
            env={"KCOP_FAILPOINT": "after-persist:CuttingOver"},
        )
        standby.start("--all-namespaces", "--peering", peering, "--priority", "100")
        wait_for("leader active", lambda: "this replica is active" in leader.log_text(), timeout=60)
        wait_for(
            "standby standing by", lambda: "this replica is standing by" in standby.log_text(), timeout=60
        )

        upgrade(kubectl, namespace, "ha", old, CNPG)
        wait_for("blue running", lambda: running(kubectl, namespace, "ha", old), timeout=90)
        assert "this replica is active" not in standby.log_text()
        backups.start()
        with for_cluster(cluster, namespace) as sampler:
            upgrade(kubectl, namespace, "ha", new, CNPG)
            wait_for("the leader killed mid-upgrade", lambda: not leader.alive(), timeout=120, interval=0.05)
            assert bg_state(kubectl, namespace, "ha") == "CuttingOver"

            def completed() -> bool:
                return bg_state(kubectl, namespace, "ha") == "Completed" and bool(
                    running(kubectl, namespace, "ha", new)
                )

            wait_for("the standby completing the upgrade", completed, timeout=180, interval=0.2)
        # The watcher logs the change at its next poll (leadership.POLL_SECONDS), while kopf and the queue act
        # the moment the leader's lease runs out: an upgrade may complete before the line is written.
        wait_for(
            "the standby saying it is active", lambda: "this replica is active" in standby.log_text(), 10
        )
        assert_zero_downtime(sampler, "ha")
        history = [h["state"] for h in status(kubectl, namespace, "ha")["blueGreen"]["history"]]
        assert history == IN_FLIGHT, history  # walked once: nothing redone twice, nothing rolled back
        assert len(kubectl.list("backups.postgresql.cnpg.io", namespace)) == 1
    finally:
        backups.stop.set()
        leader.stop()
        standby.stop()
        stages.remove(cluster.kubeconfig, new)
