"""The real node beside kwok's: real containers with their own IPs, real probes, kube-proxy and cluster DNS.

Part of `make cluster` and of the tests' `real_node` fixture: it needs root and the Debian
packages `make host-packages` installs, and a missing one fails these tests, never skips them."""

from __future__ import annotations

import ipaddress
import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

import localcluster
from localcluster import nodes, realnode
from localcluster.node_config import LABEL_KEY, LABEL_VALUE, NETCHECK_IMAGE, NODE_NAME, Network

pytestmark = pytest.mark.integration

T = TypeVar("T")
APP = "netcheck"
# No proxy from the environment: ClusterIPs are routed by this machine's own iptables.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def wait_for(what: str, probe: Callable[[], T | None], timeout: float, interval: float = 0.25) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def http_get(url: str, timeout: float = 5) -> tuple[int, str]:
    try:
        with _OPENER.open(url, timeout=timeout) as resp:
            return int(resp.status), resp.read().decode().strip()
    except urllib.error.HTTPError as err:
        return int(err.code), err.read().decode().strip()
    except OSError:
        return 0, ""


@pytest.fixture(scope="module")
def lc(cluster: localcluster.Cluster) -> localcluster.Cluster:
    return cluster


@pytest.fixture(scope="module")
def node(real_node: realnode.RealNode) -> realnode.RealNode:
    return real_node


def _json(lc: localcluster.Cluster, *args: str) -> dict[str, Any]:
    return dict(json.loads(lc.kubectl("get", *args, "-o", "json").stdout))


def _pod_spec(image: str, *, on_real_node: bool = True) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "main",
                "image": image,
                "imagePullPolicy": "Never",  # built here: there is no registry
                "ports": [{"containerPort": 8080}],
                "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 1},
            }
        ],
        "terminationGracePeriodSeconds": 2,
    }
    if on_real_node:
        spec["nodeSelector"] = {LABEL_KEY: LABEL_VALUE}
        spec["tolerations"] = [{"key": LABEL_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    return spec


@pytest.fixture(scope="module")
def ns(lc: localcluster.Cluster, node: realnode.RealNode) -> Iterator[str]:
    name = f"t-rn-{uuid.uuid4().hex[:8]}"
    lc.kubectl("create", "namespace", name)
    yield name
    lc.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture(scope="module")
def netcheck(lc: localcluster.Cluster, ns: str) -> dict[str, Any]:
    """Two netcheck pods on the real node behind a ClusterIP Service; returns the Service once both serve."""
    labels = {"app": APP}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": APP, "namespace": ns},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": _pod_spec(NETCHECK_IMAGE)},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": APP, "namespace": ns},
        "spec": {"selector": labels, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    lc.kubectl(
        "apply",
        "-f",
        "-",
        input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [deployment, service]}),
    )
    lc.kubectl("rollout", "status", "-n", ns, f"deployment/{APP}", "--timeout=120s", timeout=150)
    return _json(lc, "service", APP, "-n", ns)


def _pods(lc: localcluster.Cluster, ns: str) -> list[dict[str, Any]]:
    return list(_json(lc, "pods", "-n", ns, "-l", f"app={APP}")["items"])


def test_the_real_node_is_ready_on_containerd_tainted_beside_kwoks(
    lc: localcluster.Cluster, node: realnode.RealNode
) -> None:
    obj = _json(lc, "node", NODE_NAME)
    assert obj["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://")
    assert obj["metadata"]["labels"][LABEL_KEY] == LABEL_VALUE
    assert {"key": LABEL_KEY, "value": LABEL_VALUE, "effect": "NoSchedule"} in obj["spec"]["taints"]
    addresses = {a["type"]: a["address"] for a in obj["status"]["addresses"]}
    assert addresses["InternalIP"] == node.node_ip
    # kwok's nodes are still there and Ready, and the real node is not one of kwok's.
    everything = lc.kubectl("get", "nodes", "-o", "json").stdout
    assert nodes.all_ready(everything, [*nodes.names(), NODE_NAME])
    key, value = nodes.KWOK_SELECTOR.split("=")
    assert obj["metadata"]["labels"].get(key) != value


def test_pods_run_in_real_containers_with_their_own_ips(
    lc: localcluster.Cluster, node: realnode.RealNode, ns: str, netcheck: dict[str, Any]
) -> None:
    subnet = ipaddress.ip_network(Network.for_state_dir(lc.state_dir).subnet)
    pods = _pods(lc, ns)
    ips = {p["status"]["podIP"] for p in pods}
    assert len(ips) == 2
    for pod in pods:
        assert pod["spec"]["nodeName"] == NODE_NAME
        assert pod["status"]["hostIP"] == node.node_ip
        assert ipaddress.ip_address(pod["status"]["podIP"]) in subnet  # CNI's, not kwok's
        (status,) = pod["status"]["containerStatuses"]
        assert status["ready"] and status["containerID"].startswith("containerd://")
        # Served by the container itself, at its own IP, straight from the host over the bridge.
        assert http_get(f"http://{pod['status']['podIP']}:8080/") == (200, pod["metadata"]["name"])
    assert http_get(f"http://{pods[0]['status']['podIP']}:8080/no-such-path")[0] == 404


