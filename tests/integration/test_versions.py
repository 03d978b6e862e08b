"""Versions in status on the real control plane: rotation, resume after SIGKILL, stall and rollback."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from keycloak_operator.kernel import names
from localcluster import manifests, stages
from localcluster.operator_process import OperatorProcess
from tests.integration.support.kubectl import Kubectl, events, wait_for

pytestmark = pytest.mark.integration

KC = f"keycloaks.{names.GROUP}"
IMAGE = "quay.io/keycloak/keycloak"


Counts = dict[str, tuple[Callable[[], list[Any]], int]]  # what -> (read it, how many there must be)


def settle_at_exactly(operator: OperatorProcess, counts: Counts, timeout: float = 60) -> None:
    """Each count reaches its number within `timeout`, then stays exactly there for two resync intervals.

    Events and ControllerRevisions follow the status write that announces them, so they may lag behind it:
    one read could come too early. A resync tick falls in the first interval and queues a full pass of
    every Keycloak; the second leaves that pass time to finish, so a pass that would repeat an Event, a
    ReplicaSet or a revision has run by the end. Fails at the first read that is off the number."""

    def at_least(read: Callable[[], list[Any]], expected: int) -> Callable[[], list[Any] | None]:
        def probe() -> list[Any] | None:
            items = read()
            return items if len(items) >= expected else None

        return probe

    def exact(what: str, items: list[Any], expected: int) -> None:
        seen = [(i["metadata"]["name"], i.get("message", "")) for i in items]
        assert len(items) == expected, f"{len(items)} {what}, expected {expected}: {seen}"

    for what, (read, expected) in counts.items():
        exact(what, wait_for(f"{expected} {what}", at_least(read, expected), timeout), expected)

    window = 2 * operator.resync_seconds
    end = time.monotonic() + window

    def still_exact_at_the_end() -> bool:
        for what, (read, expected) in counts.items():
            exact(what, read(), expected)
        return time.monotonic() >= end

    wait_for(f"the counts to stay put for {window:.0f}s", still_exact_at_the_end, timeout=window + 60)


def slots(kubectl: Kubectl, ns: str, name: str) -> dict:
    return dict(((kubectl.get(KC, name, ns) or {}).get("status") or {}).get("versions") or {})


def running(kubectl: Kubectl, ns: str, name: str, tag: str) -> dict | None:
    kc = kubectl.get(KC, name, ns) or {}
    s = kc.get("status") or {}
    v = s.get("versions") or {}
    ok = (
        s.get("phase") == "Running"
        and v.get("currentVersion", "").startswith(f"{tag}#")
        and not v.get("nextVersion")
    )
    return s if ok else None


def test_image_change_walks_next_current_last(
    cluster, kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    kubectl.apply(manifests.db_secret(namespace))
    kubectl.apply(manifests.keycloak("walk", namespace, image=f"{IMAGE}:26.0.0", replicas=2))
    first = wait_for("26.0.0 current", lambda: running(kubectl, namespace, "walk", "26.0.0"), timeout=90)
    assert first["versions"]["lastVersion"] == ""
    v1 = first["versions"]["currentVersion"]

    # The new pods take 5 s to become Ready, so the rollout lasts long enough for nextVersion to be seen:
    # with kwok's instant readiness a loaded machine could complete it between two polls (a CI failure).
    new = f"{IMAGE}:26.0.1"
    stages.apply_ready_delay(cluster.kubeconfig, new, 5)
    try:
        kubectl.apply(manifests.keycloak("walk", namespace, image=new, replicas=2))
        seen_next = wait_for(
            "26.0.1 as nextVersion", lambda: slots(kubectl, namespace, "walk").get("nextVersion"), timeout=30
        )
        assert seen_next.startswith("26.0.1#")
        done = wait_for("26.0.1 current", lambda: running(kubectl, namespace, "walk", "26.0.1"), timeout=90)
    finally:
        stages.remove(cluster.kubeconfig, new)
    assert done["versions"] == {"nextVersion": "", "currentVersion": seen_next, "lastVersion": v1}

    def rolled_out() -> list[dict]:
        return events(kubectl, namespace, name="walk", reason="VersionRolledOut")

    settle_at_exactly(operator, {"VersionRolledOut events (26.0.0, then 26.0.1)": (rolled_out, 2)})
    describe = kubectl.run("describe", KC, "walk", "-n", namespace).stdout
    assert "Current Version" in describe and "Last Version" in describe and "Next Version" in describe


def test_sigkill_mid_rollout_resumes_and_completes_once(
    cluster, kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    new = f"{IMAGE}:26.0.3"
    stages.apply_ready_delay(cluster.kubeconfig, new, 6)
    try:
        kubectl.apply(manifests.db_secret(namespace))
        kubectl.apply(manifests.keycloak("crash", namespace, image=f"{IMAGE}:26.0.0", replicas=3))
        wait_for("26.0.0 running", lambda: running(kubectl, namespace, "crash", "26.0.0"), timeout=90)
        deployment_uid = kubectl.get("deployment", names.deployment("crash"), namespace)["metadata"]["uid"]

        kubectl.apply(manifests.keycloak("crash", namespace, image=new, replicas=3))
        wait_for(
            "nextVersion written",
            lambda: slots(kubectl, namespace, "crash").get("nextVersion"),
            timeout=30,
            interval=0.05,
        )
        operator.kill()
        assert slots(kubectl, namespace, "crash")["currentVersion"].startswith("26.0.0#")
        time.sleep(2)
        operator.start("--all-namespaces")

        done = wait_for("26.0.3 current", lambda: running(kubectl, namespace, "crash", "26.0.3"), timeout=120)
        assert done["versions"]["lastVersion"].startswith("26.0.0#")
        assert (
            kubectl.get("deployment", names.deployment("crash"), namespace)["metadata"]["uid"]
            == deployment_uid
        )

        def rolled_to_new() -> list[dict]:
            found = events(kubectl, namespace, name="crash", reason="VersionRolledOut")
            return [e for e in found if "26.0.3#" in e["message"]]

        selector = f"{names.LABEL_INSTANCE}=crash"
        settle_at_exactly(
            operator,
            {
                # The old template and the new one: no rollout was started twice.
                "ReplicaSets": (lambda: kubectl.list("replicasets", namespace, selector), 2),
                "VersionRolledOut events for 26.0.3": (rolled_to_new, 1),
                "ControllerRevisions": (lambda: kubectl.list("controllerrevisions", namespace, selector), 2),
            },
        )
    finally:
        stages.remove(cluster.kubeconfig, new)
        if not operator.alive():
            operator.start("--all-namespaces")


def test_stalled_change_is_degraded_and_rollback_restores(
    cluster, kubectl: Kubectl, operator: OperatorProcess, namespace: str
):
    broken = f"{IMAGE}:26.0.9-broken"
    stages.apply_never_ready(cluster.kubeconfig, broken)
    try:
        kubectl.apply(manifests.db_secret(namespace))
        policy = {"upgradePolicy": {"rolloutTimeout": "10s"}}
        kubectl.apply(manifests.keycloak("stall", namespace, image=f"{IMAGE}:26.0.0", replicas=2, **policy))
        good = wait_for("26.0.0 running", lambda: running(kubectl, namespace, "stall", "26.0.0"), timeout=90)
        kubectl.apply(manifests.keycloak("stall", namespace, image=broken, replicas=2, **policy))

        def stalled() -> dict | None:
            s = (kubectl.get(KC, "stall", namespace) or {}).get("status") or {}
            c = next((c for c in s.get("conditions", []) if c["type"] == "Degraded"), {})
            return s if c.get("reason") == "RolloutStalled" and c.get("status") == "True" else None

        try:
            s = wait_for("RolloutStalled", stalled, timeout=90)
        except AssertionError as e:  # once in a clean-clone run: say what the Deployment and its pods were
            raise AssertionError(f"{e}; {_rollout_state(kubectl, namespace, 'stall')}") from e
        assert s["versions"]["nextVersion"].startswith("26.0.9-broken#")
        assert s["versions"]["currentVersion"] == good["versions"]["currentVersion"]

        result = subprocess.run(
            [sys.executable, "-m", "keycloak_operator.cli", "rollback", "stall", "-n", namespace],
            env={"KUBECONFIG": str(cluster.kubeconfig), "PATH": "/usr/bin:/bin"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        assert "26.0.0#" in result.stdout
        back = wait_for(
            "26.0.0 running again", lambda: running(kubectl, namespace, "stall", "26.0.0"), timeout=120
        )
        assert back["readyReplicas"] == 2
        assert kubectl.get(KC, "stall", namespace)["spec"]["image"] == f"{IMAGE}:26.0.0"
        degraded = next(c for c in back["conditions"] if c["type"] == "Degraded")
        assert degraded["status"] == "False"
    finally:
        stages.remove(cluster.kubeconfig, broken)


def _rollout_state(kubectl: Kubectl, ns: str, name: str) -> str:
    """What a stalled-rollout wait saw at its deadline: the Keycloak's status, its Deployment's strategy,
    conditions and replica counts, and each pod's image and readiness (a broken image's pods that came up
    Ready, or a deadline the Deployment controller never flagged, read differently)."""
    kc = (kubectl.get(KC, name, ns) or {}).get("status") or {}
    dep = kubectl.get("deployments.apps", f"{name}-keycloak", ns) or {}
    pods = [
        (
            p["spec"]["containers"][0]["image"],
            p.get("status", {}).get("phase"),
            [c["status"] for c in p.get("status", {}).get("conditions", []) if c["type"] == "Ready"],
        )
        for p in kubectl.list("pods", ns)
    ]
    return (
        f"keycloak status phase={kc.get('phase')} versions={kc.get('versions')} "
        f"conditions={kc.get('conditions')}; deployment strategy={dep.get('spec', {}).get('strategy')} "
        f"progressDeadlineSeconds={dep.get('spec', {}).get('progressDeadlineSeconds')} "
        f"status={dep.get('status')}; pods={pods}"
    )
