"""A real node beside kwok's fake ones: containerd + runc + CNI, the kubelet, kube-proxy and CoreDNS.

Pods that tolerate the node's taint and select its label (see node_config) run as real processes in real
containers, with their own IPs, real probes, ClusterIPs routed by kube-proxy (from the host too) and cluster
DNS. Every process is started by this module, recorded by pid in the node's state file and stopped by that
pid; a component that does not come up names itself and shows its log tail.

`python -m localcluster.realnode up|down|status` (on the cluster of KCOP_CLUSTER_DIR, started if needed).
Needs root and Debian's `containerd runc containernetworking-plugins iptables`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from localcluster import (
    build,
    control_plane,
    coredns,
    hostnet,
    http,
    kubeconfig,
    node_cgroups,
    node_images,
    node_state,
    node_teardown,
    pki,
    process,
    versions,
)
from localcluster.cluster import Cluster
from localcluster.control_plane import ComponentError
from localcluster.layout import Layout
from localcluster.node_config import (
    CNI_BIN_DIR,
    NODE_NAME,
    PAUSE_IMAGE,
    KubeletPorts,
    Network,
    NodeLayout,
    ProxyPorts,
    cgroup_root,
    cni_conflist_json,
    containerd_args,
    containerd_toml,
    coredns_image,
    kube_proxy_args,
    kube_proxy_config,
    kubelet_args,
    kubelet_config,
)
from localcluster.node_state import NodeState
from localcluster.state import Component

START_TIMEOUT = 60.0
NODE_READY_TIMEOUT = 120.0
HOST_TOOLS = {
    "/usr/bin/containerd": "containerd",
    "/usr/bin/containerd-shim-runc-v2": "containerd",
    "/usr/bin/ctr": "containerd",
    "/usr/sbin/runc": "runc",
    str(CNI_BIN_DIR / "bridge"): "containernetworking-plugins",
    str(CNI_BIN_DIR / "host-local"): "containernetworking-plugins",
    str(CNI_BIN_DIR / "loopback"): "containernetworking-plugins",
    str(CNI_BIN_DIR / "portmap"): "containernetworking-plugins",
    "/usr/sbin/iptables": "iptables",
}


class PreflightError(RuntimeError):
    """The machine lacks what a real node needs; the message says what to install."""


@dataclass(frozen=True)
class RealNode:
    name: str
    node_ip: str
    layout: NodeLayout
    state: NodeState


def _lock(layout: NodeLayout) -> contextlib.AbstractContextManager[None]:
    return process.exclusive(layout.root.parent / ".realnode.lock")


def preflight() -> None:
    if os.geteuid() != 0:
        raise PreflightError("a real node needs root (containerd, runc, network namespaces, iptables)")
    missing = sorted({pkg for path, pkg in HOST_TOOLS.items() if not Path(path).exists()})
    if missing:
        raise PreflightError(f"missing host packages; run: apt-get install -y {' '.join(missing)}")


class _Starter:
    """Starts one process after another, recording each pid before waiting on it."""

    def __init__(self, cluster_layout: Layout, layout: NodeLayout, state: NodeState) -> None:
        self.logs, self.layout, self.state = cluster_layout, layout, state

    def start(
        self, name: str, argv: list[str], healthy: Callable[[], bool], timeout: float = START_TIMEOUT
    ) -> None:
        log = self.logs.log(name)
        pid = process.spawn(argv, log, cwd=self.layout.root)
        self.state.components.append(Component(name, pid, argv[0], str(log)))
        self.state.save(self.layout)
        _wait(name, log, healthy, timeout, pid)


def _wait(name: str, log: Path, healthy: Callable[[], bool], timeout: float, pid: int | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pid is not None and not process.alive(pid):
            raise ComponentError(name, "the process exited", log)
        if healthy():
            return
        time.sleep(0.3)
    raise ComponentError(name, f"not healthy after {timeout:.0f}s", log)


def _ok(url: str) -> Callable[[], bool]:
    return lambda: http.get(url, timeout=2)[0] == 200


def _write_identity(cluster: Cluster, layout: NodeLayout, ip: str) -> None:
    """Certificates from the cluster CA and a kubeconfig for each identity the node's processes use."""
    ca = pki.at(cluster.layout.pki).ca
    d = layout.pki

    def pair(stem: str) -> pki.CertPair:
        return pki.CertPair(d / f"{stem}.crt", d / f"{stem}.key")

    # system:node:<name> in system:nodes: the Node authorizer and NodeRestriction admit exactly this node.
    identities = {
        "kubelet": pki.issue(ca, pair("kubelet-client"), f"system:node:{NODE_NAME}", "system:nodes"),
        # Bound by the default RBAC policy (system:node-proxier).
        "kube-proxy": pki.issue(ca, pair("kube-proxy"), "system:kube-proxy"),
        "coredns": pki.issue(ca, pair("coredns"), coredns.USER),
    }
    for name, client in identities.items():
        kubeconfig.write_cert(layout.kubeconfig(name), cluster.server, ca.cert, name, client)
    # The kubelet's serving certificate, so the API server could verify it (it does not today: no
    # --kubelet-certificate-authority) and so the kubelet does not write a self-signed one.
    pki.issue(ca, pair("kubelet-serving"), NODE_NAME, server=True, dns=(NODE_NAME,), ips=(ip,))
    # CoreDNS mounts a directory holding only its own kubeconfig.
    dns_dir = layout.root / "coredns"
    dns_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy2(layout.kubeconfig("coredns"), dns_dir / "kubeconfig")


