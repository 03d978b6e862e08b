"""The local control plane itself: real scheduling, kwok-played pods, EndpointSlices, Stages and RBAC."""

from __future__ import annotations

import datetime
import json
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

import localcluster
from localcluster import nodes as kwok_nodes
from localcluster import stages

pytestmark = pytest.mark.integration

T = TypeVar("T")
COMPONENTS = {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}


@pytest.fixture(scope="module")
def lc() -> localcluster.Cluster:
    # No skip on purpose: a missing binary or a component that does not start fails every test here.
    return localcluster.ensure_running()


@pytest.fixture
def ns(lc: localcluster.Cluster) -> Iterator[str]:
    name = f"t-lc-{uuid.uuid4().hex[:8]}"
    lc.kubectl("create", "namespace", name)
    wait_for("default ServiceAccount", lambda: _get(lc, "serviceaccount", "default", name), 30)
    yield name
    lc.kubectl("delete", "namespace", name, "--wait=false", check=False)


def wait_for(what: str, probe: Callable[[], T | None], timeout: float, interval: float = 0.25) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def _get(lc: localcluster.Cluster, kind: str, name: str, namespace: str) -> dict[str, Any] | None:
    proc = lc.kubectl("get", kind, name, "-n", namespace, "-o", "json", check=False)
    return json.loads(proc.stdout) if proc.returncode == 0 else None


def _list(lc: localcluster.Cluster, kind: str, namespace: str, selector: str) -> list[dict[str, Any]]:
    proc = lc.kubectl("get", kind, "-n", namespace, "-l", selector, "-o", "json")
    return list(json.loads(proc.stdout)["items"])


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in obj["status"].get("conditions", []) if c["type"] == kind), {})


def _ready(pod: dict[str, Any]) -> bool:
    return _condition(pod, "Ready").get("status") == "True"


def _time(stamp: str) -> datetime.datetime:
    return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _deploy(lc: localcluster.Cluster, ns: str, name: str, image: str, replicas: int) -> None:
    labels = {"app": name}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{"name": "main", "image": image, "ports": [{"containerPort": 8080}]}]
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"selector": labels, "ports": [{"port": 8080, "targetPort": 8080}]},
    }
    items = {"apiVersion": "v1", "kind": "List", "items": [deployment, service]}
    lc.kubectl("apply", "-f", "-", input=json.dumps(items))


def _running_pods(lc: localcluster.Cluster, ns: str, app: str, count: int) -> list[dict[str, Any]] | None:
    pods = _list(lc, "pods", ns, f"app={app}")
    running = [p for p in pods if p["status"].get("phase") == "Running" and p["status"].get("podIP")]
    return running if len(running) == count else None


def _ready_pods(lc: localcluster.Cluster, ns: str, app: str, count: int) -> list[dict[str, Any]] | None:
    pods = _running_pods(lc, ns, app, count)
    return pods if pods and all(_ready(p) for p in pods) else None


def _slice_endpoints(lc: localcluster.Cluster, ns: str, service: str) -> list[dict[str, Any]]:
    slices = _list(lc, "endpointslices", ns, f"kubernetes.io/service-name={service}")
    return [e for s in slices for e in s.get("endpoints") or []]


def test_components_run_and_nodes_are_ready(lc: localcluster.Cluster) -> None:
    rows = localcluster.status()
    assert {name for name, _, _ in rows} == COMPONENTS
    assert all(alive for _, _, alive in rows), rows
    version = json.loads(lc.kubectl("version", "-o", "json").stdout)["serverVersion"]["gitVersion"]
    assert version == "v1.34.4"
    # kwok's nodes only: a real node, when one runs (localcluster.realnode), is tainted on purpose.
    listing = lc.kubectl("get", "nodes", "-l", kwok_nodes.KWOK_SELECTOR, "-o", "json").stdout
    nodes = json.loads(listing)["items"]
    assert len([n for n in nodes if _condition(n, "Ready").get("status") == "True"]) >= 3
    assert all(not n["spec"].get("taints") for n in nodes), "pods must schedule without tolerations"


def test_deployment_pods_become_ready_and_fill_endpointslices(lc: localcluster.Cluster, ns: str) -> None:
    _deploy(lc, ns, "web", "quay.io/keycloak/keycloak:26.0.0", replicas=3)

    pods = wait_for("3 Ready pods", lambda: _ready_pods(lc, ns, "web", 3), 60)
    pod_ips = {p["status"]["podIP"] for p in pods}
    assert len(pod_ips) == 3
    assert len({p["spec"]["nodeName"] for p in pods}) >= 1  # placed by the real scheduler

    def ready_addresses() -> set[str] | None:
        endpoints = _slice_endpoints(lc, ns, "web")
        ready = {a for e in endpoints if e["conditions"].get("ready") for a in e["addresses"]}
        return ready if ready == pod_ips and len(endpoints) == 3 else None

    assert wait_for("3 ready endpoints with the pod IPs", ready_addresses, 30) == pod_ips


