"""Blue-green upgrades on the real control plane, measured: downtime, cache mixing, promotion, failure.

kwok holds green's pods not-Ready for a few seconds (Keycloak's boot time). CloudNativePG and the CSI
snapshotter cannot run on simulated nodes: the tests install their Backup/VolumeSnapshot CRDs and play the
backup controller's part by completing the backup objects themselves.
"""

from __future__ import annotations

import threading
import time

import pytest

from keycloak_operator.kernel import names
from localcluster import manifests, stages
from localcluster.operator_process import OperatorProcess
from tests.integration.support.kubectl import Kubectl, events, wait_for
from tests.integration.support.sampler import Pod, Sample, Sampler, for_cluster

pytestmark = pytest.mark.integration

KC = f"keycloaks.{names.GROUP}"
IMAGE = "quay.io/keycloak/keycloak"
BOOT_SECONDS = 4
POLICY = {"strategy": "BlueGreen", "drainDelay": "1s", "greenReadyTimeout": "2m"}


def bg_state(kubectl: Kubectl, ns: str, name: str) -> str:
    s = (kubectl.get(KC, name, ns) or {}).get("status") or {}
    return str((s.get("blueGreen") or {}).get("state", ""))


def status(kubectl: Kubectl, ns: str, name: str) -> dict:
    return dict((kubectl.get(KC, name, ns) or {}).get("status") or {})


def running(kubectl: Kubectl, ns: str, name: str, image: str) -> dict | None:
    s = status(kubectl, ns, name)
    return s if s.get("phase") == "Running" and s.get("image") == image else None


class BackupController(threading.Thread):
    """Plays CNPG's / the snapshotter's part: completes every backup object that appears."""

    def __init__(self, kubectl: Kubectl, namespace: str, kind: str, delay: float = 0.0):
        super().__init__(daemon=True)
        self.kubectl, self.namespace, self.kind, self.delay = kubectl, namespace, kind, delay
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            for obj in self.kubectl.list(self.kind, self.namespace):
                if obj.get("status"):
                    continue
                self.stop.wait(self.delay)  # a backup takes a while, like a real one
                status = (
                    '{"status":{"phase":"completed"}}'
                    if self.kind.startswith("backups")
                    else ('{"status":{"readyToUse":true}}')
                )
                self.kubectl.run(
                    "patch",
                    self.kind,
                    obj["metadata"]["name"],
                    "-n",
                    self.namespace,
                    "--subresource=status",
                    "--type=merge",
                    "-p",
                    status,
                    check=False,
                )
            self.stop.wait(0.5)


def assert_zero_downtime(sampler: Sampler, name: str) -> None:
    assert len(sampler.samples) > 10 and sampler.complete(), (len(sampler.samples), sampler.last_error)
    public = names.public_service(name)
    gaps = [s for s in sampler.samples if not s.ready_addresses.get(public)]
    assert not gaps, (
        f"{len(gaps)} of {len(sampler.samples)} samples had no ready endpoint behind {public}; "
        f"the first: {describe_endpoints(gaps[0], public)}"
    )


def describe_endpoints(sample: Sample, service: str) -> str:
    """What a sample saw behind a Service: each endpoint with its pod's readiness and track, so a failure
    says whether the slices lagged the pods or the pods themselves were not Ready."""
    listed = sorted(sample.all_addresses.get(service, frozenset()))
    rows = []
    for ip in listed:
        pod = sample.pods.get(ip)
        who = f"{pod.name} ready={pod.ready} track={pod.labels.get(names.LABEL_TRACK)}" if pod else "no pod"
        rows.append(f"{ip} ({who}, listed ready={ip in sample.ready_addresses.get(service, frozenset())})")
    return f"at {sample.at:.2f}: " + ("; ".join(rows) or "no endpoint listed")


def assert_no_cache_mixing(samples: list[Sample], name: str) -> None:
    for service in [names.membership_service(name, t) for t in names.TRACKS]:
        for s in samples:
            images = {s.pods[ip].image for ip in s.all_addresses.get(service, frozenset()) if ip in s.pods}
            majors = {image.rsplit(":", 1)[1].split(".")[0] for image in images}
            assert len(majors) <= 1, f"{service} selected majors {majors} together at {s.at}"


