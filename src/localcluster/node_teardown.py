"""Stopping a real node and undoing what it left on the machine: its pods (drained through the kubelet, so
CNI releases their addresses and network namespaces), its processes (each by its recorded pid), containerd's
shims, mounts under the node's directory, iptables chains, its cgroup and its bridge."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from pathlib import Path

from localcluster import node_cgroups, node_images, node_iptables, process
from localcluster.cluster import Cluster
from localcluster.node_config import NODE_NAME, NodeLayout
from localcluster.node_state import NodeState

DRAIN_TIMEOUT = 30.0
NETNS_DIR = "/var/run/netns/"  # where containerd 1.6 pins pod network namespaces


def _drain(cluster: Cluster) -> None:
    """Lets the kubelet stop every pod itself, so CNI releases their addresses and network namespaces."""
    if cluster.kubectl("cordon", NODE_NAME, check=False).returncode != 0:
        return
    selector = f"spec.nodeName={NODE_NAME}"
    cluster.kubectl(
        "delete", "pods", "-A", "--field-selector", selector, "--grace-period=2", "--wait=false", check=False
    )
    deadline = time.monotonic() + DRAIN_TIMEOUT
    while time.monotonic() < deadline:
        proc = cluster.kubectl("get", "pods", "-A", "--field-selector", selector, "-o", "name", check=False)
        if proc.returncode != 0 or not proc.stdout.strip():
            return
        time.sleep(0.5)


def _kill_leftover_tasks(sock: Path) -> None:
    """Containers the kubelet did not stop (it was gone, or the drain timed out)."""
    proc = node_images.ctr(sock, "tasks", "ls", "-q", timeout=10)
    for task in proc.stdout.split() if proc.returncode == 0 else []:
        node_images.ctr(sock, "tasks", "kill", "-s", "SIGKILL", task, timeout=10)
    for task in proc.stdout.split() if proc.returncode == 0 else []:
        node_images.ctr(sock, "tasks", "rm", "-f", task, timeout=10)


def _our_shims(sock: Path) -> list[int]:
    """containerd's shims outlive it by design; ours are those started with our containerd's socket."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        argv = process.cmdline(int(entry.name))
        if argv and argv[0].endswith("containerd-shim-runc-v2") and str(sock) in argv:
            pids.append(int(entry.name))
    return pids


def _mounts_under(root: Path) -> list[str]:
    prefix = str(root.resolve()) + "/"
    mounts = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            target = line.split()[4].replace("\\040", " ")
            if target.startswith(prefix):
                mounts.append(target)
    return sorted(mounts, key=len, reverse=True)  # deepest first


def _sandbox_netns(sock: Path) -> list[Path]:
    """The network namespaces of the node's pod sandboxes: only CNI DEL, through the kubelet, removes them."""
    listing = node_images.ctr(sock, "containers", "ls", "-q", timeout=10)
    found = []
    for cid in listing.stdout.split() if listing.returncode == 0 else []:
        info = node_images.ctr(sock, "containers", "info", cid, timeout=10)
        with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
            for ns in json.loads(info.stdout)["Spec"]["linux"]["namespaces"]:
                if ns.get("type") == "network" and ns.get("path", "").startswith(NETNS_DIR):
                    found.append(Path(ns["path"]))
    return found


def _remove_netns(paths: list[Path]) -> None:
    for path in paths:
        subprocess.run(["umount", str(path)], capture_output=True, check=False)
        path.unlink(missing_ok=True)


def teardown(cluster: Cluster | None, layout: NodeLayout, state: NodeState) -> None:
    """Stops every process of the node by its pid and undoes what they left on the machine."""
    by_name = {c.name: c for c in state.components}
    kubelet = by_name.get("kubelet")
    if cluster is not None and kubelet is not None and process.alive(kubelet.pid):
        _drain(cluster)
    proxy = by_name.get("kube-proxy")
    if proxy is not None:
        process.terminate(proxy.pid, Path(proxy.executable))
        # Removes the KUBE-* chains it wrote into the machine's iptables.
        subprocess.run(
            [proxy.executable, "--cleanup", f"--config={layout.kube_proxy_config}"],
            capture_output=True,
            timeout=60,
            check=False,
        )
    if kubelet is not None:
        process.terminate(kubelet.pid, Path(kubelet.executable))
    node_iptables.remove_leftover_chains()
    sock = Path(state.socket)
    containerd = by_name.get("containerd")
    netns: list[Path] = []
    if containerd is not None and process.alive(containerd.pid):
        netns = _sandbox_netns(sock)  # of pods the kubelet did not stop (none after a drain)
        _kill_leftover_tasks(sock)
        process.terminate(containerd.pid, Path(containerd.executable))
    for pid in _our_shims(sock):
        process.terminate(pid, Path(process.cmdline(pid)[0]), grace=5)
    for target in _mounts_under(layout.root):
        subprocess.run(["umount", "-l", target], capture_output=True, check=False)
    _remove_netns(netns)
    node_iptables.remove_cni_rules(state.bridge)  # the CNI network is named after its bridge
    busy = node_cgroups.remove(state.cgroup)
    if busy:
        print(
            f"warning: cgroups still in use, left in place: {', '.join(map(str, busy[:5]))}", file=sys.stderr
        )
    if Path(f"/sys/class/net/{state.bridge}").exists():
        subprocess.run(["ip", "link", "delete", state.bridge], capture_output=True, check=False)
    if cluster is not None:
        cluster.kubectl("delete", "node", NODE_NAME, "--ignore-not-found", "--wait=false", check=False)
    layout.state_file.unlink(missing_ok=True)
