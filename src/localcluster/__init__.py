"""A real Kubernetes control plane on loopback for tests and the demo: kwok plays the kubelets of its fake
nodes, and one real node (kubelet, containerd, CNI, kube-proxy, CoreDNS) runs real pods that ask for it."""

from localcluster import control_plane, realnode
from localcluster.cluster import Cluster
from localcluster.control_plane import ComponentError, current, status, stop
from localcluster.service_account import service_account_kubeconfig


def ensure_running() -> Cluster:
    """The control plane with kwok's nodes and the real node, reused when healthy, started (and built) if not.
    Raises ComponentError, realnode.PreflightError or build.BuildError naming what failed."""
    cluster = control_plane.ensure_running()
    realnode.ensure_running(cluster)
    return cluster


__all__ = [
    "Cluster",
    "ComponentError",
    "current",
    "ensure_running",
    "service_account_kubeconfig",
    "status",
    "stop",
]