def upgrade(kubectl: Kubectl, ns: str, name: str, image: str, database: dict, **policy) -> None:
    kubectl.apply(
        manifests.keycloak(
            name,
            ns,
            image=image,
            replicas=3,
            database=database,
            cacheIsolation={"autoRevision": True},
            upgradePolicy={**POLICY, **policy},
        )
    )


EXTERNAL = {"external": {"host": "db.example.internal", "credentialsSecret": {"name": manifests.DB_SECRET}}}
CNPG = {"cnpg": {"clusterName": "kcdb"}}
MANAGED = {
    "managed": {
        "host": "pg.internal",
        "credentialsSecret": {"name": manifests.DB_SECRET},
        "pvcName": "pg-data",
        "volumeSnapshotClassName": "csi",
    }
}


TIERS = [
    ("external", EXTERNAL, None),
    ("cnpg", CNPG, "backups.postgresql.cnpg.io"),
    ("managed", MANAGED, "volumesnapshots.snapshot.storage.k8s.io"),
]


@pytest.mark.parametrize(("tier", "database", "backup_kind"), TIERS)
def test_major_upgrade_with_teardown_has_zero_downtime_and_promotes_without_restart(
    cluster,
    kubectl: Kubectl,
    operator: OperatorProcess,
    backup_crds: None,
    namespace: str,
    tier,
    database,
    backup_kind,
):
    old, new = f"{IMAGE}:26.7.0", f"{IMAGE}:26.7.3"
    stages.apply_ready_delay(cluster.kubeconfig, new, BOOT_SECONDS)
    kubectl.apply(manifests.db_secret(namespace))
    if tier == "cnpg":
        kubectl.apply(manifests.db_secret(namespace, "kcdb-app"))
    backups = BackupController(kubectl, namespace, backup_kind) if backup_kind else None
    try:
        upgrade(kubectl, namespace, "bg", old, database)
        before = wait_for("blue running", lambda: running(kubectl, namespace, "bg", old), timeout=90)
        public_uid = kubectl.get("service", names.public_service("bg"), namespace)["metadata"]["uid"]
        if backups:
            backups.start()
        with for_cluster(cluster, namespace) as sampler:
            upgrade(kubectl, namespace, "bg", new, database)
            wait_for(
                "upgrade completed",
                lambda: (
                    bg_state(kubectl, namespace, "bg") == "Completed"
                    and running(kubectl, namespace, "bg", new) is not None
                ),
                timeout=180,
                interval=0.1,
            )
            time.sleep(1)
        assert_zero_downtime(sampler, "bg")
        assert_no_cache_mixing(sampler.samples, "bg")
        # The states it went through, from the history the operator keeps in status (polling can miss a state
        # that lasts less than one kubectl round trip, as Promoting often does).
        passed = [h["state"] for h in status(kubectl, namespace, "bg")["blueGreen"]["history"]]
        expected = ["WaitingForGreen", "TearingDownBlue", "Promoting", "Completed"]
        assert [s for s in passed if s in expected] == expected, passed

        # Promotion renamed green without a pod restart: the pods serving at the end are the ones that first
        # became Ready under green.
        # Server pods only: the preflight Job's pod ran the new image before green, as it must.
        def servers(sample: Sample) -> list[Pod]:
            return [
                p
                for p in sample.pods.values()
                if p.labels.get(names.LABEL_COMPONENT) == names.COMPONENT_SERVER and p.image == new
            ]

        end = sampler.samples[-1]
        final_pods = {p.name for p in servers(end)}
        assert len(final_pods) == 3
        green_names = {p.name for s in sampler.samples for p in servers(s)}
        assert green_names == final_pods, "pods were replaced during promotion"

        dep = kubectl.get("deployment", names.deployment("bg"), namespace)
        assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == new
        assert kubectl.get("deployment", names.deployment("bg", green=True), namespace) is None
        assert kubectl.get("service", names.discovery_service("bg", green=True), namespace) is None
        # Promoted pods keep querying their track's membership Service; blue's track's one is gone.
        track = dep["metadata"]["labels"][names.LABEL_TRACK]
        discovery = kubectl.get("service", names.membership_service("bg", track), namespace)
        assert discovery["spec"]["selector"][names.LABEL_CACHE_CLUSTER] == "bg-v26"
        gone = names.membership_service("bg", names.other_track(track))
        wait_for(
            "blue's membership Service gone",
            lambda: kubectl.get("service", gone, namespace) is None,
            timeout=30,
        )
        public = kubectl.get("service", names.public_service("bg"), namespace)
        assert public["metadata"]["uid"] == public_uid
        assert (
            public["spec"]["selector"][names.LABEL_TRACK]
            == dep["spec"]["selector"]["matchLabels"][names.LABEL_TRACK]
        )

        done = status(kubectl, namespace, "bg")
        assert done["versions"]["currentVersion"].startswith("26.7.3#")
        assert done["versions"]["lastVersion"] == before["versions"]["currentVersion"]
        if backup_kind:
            made = kubectl.list(backup_kind, namespace)
            assert len(made) == 1 and made[0]["metadata"]["name"] == done["blueGreen"]["backupName"]
        else:
            assert events(kubectl, namespace, reason="NoBackup")
    finally:
        if backups:
            backups.stop.set()
        stages.remove(cluster.kubeconfig, new)