def test_ready_delay_stage_holds_readiness_for_the_given_time(lc: localcluster.Cluster, ns: str) -> None:
    image = f"example.invalid/slow-{uuid.uuid4().hex[:6]}:1"
    delay = 6
    stages.apply_ready_delay(lc.kubeconfig, image, delay)
    try:
        _deploy(lc, ns, "slow", image, replicas=2)
        pods = wait_for("2 running pods", lambda: _running_pods(lc, ns, "slow", 2), 30)
        assert not any(_ready(p) for p in pods), "pods of a slow image must start not Ready"
        assert all(_condition(p, "Ready").get("status") == "False" for p in pods)

        for pod in wait_for("pods Ready after the delay", lambda: _ready_pods(lc, ns, "slow", 2), delay + 20):
            started = _time(pod["status"]["startTime"])
            became_ready = _time(_condition(pod, "Ready")["lastTransitionTime"])
            # Timestamps have 1 s resolution; the upper bound allows for kwok's queue on a busy machine.
            assert delay - 1 <= (became_ready - started).total_seconds() <= delay + 5

        def ready_endpoints() -> bool:
            endpoints = _slice_endpoints(lc, ns, "slow")
            return len(endpoints) == 2 and all(e["conditions"].get("ready") for e in endpoints)

        wait_for("2 ready endpoints", ready_endpoints, 30)
    finally:
        stages.remove(lc.kubeconfig, image)


def test_never_ready_stage_keeps_pods_unready(lc: localcluster.Cluster, ns: str) -> None:
    image = f"example.invalid/broken-{uuid.uuid4().hex[:6]}:1"
    stages.apply_never_ready(lc.kubeconfig, image)
    try:
        _deploy(lc, ns, "broken", image, replicas=2)
        wait_for("2 running pods", lambda: _running_pods(lc, ns, "broken", 2), 30)
        time.sleep(5)  # long enough for a default stage to have made them Ready
        pods = _running_pods(lc, ns, "broken", 2)
        assert pods is not None
        assert not any(_ready(p) for p in pods)
        waiting = [p["status"]["containerStatuses"][0]["state"].get("waiting", {}) for p in pods]
        assert all(w.get("reason") == "CrashLoopBackOff" for w in waiting), waiting

        def not_ready_endpoints() -> list[dict[str, Any]] | None:
            endpoints = _slice_endpoints(lc, ns, "broken")
            return endpoints if len(endpoints) == 2 else None

        endpoints = wait_for("2 endpoints", not_ready_endpoints, 30)
        assert not any(e["conditions"].get("ready") for e in endpoints)
    finally:
        stages.remove(lc.kubeconfig, image)


def test_other_images_keep_the_default_stages(lc: localcluster.Cluster, ns: str) -> None:
    broken = f"example.invalid/broken-{uuid.uuid4().hex[:6]}:1"
    stages.apply_never_ready(lc.kubeconfig, broken)
    try:
        _deploy(lc, ns, "fine", "example.invalid/fine:1", replicas=1)
        wait_for("a Ready pod of another image", lambda: _ready_pods(lc, ns, "fine", 1), 30)
    finally:
        stages.remove(lc.kubeconfig, broken)


def test_metrics_are_read_as_admin(lc: localcluster.Cluster) -> None:
    assert "apiserver_request_total{" in lc.metrics()


def test_service_account_kubeconfig_has_only_its_rbac(lc: localcluster.Cluster, ns: str) -> None:
    lc.kubectl("create", "serviceaccount", "reader", "-n", ns)
    path = localcluster.service_account_kubeconfig(lc, ns, "reader")
    kubectl = str(lc.bin_dir / "kubectl")

    def as_sa(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [kubectl, f"--kubeconfig={path}", *args], capture_output=True, text=True, check=False
        )

    whoami = json.loads(as_sa("auth", "whoami", "-o", "json").stdout)
    assert whoami["status"]["userInfo"]["username"] == f"system:serviceaccount:{ns}:reader"
    assert as_sa("get", "pods").returncode != 0  # namespace from the kubeconfig; no RBAC yet
    subject = f"--serviceaccount={ns}:reader"
    lc.kubectl("create", "rolebinding", "reader-view", "-n", ns, "--clusterrole=view", subject)
    wait_for("view access", lambda: as_sa("get", "pods").returncode == 0, 10)
    assert as_sa("get", "pods", "-n", "kube-system").returncode != 0