def _node_ready(cluster: Cluster) -> bool:
    proc = cluster.kubectl("get", "node", NODE_NAME, "-o", "json", check=False)
    if proc.returncode != 0:
        return False
    conditions = json.loads(proc.stdout).get("status", {}).get("conditions", [])
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def _containerd_up(sock: Path) -> Callable[[], bool]:
    return lambda: sock.exists() and node_images.ctr(sock, "version", timeout=5).returncode == 0


def _start(cluster: Cluster, bin_dir: Path, layout: NodeLayout) -> RealNode:
    timings: dict[str, float] = {}
    t0 = time.monotonic()
    if layout.root.exists():
        shutil.rmtree(layout.root)
    for d in (layout.root, layout.cni_conf_dir, layout.cni_ipam_dir, layout.pod_logs, layout.kubelet_root):
        d.mkdir(parents=True, exist_ok=True)
    ip, net = hostnet.primary_address(), Network.for_state_dir(cluster.state_dir)
    _write_identity(cluster, layout, ip)
    layout.containerd_config.write_text(containerd_toml(layout, PAUSE_IMAGE))
    (layout.cni_conf_dir / "10-kcop.conflist").write_text(cni_conflist_json(layout, net))
    kubelet_ports = KubeletPorts(api=process.free_port(), healthz=process.free_port())
    serving = (layout.pki / "kubelet-serving.crt", layout.pki / "kubelet-serving.key")
    ca = pki.at(cluster.layout.pki).ca.cert
    cgroup = cgroup_root(cluster.state_dir)
    node_cgroups.create(cgroup)
    layout.kubelet_config.write_text(kubelet_config(layout, kubelet_ports, ip, ca, serving, cgroup))
    proxy_ports = ProxyPorts(healthz=process.free_port(), metrics=process.free_port())
    layout.kube_proxy_config.write_text(kube_proxy_config(layout, proxy_ports, net))
    # The DNS Service first, so its fixed ClusterIP is claimed before anything else could take it.
    cluster.kubectl("apply", "-f", "-", input=json.dumps(coredns.service()))

    state = NodeState(node_ip=ip, bridge=net.bridge, socket=str(layout.containerd_socket), cgroup=cgroup)
    state.save(layout)
    starter = _Starter(cluster.layout, layout, state)
    try:
        starter.start("containerd", containerd_args(layout), _containerd_up(layout.containerd_socket))
        timings["containerd"] = time.monotonic() - t0
        t = time.monotonic()
        _sync_images(cluster, layout, bin_dir)
        timings["images"] = time.monotonic() - t
        t = time.monotonic()
        starter.start(
            "kubelet",
            kubelet_args(bin_dir / "kubelet", layout, ip),
            _ok(f"http://127.0.0.1:{kubelet_ports.healthz}/healthz"),
        )
        _wait("kubelet", cluster.layout.log("kubelet"), lambda: _node_ready(cluster), NODE_READY_TIMEOUT)
        timings["node_ready"] = time.monotonic() - t
        t = time.monotonic()
        starter.start(
            "kube-proxy",
            kube_proxy_args(bin_dir / "kube-proxy", layout),
            _ok(f"http://127.0.0.1:{proxy_ports.healthz}/healthz"),
        )
        timings["kube_proxy"] = time.monotonic() - t
        t = time.monotonic()
        _start_coredns(cluster, layout, ip)
        timings["coredns"] = time.monotonic() - t
    except BaseException:
        node_teardown.teardown(cluster, layout, state)
        raise
    timings["total"] = time.monotonic() - t0
    state.timings = timings
    state.save(layout)
    return RealNode(NODE_NAME, ip, layout, state)