def test_a_cluster_ip_routes_from_the_host_to_every_pod(
    lc: localcluster.Cluster, ns: str, netcheck: dict[str, Any]
) -> None:
    url = f"http://{netcheck['spec']['clusterIP']}/"
    names = {p["metadata"]["name"] for p in _pods(lc, ns)}
    seen: set[str] = set()

    def both_answered() -> bool:
        status, body = http_get(url, timeout=2)
        if status == 200:
            seen.add(body)
        return seen == names

    # kube-proxy writes a new Service's rules within a second or so of its endpoints appearing.
    wait_for(f"answers from both pods {names} through {url}", both_answered, timeout=30, interval=0.1)


def test_cluster_dns_resolves_services_inside_a_pod(
    lc: localcluster.Cluster, ns: str, netcheck: dict[str, Any]
) -> None:
    via = f"http://{netcheck['spec']['clusterIP']}/resolve?name="
    cluster_ip = netcheck["spec"]["clusterIP"]

    def resolve(name: str) -> tuple[int, str]:
        return http_get(via + urllib.parse.quote(name))

    fqdn = f"{APP}.{ns}.svc.cluster.local"
    assert wait_for(f"{fqdn} resolving in a pod", lambda: resolve(fqdn) == (200, cluster_ip), timeout=30)
    # The pod's search path (from the kubelet's clusterDNS and clusterDomain) resolves short names too.
    assert resolve(APP) == (200, cluster_ip)
    assert resolve("kube-dns.kube-system") == (200, "10.96.0.10")
    status, body = resolve(f"nothing-here.{ns}.svc.cluster.local")
    assert status == 502 and "no such host" in body


def test_a_pod_reaches_a_service_by_name(lc: localcluster.Cluster, ns: str, netcheck: dict[str, Any]) -> None:
    # Pod -> CoreDNS -> ClusterIP -> a pod (possibly itself: hairpin), all inside the node's network.
    target = urllib.parse.quote(f"http://{APP}.{ns}.svc.cluster.local/")
    via = f"http://{netcheck['spec']['clusterIP']}/fetch?url={target}"
    names = {p["metadata"]["name"] for p in _pods(lc, ns)}

    def fetched() -> str | None:
        status, body = http_get(via)
        return body if status == 200 else None

    # "<pod that fetched> fetched: <pod that answered>"
    fetcher, _, answer = wait_for("a pod fetching its Service by name", fetched, timeout=30).partition(
        " fetched: "
    )
    assert {fetcher, answer} <= names


def test_logs_and_exec_reach_the_real_kubelet(
    lc: localcluster.Cluster, ns: str, netcheck: dict[str, Any]
) -> None:
    logs = lc.kubectl("logs", "-n", "kube-system", "deployment/coredns").stdout
    assert "CoreDNS-" in logs
    # netcheck runs as nobody (the image's User), so it may not bind a privileged port: a real process.
    proc = lc.kubectl("exec", "-n", ns, f"deployment/{APP}", "--", "/netcheck", ":80", check=False)
    assert proc.returncode == 1
    assert "permission denied" in proc.stdout + proc.stderr


def test_pods_that_do_not_ask_for_it_stay_on_kwoks_nodes(lc: localcluster.Cluster, ns: str) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "elsewhere", "namespace": ns},
        "spec": _pod_spec(NETCHECK_IMAGE, on_real_node=False),
    }
    lc.kubectl("apply", "-f", "-", input=json.dumps(pod))
    placed = wait_for(
        "the pod scheduled",
        lambda: _json(lc, "pod", "elsewhere", "-n", ns)["spec"].get("nodeName"),
        timeout=30,
    )
    assert placed in nodes.names()


def test_kwok_leaves_the_real_nodes_pods_alone(lc: localcluster.Cluster, ns: str) -> None:
    # An image the node does not have can never start: kwok faking it would show it Running.
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "no-image", "namespace": ns},
        "spec": _pod_spec("kcop.local/not-built-here:1"),
    }
    lc.kubectl("apply", "-f", "-", input=json.dumps(pod))

    def never_pull() -> bool:
        statuses = _json(lc, "pod", "no-image", "-n", ns)["status"].get("containerStatuses") or []
        return bool(statuses) and statuses[0]["state"].get("waiting", {}).get("reason") == "ErrImageNeverPull"

    wait_for("the kubelet's ErrImageNeverPull (after ContainerCreating)", never_pull, timeout=30)
    status = _json(lc, "pod", "no-image", "-n", ns)["status"]
    assert status["phase"] == "Pending"
    assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network(
        Network.for_state_dir(lc.state_dir).subnet
    )