@pytest.mark.parametrize(("tier", "database", "backup_kind"), TIERS)
def test_without_teardown_blue_stays_and_green_serves(
    cluster,
    kubectl: Kubectl,
    operator: OperatorProcess,
    backup_crds: None,
    namespace: str,
    tier,
    database,
    backup_kind,
):
    old, new = f"{IMAGE}:26.7.0", f"{IMAGE}:26.7.2"
    stages.apply_ready_delay(cluster.kubeconfig, new, BOOT_SECONDS)
    kubectl.apply(manifests.db_secret(namespace))
    if tier == "cnpg":
        kubectl.apply(manifests.db_secret(namespace, "kcdb-app"))
    backups = BackupController(kubectl, namespace, backup_kind) if backup_kind else None
    upgrade(kubectl, namespace, "keep", old, database, autoTeardown=False)
    wait_for("blue running", lambda: running(kubectl, namespace, "keep", old), timeout=90)
    try:
        if backups:
            backups.start()
        with for_cluster(cluster, namespace) as sampler:
            upgrade(kubectl, namespace, "keep", new, database, autoTeardown=False)
            wait_for("completed", lambda: bg_state(kubectl, namespace, "keep") == "Completed", timeout=120)
            time.sleep(1)
    finally:
        if backups:
            backups.stop.set()
        stages.remove(cluster.kubeconfig, new)
    assert_zero_downtime(sampler, "keep")
    blue = kubectl.get("deployment", names.deployment("keep"), namespace)
    green = kubectl.get("deployment", names.deployment("keep", green=True), namespace)
    assert blue["spec"]["template"]["spec"]["containers"][0]["image"] == old
    assert green["spec"]["template"]["spec"]["containers"][0]["image"] == new
    public = kubectl.get("service", names.public_service("keep"), namespace)
    assert (
        public["spec"]["selector"][names.LABEL_TRACK]
        == green["spec"]["selector"]["matchLabels"][names.LABEL_TRACK]
    )
    if backup_kind:
        assert len(kubectl.list(backup_kind, namespace)) == 1
    else:
        assert events(kubectl, namespace, reason="NoBackup")