def _sync_images(cluster: Cluster, layout: NodeLayout, bin_dir: Path) -> None:
    try:
        node_images.sync(layout.containerd_socket, bin_dir, versions.node_build_dir() / "images")
    except node_images.ImageImportError as err:
        raise ComponentError("containerd", str(err), cluster.layout.log("containerd")) from err


def _start_coredns(cluster: Cluster, layout: NodeLayout, ip: str) -> None:
    ports = coredns.DnsPorts(health=process.free_port(), ready=process.free_port())
    image = coredns_image(versions.COREDNS_VERSION)
    manifests = coredns.manifest_list(image, ip, str(layout.root / "coredns"), ports)
    cluster.kubectl("apply", "-f", "-", input=manifests)
    proc = cluster.kubectl(
        "rollout",
        "status",
        "-n",
        coredns.NAMESPACE,
        "deployment/coredns",
        "--timeout=120s",
        check=False,
        timeout=150,
    )
    if proc.returncode != 0:
        pods = cluster.kubectl(
            "describe", "pods", "-n", coredns.NAMESPACE, "-l", "k8s-app=kube-dns", check=False
        )
        raise ComponentError(
            "coredns",
            f"Deployment not available: {proc.stderr.strip()}\n{pods.stdout[-3000:]}",
            cluster.layout.log("kubelet"),
        )


def _reusable(cluster: Cluster, bin_dir: Path, layout: NodeLayout) -> RealNode | None:
    state = node_state.load(layout)
    if state is None or [c.name for c in state.components] != ["containerd", "kubelet", "kube-proxy"]:
        return None
    for c in state.components:
        exe = Path(c.executable)
        if c.name != "containerd" and exe.parent != bin_dir:
            return None  # built for another version: replace it
        if not process.alive(c.pid) or not process.is_ours(c.pid, exe):
            return None
    if not _node_ready(cluster):
        return None
    _sync_images(cluster, layout, bin_dir)
    return RealNode(NODE_NAME, state.node_ip, layout, state)


def ensure_running(cluster: Cluster) -> RealNode:
    """Reuses the cluster's healthy real node or starts a fresh one (building its binaries if needed)."""
    preflight()
    bin_dir = build.ensure_node_binaries()
    layout = NodeLayout(cluster.state_dir / "realnode")
    with _lock(layout):
        node = _reusable(cluster, bin_dir, layout)
        if node is not None:
            return node
        state = node_state.load(layout)
        if state is not None:
            node_teardown.teardown(cluster, layout, state)
        return _start(cluster, bin_dir, layout)


def stop(state_dir: Path) -> bool:
    """Stops the real node of the cluster in state_dir by its pids and removes its files; False if none."""
    layout = NodeLayout(state_dir / "realnode")
    if not layout.state_file.exists():
        return False  # checked before locking: the lock file would create the state dir
    with _lock(layout):
        state = node_state.load(layout)
        if state is None:
            return False
        node_teardown.teardown(control_plane.current(), layout, state)
        shutil.rmtree(layout.root, ignore_errors=True)
        return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m localcluster.realnode", description=__doc__)
    parser.add_argument("command", choices=["up", "down", "status"])
    args = parser.parse_args(argv)
    state_dir = versions.cluster_dir()
    if args.command == "down":
        print("real node stopped" if stop(state_dir) else "no real node was running")
        return 0
    if args.command == "status":
        state = node_state.load(NodeLayout(state_dir / "realnode"))
        if state is None:
            print("no real node recorded")
            return 1
        for c in state.components:
            alive = process.alive(c.pid) and process.is_ours(c.pid, Path(c.executable))
            print(f"{c.name:<24} pid {c.pid:<8} {'running' if alive else 'NOT RUNNING'}")
        return 0
    try:
        cluster = control_plane.ensure_running()
        node = ensure_running(cluster)
    except (ComponentError, PreflightError, build.BuildError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"node {node.name} Ready at {node.node_ip} (start took, in seconds:)")
    for step, seconds in node.state.timings.items():
        print(f"  {step:<12} {seconds:6.1f}s")
    print(f"export KUBECONFIG={cluster.kubeconfig}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