def test_broken_green_fails_after_deadline_and_blue_serves_throughout(
    cluster, kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    old, broken = f"{IMAGE}:26.7.0", f"{IMAGE}:26.7.9"
    stages.apply_never_ready(cluster.kubeconfig, broken)
    try:
        kubectl.apply(manifests.db_secret(namespace))
        upgrade(kubectl, namespace, "fail", old, EXTERNAL, greenReadyTimeout="8s")
        before = wait_for("blue running", lambda: running(kubectl, namespace, "fail", old), timeout=90)
        with for_cluster(cluster, namespace) as sampler:
            upgrade(kubectl, namespace, "fail", broken, EXTERNAL, greenReadyTimeout="8s")
            wait_for("Failed", lambda: bg_state(kubectl, namespace, "fail") == "Failed", timeout=120)
            wait_for(
                "green removed",
                lambda: kubectl.get("deployment", names.deployment("fail", green=True), namespace) is None,
                timeout=60,
            )
        assert_zero_downtime(sampler, "fail")
        s = status(kubectl, namespace, "fail")
        assert s["versions"]["currentVersion"] == before["versions"]["currentVersion"]
        assert s["versions"]["nextVersion"].startswith("26.7.9#")
        assert "not Ready within" in s["blueGreen"]["message"]
        degraded = next(c for c in s["conditions"] if c["type"] == "Degraded")
        assert degraded["status"] == "True" and degraded["reason"] == "UpgradeFailed"
        dep = kubectl.get("deployment", names.deployment("fail"), namespace)
        assert dep["spec"]["template"]["spec"]["containers"][0]["image"] == old
        # Not retried while the spec still asks for the failed image.
        time.sleep(3 * operator.resync_seconds)
        assert bg_state(kubectl, namespace, "fail") == "Failed"
        assert kubectl.get("deployment", names.deployment("fail", green=True), namespace) is None
    finally:
        stages.remove(cluster.kubeconfig, broken)


IN_FLIGHT = [
    "BackingUp",
    "ProvisioningGreen",
    "WaitingForGreen",
    "CuttingOver",
    "Draining",
    "TearingDownBlue",
    "Promoting",
    "Completed",
]


def test_sigkill_right_after_each_state_is_stored_resumes_and_completes_once(
    cluster, kubectl: Kubectl, operator: OperatorProcess, backup_crds: None, namespace: str
):
    """One upgrade, the operator SIGKILLed once per state: each run kills itself right after storing the
    next state of IN_FLIGHT (the KCOP_FAILPOINT hook), before acting on it, and the next run resumes from the
    stored status. The upgrade must finish with one backup, one green Deployment (same uid), no rollback,
    and no moment without a ready endpoint. (One upgrade rather than one per state: the same resume from
    every state, a quarter of the suite time.)"""
    old, new = f"{IMAGE}:26.7.0", f"{IMAGE}:26.7.3"
    stages.apply_ready_delay(cluster.kubeconfig, new, BOOT_SECONDS)
    kubectl.apply(manifests.db_secret(namespace))
    kubectl.apply(manifests.db_secret(namespace, "kcdb-app"))
    backups = BackupController(kubectl, namespace, "backups.postgresql.cnpg.io", delay=1.0)
    try:
        upgrade(kubectl, namespace, "crash", old, CNPG)
        wait_for("blue running", lambda: running(kubectl, namespace, "crash", old), timeout=90)
        operator.stop()
        operator.start("--all-namespaces", env={"KCOP_FAILPOINT": f"after-persist:{IN_FLIGHT[0]}"})
        backups.start()
        green_uids: set[str] = set()

        def note_green() -> None:
            g = kubectl.get("deployment", names.deployment("crash", green=True), namespace)
            if g:
                green_uids.add(g["metadata"]["uid"])

        with for_cluster(cluster, namespace) as sampler:
            upgrade(kubectl, namespace, "crash", new, CNPG)

            def killed() -> bool:
                note_green()  # all along: by the later states green has already been renamed away
                return not operator.alive()

            for state, following in zip(IN_FLIGHT, [*IN_FLIGHT[1:], None], strict=True):
                wait_for(f"the operator killing itself in {state}", killed, timeout=120, interval=0.05)
                assert bg_state(kubectl, namespace, "crash") == state  # stored, then killed before acting
                env = {"KCOP_FAILPOINT": f"after-persist:{following}"} if following else None
                operator.start("--all-namespaces", env=env)

            def completed() -> bool:
                note_green()
                return bg_state(kubectl, namespace, "crash") == "Completed" and bool(
                    running(kubectl, namespace, "crash", new)
                )

            wait_for("completed after the last restart", completed, timeout=180, interval=0.2)
        assert_zero_downtime(sampler, "crash")
        assert len(kubectl.list("backups.postgresql.cnpg.io", namespace)) == 1
        assert len(green_uids) == 1, f"green Deployments seen: {green_uids}"
        history = [h["state"] for h in status(kubectl, namespace, "crash")["blueGreen"]["history"]]
        # Only the cut-off action is redone, in place: the upgrade walks the table once, nothing rolls back.
        assert history == IN_FLIGHT, history
    finally:
        backups.stop.set()
        stages.remove(cluster.kubeconfig, new)
        if not operator.alive():
            operator.start("--all-namespaces")
